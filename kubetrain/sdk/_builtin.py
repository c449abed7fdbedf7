"""``BuiltinTrainer``: a trainer whose training program ships with its runtime, configured
rather than written. Its ``config`` says which: :class:`TorchTuneConfig` for upstream's
``torchtune-*`` runtimes (``tune run`` with torchtune's recipes), or kubetrain's ``TRLConfig``
for ``trl-sft`` (:mod:`kubetrain.sdk._trl`).

A :class:`TorchTuneConfig` becomes the TrainJob's ``spec.trainer`` exactly as the Kubeflow SDK
(``kubeflow`` 0.5, ``backends/kubernetes/utils.py``: ``get_trainer_cr_from_builtin_trainer``)
writes it, so the TorchTune plugin rewrites it the same way:

- ``command: [tune, run]``; the plugin appends the recipe, ``--config`` and the runtime's
  immutable settings;
- ``args``: torchtune config overrides, in the Kubeflow SDK's order: ``dtype``, ``batch_size``,
  ``epochs``, ``loss``; the dataset's path under ``/workspace/dataset`` when the dataset
  initializer is a Hugging Face one (``dataset.data_files=`` for a path below the repository
  with a dot in it, else ``dataset.data_dir=``); the ``LoraConfig`` fields that are set
  (``model.apply_lora_to_mlp=True``, ``model.lora_rank=8``, ..., ``model.quantize_base``,
  ``model.use_dora``) and ``model.lora_attn_modules=[q_proj,v_proj,output_proj]``; then the
  instruct dataset (``dataset=torchtune.datasets.instruct_dataset``, ``dataset.source``,
  ``dataset.split``, ``dataset.train_on_input``, ``dataset.new_system_prompt``,
  ``dataset.column_map`` written as Python writes a dict);
- ``numNodes`` and ``resourcesPerNode`` (requests and limits alike, Kubeflow's short names).

kubetrain's additions come last in :class:`TorchTuneConfig`, with defaults that change nothing:
``num_proc_per_node`` (the TrainJob's ``numProcPerNode``: ``1`` makes the plugin pick a
single-device recipe, the way to fine-tune on one CPU process) and ``args`` (more config
overrides, after the SDK's, so that a later one wins: ``device=cpu``, a smaller model). An
``args`` entry that sets what the runtime manages (``output_dir``, ``tokenizer.path``, ...) is
refused here, naming it, as the plugin would refuse the TrainJob.

Must not: do I/O; checks that need no server fail here, naming the field.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlparse

from kubetrain.sdk import _fields, _runtimes, _trl, _types
from kubetrain.sdk._errors import InvalidTrainer

TORCHTUNE: Final = "torchtune"  # the runtimes' trainer.kubeflow.org/framework label
TUNE_RUN: Final = ("tune", "run")
DATASET_PATH: Final = "/workspace/dataset"
INSTRUCT_DATASET: Final = "torchtune.datasets.instruct_dataset"
# what the runtime's node command sets and a TrainJob may not (the TorchTune plugin's list)
IMMUTABLE: Final = (
    "output_dir",
    "tokenizer.path",
    "checkpointer.checkpoint_dir",
    "tokenizer.merges_file",
)
LORA_FIELDS: Final = (
    ("apply_lora_to_mlp", "model.apply_lora_to_mlp"),
    ("apply_lora_to_output", "model.apply_lora_to_output"),
    ("lora_rank", "model.lora_rank"),
    ("lora_alpha", "model.lora_alpha"),
    ("lora_dropout", "model.lora_dropout"),
    ("quantize_base", "model.quantize_base"),
    ("use_dora", "model.use_dora"),
)


class DataType(str, enum.Enum):
    """The dtype of the model and optimizer parameters."""

    BF16 = "bf16"
    FP32 = "fp32"


class Loss(str, enum.Enum):
    CEWithChunkedOutputLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss"


class DataFormat(str, enum.Enum):
    """The file type of an instruct dataset (``dataset.source``)."""

    JSON = "json"
    CSV = "csv"
    PARQUET = "parquet"
    ARROW = "arrow"
    TEXT = "text"
    XML = "xml"


@dataclass
class LoraConfig:
    """LoRA, QLoRA (``quantize_base``) or DoRA (``use_dora``); ``None`` keeps the recipe
    config's value."""

    apply_lora_to_mlp: bool | None = None
    apply_lora_to_output: bool | None = None
    lora_attn_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "v_proj", "output_proj"]
    )
    lora_rank: int | None = None
    lora_alpha: int | None = None
    lora_dropout: float | None = None
    quantize_base: bool | None = None
    use_dora: bool | None = None


@dataclass
class TorchTuneInstructDataset:
    """Records of a prompt and a response in files of the dataset initializer's volume
    (torchtune's ``instruct_dataset``); ``column_map`` names the ``input`` and ``output``
    columns."""

    source: DataFormat | None = None
    split: str | None = None
    train_on_input: bool | None = None
    new_system_prompt: str | None = None
    column_map: dict[str, str] | None = None


@dataclass
class TorchTuneConfig:
    """Fine-tuning with a ``torchtune-*`` runtime; ``None`` keeps the recipe config's value."""

    dtype: DataType | None = None
    batch_size: int | None = None
    epochs: int | None = None
    loss: Loss | None = None
    num_nodes: int | None = None
    peft_config: LoraConfig | None = None
    dataset_preprocess_config: TorchTuneInstructDataset | None = None
    resources_per_node: dict[str, Any] | None = None
    # kubetrain: processes per node (1: a single-device recipe), and more config overrides
    num_proc_per_node: int | str | None = None
    args: list[str] | None = None


@dataclass
class BuiltinTrainer:
    """Fine-tune with the runtime's own program: ``config`` is a :class:`TorchTuneConfig`
    (``torchtune-*`` runtimes) or a ``TRLConfig`` (``trl-sft``)."""

    config: TorchTuneConfig | _trl.TRLConfig


def _enum(value: Any, kind: type[enum.Enum], where: str) -> str:
    """The value of ``kind`` that ``value`` is or names (the Kubeflow SDK's enums too)."""
    text = getattr(value, "value", value)
    accepted = [str(m.value) for m in kind]
    if text not in accepted:
        raise InvalidTrainer(f"{where}: {value!r}; accepted: {', '.join(accepted)}")
    return str(text)


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidTrainer(f"{where}: {value!r}; accepted: a whole number, 1 or more")
    return value


def dataset_path_arg(initializer: _types.Initializer | None) -> list[str]:
    """``dataset.data_files=`` / ``dataset.data_dir=`` under /workspace/dataset for a Hugging
    Face dataset initializer, as the Kubeflow SDK derives it from the URI: the path below the
    repository (``hf://org/name/<path>``), a file when it has a dot in it."""
    dataset = initializer.dataset if initializer is not None else None
    if not isinstance(dataset, _types.HuggingFaceDatasetInitializer):
        return []
    uri = dataset.storage_uri
    parsed = urlparse(uri if uri.startswith("hf://") else "hf://" + uri)
    parts = parsed.path.strip("/").split("/")
    relative = "/".join(parts[1:]) if len(parts) > 1 else "."
    if relative != "." and "." in relative:
        return [f"dataset.data_files={os.path.join(DATASET_PATH, relative)}"]
    return [f"dataset.data_dir={os.path.join(DATASET_PATH, relative)}"]


def lora_args(peft: Any) -> list[str]:
    if not isinstance(peft, LoraConfig):
        raise InvalidTrainer(f"TorchTuneConfig.peft_config: {peft!r}; accepted: a LoraConfig")
    args = [
        f"{name}={getattr(peft, attr)}"
        for attr, name in LORA_FIELDS
        if getattr(peft, attr) is not None
    ]
    if peft.lora_attn_modules:
        modules = [str(m) for m in peft.lora_attn_modules]
        args.append(f"model.lora_attn_modules=[{','.join(modules)}]")
    return args


def instruct_args(dataset: Any) -> list[str]:
    where = "TorchTuneConfig.dataset_preprocess_config"
    if not isinstance(dataset, TorchTuneInstructDataset):
        raise InvalidTrainer(f"{where}: {dataset!r}; accepted: a TorchTuneInstructDataset")
    args = [f"dataset={INSTRUCT_DATASET}"]
    if dataset.source:
        args.append(f"dataset.source={_enum(dataset.source, DataFormat, f'{where}.source')}")
    if dataset.split:
        args.append(f"dataset.split={dataset.split}")
    if dataset.train_on_input is not None:
        args.append(f"dataset.train_on_input={dataset.train_on_input}")
    if dataset.new_system_prompt:
        args.append(f"dataset.new_system_prompt={dataset.new_system_prompt}")
    if dataset.column_map:
        args.append(f"dataset.column_map={dataset.column_map}")
    return args


def torchtune_args(config: TorchTuneConfig, initializer: _types.Initializer | None) -> list[str]:
    """``spec.trainer.args`` for ``config``, in the Kubeflow SDK's order, then kubetrain's."""
    args = []
    if config.dtype:
        args.append(f"dtype={_enum(config.dtype, DataType, 'TorchTuneConfig.dtype')}")
    if config.batch_size:
        args.append(f"batch_size={_count(config.batch_size, 'TorchTuneConfig.batch_size')}")
    if config.epochs:
        args.append(f"epochs={_count(config.epochs, 'TorchTuneConfig.epochs')}")
    if config.loss:
        args.append(f"loss={_enum(config.loss, Loss, 'TorchTuneConfig.loss')}")
    args += dataset_path_arg(initializer)
    if config.peft_config:
        args += lora_args(config.peft_config)
    if config.dataset_preprocess_config:
        args += instruct_args(config.dataset_preprocess_config)
    for index, arg in enumerate(config.args or []):
        where = f"TorchTuneConfig.args[{index}]"
        if not isinstance(arg, str) or "=" not in arg:
            raise InvalidTrainer(f"{where}: {arg!r}; accepted: a config override key=value")
        key = arg.split("=", 1)[0]
        if key in IMMUTABLE:
            raise InvalidTrainer(
                f"{where}: {arg!r} sets {key}, which the runtime manages; accepted: any "
                f"override but {', '.join(IMMUTABLE)}"
            )
        args.append(arg)
    return args


def trainer_spec(
    trainer: BuiltinTrainer,
    runtime: Mapping[str, Any],
    initializer: _types.Initializer | None = None,
) -> dict[str, Any]:
    """``spec.trainer`` for a builtin trainer under ``runtime`` (the runtime object)."""
    config = trainer.config
    if isinstance(config, _trl.TRLConfig):
        return _trl.trainer_spec(config, runtime)
    if not isinstance(config, TorchTuneConfig):
        raise InvalidTrainer(
            f"BuiltinTrainer.config: {config!r}; accepted: a TorchTuneConfig or a TRLConfig"
        )
    framework = _runtimes.framework_of(runtime)
    if framework != TORCHTUNE:
        name = (runtime.get("metadata") or {}).get("name")
        raise InvalidTrainer(
            f"BuiltinTrainer(config=TorchTuneConfig(...)): runtime {name} is a "
            f"{framework or 'plain'} runtime; accepted: a torchtune runtime "
            "(torchtune-llama3.2-1b, torchtune-llama3.2-3b, torchtune-qwen2.5-1.5b, "
            "torchtune-llama3.3-70b)"
        )
    block: dict[str, Any] = {"command": list(TUNE_RUN), "args": torchtune_args(config, initializer)}
    if config.num_nodes:
        block["numNodes"] = _count(config.num_nodes, "TorchTuneConfig.num_nodes")
    if config.num_proc_per_node is not None:
        block["numProcPerNode"] = _fields.procs(config.num_proc_per_node, "TorchTuneConfig")
    if config.resources_per_node:
        resources = config.resources_per_node
        block["resourcesPerNode"] = _fields.resources(resources, "TorchTuneConfig")
    return block
