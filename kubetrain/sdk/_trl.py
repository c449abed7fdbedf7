"""kubetrain's second builtin trainer: supervised fine-tuning with Hugging Face TRL and PEFT
LoRA, on the ``trl-sft`` runtime (``BuiltinTrainer(config=TRLConfig(...))``).

Upstream's only builtin trainer is TorchTune's; this one goes through the same TrainJob, the
same dataset and model initializers and the same progress reports, with TRL's
``SFTTrainer`` (:mod:`kubetrain.builtin.trl_sft`) in the trainer pods. A :class:`TRLConfig`
becomes the TrainJob's ``spec.trainer``: ``numNodes`` and ``resourcesPerNode``, and ``args``
that are TRL's own command-line flags, after the runtime's (so the runtime's LoRA defaults
hold unless the config says otherwise; a later flag wins).

The LoRA settings are read from ``peft_config`` by the names of the Kubeflow SDK's
``LoraConfig`` (``lora_rank``, ``lora_alpha``, ``lora_dropout``, ``lora_attn_modules``,
``apply_lora_to_mlp``, ``use_dora``, ``quantize_base``), so the object a TorchTune config takes
works here too; TorchTune's module names become Hugging Face Llama's (``output_proj`` is
``o_proj``), and ``quantize_base`` asks for QLoRA (4-bit base weights, which need a GPU with
bitsandbytes). The dataset's columns come from ``dataset_preprocess_config`` by the names of
``TorchTuneInstructDataset`` (``column_map``, ``new_system_prompt``, ``split``).

Must not: do I/O; checks that need no server fail here, naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubetrain.sdk import _fields, _runtimes
from kubetrain.sdk._errors import InvalidTrainer

RUNTIME: Final = "trl-sft"
FRAMEWORK: Final = "trl"
# TorchTune's attention module names (the Kubeflow SDK's LoraConfig) as Hugging Face Llama's.
MODULES: Final = {
    "q_proj": "q_proj",
    "k_proj": "k_proj",
    "v_proj": "v_proj",
    "output_proj": "o_proj",
}
MLP_MODULES: Final = ("gate_proj", "up_proj", "down_proj")
DTYPES: Final = {"bf16": ("true", "bfloat16"), "fp32": ("false", "float32")}
COLUMNS: Final = ("instruction", "input", "output")


@dataclass
class TRLConfig:
    """kubetrain: supervised fine-tuning with TRL's SFTTrainer and PEFT LoRA.

    ``None`` keeps the runtime's (or TRL's) value. ``args`` are more of TRL's flags, given
    last (``["--gradient_accumulation_steps=4"]``)."""

    dtype: Any = None  # "bf16" or "fp32" (or the Kubeflow SDK's DataType)
    batch_size: int | None = None  # per process
    epochs: int | None = None
    learning_rate: float | None = None
    max_steps: int | None = None
    max_length: int | None = None  # tokens per record
    num_nodes: int | None = None
    peft_config: Any = None  # a LoraConfig (the Kubeflow SDK's names)
    dataset_preprocess_config: Any = None  # a TorchTuneInstructDataset's names
    resources_per_node: dict[str, Any] | None = None
    args: list[str] = field(default_factory=list)


def _number(value: Any, where: str, kind: type, *, positive: bool = True) -> str:
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if ok and kind is float:
        ok = math.isfinite(value)
    if not ok or (positive and value <= 0) or (not positive and not 0 <= value < 1):
        accepted = "a number above 0" if positive else "a number from 0 up to 1"
        if kind is int:
            accepted = "a whole number, 1 or more"
        raise InvalidTrainer(f"TRLConfig.{where}: {value!r}; accepted: {accepted}")
    return str(value)


def _dtype(value: Any) -> list[str]:
    text = getattr(value, "value", value)
    if text not in DTYPES:
        raise InvalidTrainer(f"TRLConfig.dtype: {value!r}; accepted: {', '.join(DTYPES)}")
    bf16, dtype = DTYPES[text]
    return [f"--bf16={bf16}", f"--dtype={dtype}"]


def lora_args(peft: Any) -> list[str]:
    """TRL's ModelConfig flags for a LoraConfig (the Kubeflow SDK's field names)."""
    args = ["--use_peft=true"]
    if getattr(peft, "lora_rank", None) is not None:
        args.append(f"--lora_r={_number(peft.lora_rank, 'peft_config.lora_rank', int)}")
    if getattr(peft, "lora_alpha", None) is not None:
        args.append(f"--lora_alpha={_number(peft.lora_alpha, 'peft_config.lora_alpha', int)}")
    if getattr(peft, "lora_dropout", None) is not None:
        dropout = peft.lora_dropout
        dropout = (
            float(dropout)
            if isinstance(dropout, int) and not isinstance(dropout, bool)
            else dropout
        )
        args.append(
            f"--lora_dropout={_number(dropout, 'peft_config.lora_dropout', float, positive=False)}"
        )
    modules = getattr(peft, "lora_attn_modules", None)
    if modules is not None:
        if isinstance(modules, str) or not all(isinstance(m, str) for m in modules):
            raise InvalidTrainer(
                f"TRLConfig.peft_config.lora_attn_modules: {modules!r}; accepted: a list of "
                + ", ".join(MODULES)
            )
        unknown = [m for m in modules if m not in MODULES and m not in MODULES.values()]
        if unknown:
            raise InvalidTrainer(
                f"TRLConfig.peft_config.lora_attn_modules: {unknown[0]!r}; accepted: "
                + ", ".join(MODULES)
            )
        names = [MODULES.get(m, m) for m in modules]
        if getattr(peft, "apply_lora_to_mlp", None):
            names += MLP_MODULES
        args += ["--lora_target_modules", *dict.fromkeys(names)]
    if getattr(peft, "use_dora", None):
        args.append("--use_dora=true")
    if getattr(peft, "quantize_base", None):
        args.append("--load_in_4bit=true")
    return args


def dataset_args(preprocess: Any) -> list[str]:
    """kubetrain's dataset flags for a TorchTuneInstructDataset's ``column_map``,
    ``new_system_prompt`` and ``split``."""
    args = []
    split = getattr(preprocess, "split", None)
    if split is not None:
        if not isinstance(split, str) or not split:
            raise InvalidTrainer(f"TRLConfig.dataset_preprocess_config.split: {split!r}")
        args.append(f"--dataset_split={split}")
    column_map = getattr(preprocess, "column_map", None) or {}
    if not isinstance(column_map, Mapping):
        raise InvalidTrainer(
            f"TRLConfig.dataset_preprocess_config.column_map: {column_map!r}; accepted: a dict "
            f"from {', '.join(COLUMNS)} to the dataset's column names"
        )
    for key, column in column_map.items():
        if key not in COLUMNS or not isinstance(column, str) or not column:
            raise InvalidTrainer(
                f"TRLConfig.dataset_preprocess_config.column_map[{key!r}]: {column!r}; accepted: "
                f"keys {', '.join(COLUMNS)}, each naming a column"
            )
        args.append(f"--{key}_column={column}")
    prompt = getattr(preprocess, "new_system_prompt", None)
    if prompt is not None:
        if not isinstance(prompt, str):
            raise InvalidTrainer(
                f"TRLConfig.dataset_preprocess_config.new_system_prompt: {prompt!r}"
            )
        args.append(f"--system_prompt={prompt}")
    return args


def trl_args(config: TRLConfig) -> list[str]:
    """TRL's flags for ``config`` (after the runtime's)."""
    args: list[str] = []
    if config.dtype is not None:
        args += _dtype(config.dtype)
    if config.batch_size is not None:
        args.append(
            f"--per_device_train_batch_size={_number(config.batch_size, 'batch_size', int)}"
        )
    if config.epochs is not None:
        args.append(f"--num_train_epochs={_number(config.epochs, 'epochs', int)}")
    if config.learning_rate is not None:
        rate = config.learning_rate
        rate = float(rate) if isinstance(rate, int) and not isinstance(rate, bool) else rate
        args.append(f"--learning_rate={_number(rate, 'learning_rate', float)}")
    if config.max_steps is not None:
        args.append(f"--max_steps={_number(config.max_steps, 'max_steps', int)}")
    if config.max_length is not None:
        args.append(f"--max_length={_number(config.max_length, 'max_length', int)}")
    if config.peft_config is not None:
        args += lora_args(config.peft_config)
    if config.dataset_preprocess_config is not None:
        args += dataset_args(config.dataset_preprocess_config)
    if isinstance(config.args, str) or not all(isinstance(a, str) for a in config.args):
        raise InvalidTrainer(f"TRLConfig.args: {config.args!r}; accepted: a list of strings")
    return args + list(config.args)


def trainer_spec(config: TRLConfig, runtime: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.trainer`` for ``config`` under ``runtime`` (``trl-sft`` or one like it)."""
    if not isinstance(config, TRLConfig):
        raise InvalidTrainer(f"BuiltinTrainer.config: {config!r}; accepted: TRLConfig")
    framework = _runtimes.framework_of(runtime) or None
    if framework != FRAMEWORK:
        name = (runtime.get("metadata") or {}).get("name")
        raise InvalidTrainer(
            f"BuiltinTrainer(config=TRLConfig(...)): runtime {name!r} is of framework "
            f"{framework!r}; accepted: a runtime labelled {_runtimes.FRAMEWORK_LABEL}: "
            f"{FRAMEWORK} ({RUNTIME})"
        )
    container = _runtimes.trainer_container(runtime) or {}
    defaults = [a for a in container.get("args") or [] if isinstance(a, str)]
    block: dict[str, Any] = {"args": defaults + trl_args(config)}
    if config.num_nodes is not None:
        block["numNodes"] = int(_number(config.num_nodes, "num_nodes", int))
    if config.resources_per_node:
        block["resourcesPerNode"] = _fields.resources(config.resources_per_node, "TRLConfig")
    return block
