"""torchtune: the command rewriting and the recipe checks for ``command: [tune, run]`` TrainJobs.

A TrainJob whose trainer command is exactly ``tune run`` gets, appended to that command:

- ``--rdzv_endpoint=<job>-node-0-0.<job>:29500`` (the job's own port on a shared host network)
  when the job spans several nodes or devices
  (more than one node; an integer ``numProcPerNode`` above 1; a word with more than one GPU);
- the recipe and ``--config <model><suffix>`` chosen from the node count, processes per node,
  GPUs per node and the LoRA/QLoRA settings in the args (upstream's ``getRecipeAndConfig``);
- the runtime's immutable settings (``output_dir=``, ``tokenizer.path=``,
  ``checkpointer.checkpoint_dir=``, ``tokenizer.merges_file=``) from its ``node`` command.

The model comes from the runtime's name ``torchtune-<family>-<size>`` (``torchtune-llama3.2-1b``
→ ``llama3_2/1B``). The rewritten command lives only in the Info; the TrainJob is not changed.

Only a TrainJob whose command is exactly ``tune run`` is checked (:func:`validate`), as upstream:
one that gives its own recipe and config (``tune run --rdzv_endpoint=... lora_finetune_distributed
--config llama3_2/1B_lora ...``) has chosen them itself, so the recipe table does not apply to
it, nor do the limits that follow from the table (one node for the small models). QLoRA and
DoRA count as on only when their argument says ``True`` (``model.quantize_base=False`` is not
QLoRA), as upstream's ``isBoolArgEnabled``. Messages are upstream's (``torchtune.go``). Pure.
"""

from __future__ import annotations

from typing import Any, Final

from kubetrain import api
from kubetrain.frameworks.trainjob import node, torch
from kubetrain.operator.trainjob import runtime_info

RDZV_ENDPOINT_ARG: Final = "--rdzv_endpoint"
CONFIG_ARG: Final = "--config"
FULL_SINGLE_DEVICE: Final = ("full_finetune_single_device", "_full_single_device")
LORA_SINGLE_DEVICE: Final = ("lora_finetune_single_device", "_lora_single_device")
QLORA_SINGLE_DEVICE: Final = ("lora_finetune_single_device", "_qlora_single_device")
LORA_DISTRIBUTED: Final = ("lora_finetune_distributed", "_lora")
QLORA_DISTRIBUTED: Final = ("lora_finetune_distributed", "_qlora")
FULL_MULTI_NODE: Final = ("full_finetune_distributed", "_full_multinode")
FULL_DISTRIBUTED: Final = ("full_finetune_distributed", "_full")
LORA_ATTN_MODULES: Final = "model.lora_attn_modules"
QUANTIZE_BASE: Final = "model.quantize_base"
USE_DORA: Final = "model.use_dora"
IMMUTABLE_CONFIGS: Final = frozenset(
    {"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"}
)
LLAMA3_2_1B: Final = "llama3_2/1B"
LLAMA3_2_3B: Final = "llama3_2/3B"
LLAMA3_3_70B: Final = "llama3_3/70B"
QWEN2_5_1_5B: Final = "qwen2_5/1.5B"
SUPPORTED_MODELS: Final = (LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B)


def model(runtime_name: str) -> str:
    """``torchtune-llama3.2-1b`` → ``llama3_2/1B``; '' for any other shape of name."""
    fields = runtime_name.split("-")
    if len(fields) != 3:
        return ""
    return f"{fields[1].replace('.', '_')}/{fields[2].upper()}"


def _args(info: runtime_info.RuntimeInfo) -> list[str]:
    return list(info.trainer.args or []) if info.trainer is not None else []


def uses_lora(args: list[str]) -> bool:
    return any(LORA_ATTN_MODULES in arg for arg in args)


def _enabled(args: list[str], item: str) -> bool:
    """Whether an argument ``<key>=<value>`` whose key contains ``item`` says ``true``."""
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and item in key and value.strip().lower() == "true":
            return True
    return False


def uses_qlora(args: list[str]) -> bool:
    """``model.quantize_base=True`` without ``model.use_dora=True`` (DoRA wins)."""
    return not _enabled(args, USE_DORA) and _enabled(args, QUANTIZE_BASE)


def num_proc_per_node(info: runtime_info.RuntimeInfo) -> int | str:
    """The TrainJob's value, else the runtime's torch value, else ``auto`` (unresolved)."""
    value: int | str = torch.AUTO
    policy = info.ml_policy.torch if info.ml_policy is not None else None
    if policy is not None and policy.num_proc_per_node is not None:
        value = policy.num_proc_per_node
    if info.trainer is not None and info.trainer.num_proc_per_node is not None:
        value = info.trainer.num_proc_per_node
    return value


def num_nodes(info: runtime_info.RuntimeInfo) -> int:
    pod_set = info.pod_set_by_ancestor(api.TRAINER_ANCESTOR)
    return pod_set.count if pod_set is not None else 1


def recipe_and_config(info: runtime_info.RuntimeInfo) -> tuple[str, str]:
    nodes, nproc = num_nodes(info), num_proc_per_node(info)
    gpus = node.gpus_per_node(info.job, info.runtime)
    args = _args(info)
    choice = FULL_DISTRIBUTED
    if nodes == 1 and (nproc == 1 or gpus == 1):
        if uses_qlora(args):
            choice = QLORA_SINGLE_DEVICE
        elif uses_lora(args):
            choice = LORA_SINGLE_DEVICE
        else:
            choice = FULL_SINGLE_DEVICE
    elif nodes == 1 and uses_qlora(args):
        choice = QLORA_DISTRIBUTED
    elif nodes == 1 and uses_lora(args):
        choice = LORA_DISTRIBUTED
    elif nodes > 1:
        choice = FULL_MULTI_NODE
    recipe, suffix = choice
    return recipe, model(_runtime_name(info)) + suffix


def _runtime_name(info: runtime_info.RuntimeInfo) -> str:
    ref = info.job.spec.runtime_ref if info.job.spec is not None else None
    return (ref.name or "") if ref is not None else ""


def _runtime_overrides(info: runtime_info.RuntimeInfo) -> list[str]:
    overrides: list[str] = []
    for rjob in info.replicated_jobs():
        if node.ancestor(rjob) != api.TRAINER_ANCESTOR:
            continue
        for container in runtime_info.containers(rjob):
            if container.get("name") != api.NODE:
                continue
            for item in container.get("command") or []:
                if isinstance(item, str) and item.split("=")[0] in IMMUTABLE_CONFIGS:
                    overrides.append(item)
    return overrides


def appended(info: runtime_info.RuntimeInfo) -> list[str]:
    """What :func:`rewrite_command` appends to ``tune run``: the rendezvous (for several nodes
    or devices), the recipe, ``--config`` and the runtime's immutable settings."""
    nodes, nproc = num_nodes(info), num_proc_per_node(info)
    gpus = node.gpus_per_node(info.job, info.runtime)
    extra: list[str] = []
    if nodes > 1 or (isinstance(nproc, int) and nproc > 1) or (isinstance(nproc, str) and gpus > 1):
        extra.append(f"{RDZV_ENDPOINT_ARG}={node.master_host(info.job)}:{info.port}")
    recipe, config = recipe_and_config(info)
    extra += [recipe, CONFIG_ARG, config]
    extra += _runtime_overrides(info)
    return extra


def rewrite_command(info: runtime_info.RuntimeInfo) -> None:
    """Append the rendezvous, recipe, config and runtime settings to ``tune run``."""
    trainer = info.trainer
    if trainer is None:
        return
    trainer.command = [*(trainer.command or []), *appended(info)]


def rewritten(info: runtime_info.RuntimeInfo, command: list[str]) -> bool:
    """Whether ``command`` is ``tune run`` as :func:`rewrite_command` left it, that is whether
    the TrainJob said exactly ``tune run`` (checked after the rewrite, which changed it)."""
    return command == [*torch.TORCHTUNE_ENTRYPOINT, *appended(info)]


def validate(info: runtime_info.RuntimeInfo) -> list[api.FieldError]:
    """Upstream's torchtune checks: the model, the node count, QLoRA's constraints, LoRA on one
    node only, and no immutable setting in the args."""
    trainer = info.trainer
    if trainer is None:
        return []
    name = _runtime_name(info)
    chosen = model(name)
    errors: list[api.FieldError] = []
    invalid = api.ErrorType.INVALID
    if chosen not in SUPPORTED_MODELS:
        detail = f"must have a supported pretrained model, invalid model configured: {chosen}"
        errors.append(api.FieldError(invalid, "spec.runtimeRef.name", detail, name))
    nodes = num_nodes(info)
    if nodes > 1 and chosen != LLAMA3_3_70B:
        errors.append(
            api.FieldError(invalid, "spec.trainer.numNodes", f"must be 1 for {chosen} model", nodes)
        )
    _, config = recipe_and_config(info)
    if QLORA_DISTRIBUTED[1] in config:
        if chosen == QWEN2_5_1_5B:
            detail = f"QLoRA is not supported for {chosen} model"
            errors.append(api.FieldError(invalid, "spec.runtimeRef.name", detail, name))
        if QLORA_SINGLE_DEVICE[1] not in config and chosen in (LLAMA3_2_1B, LLAMA3_2_3B):
            nproc: Any = num_proc_per_node(info)
            errors.append(
                api.FieldError(
                    invalid,
                    "spec.trainer.numProcPerNode",
                    f"must be auto or 1 for {chosen} model when using QLoRA",
                    nproc,
                )
            )
            errors.append(
                api.FieldError(
                    invalid,
                    "spec.trainer.resourcesPerNode",
                    f"must have gpu resource with value 1 for {chosen} model when using QLoRA",
                    trainer.resources_per_node or {},
                )
            )
    args = _args(info)
    if nodes > 1 and (uses_lora(args) or uses_qlora(args)):
        detail = "LoRA fine-tuning is not supported for multi-node training in TorchTune"
        errors.append(api.FieldError(invalid, "spec.trainer.numNodes", detail, nodes))
    for index, arg in enumerate(args):
        key = arg.split("=", 1)[0]
        if key in IMMUTABLE_CONFIGS:
            detail = (
                f'must not set immutable config "{key}" in trainer args; it is managed by the '
                "runtime"
            )
            errors.append(api.FieldError(invalid, f"spec.trainer.args[{index}]", detail, arg))
    return errors
