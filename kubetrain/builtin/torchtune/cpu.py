"""torchtune 0.6.1's distributed recipes on a machine without CUDA: what they assume of a CUDA
device, made to hold on a CPU, so that the recipes themselves run unchanged over gloo.

The recipes are torchtune's files (``recipes/<name>.py`` beside the ``torchtune`` package),
run as ``__main__`` after three changes that matter only where there is no CUDA:

- ``torch.distributed.init_process_group("cuda:nccl,cpu:gloo")`` (``lora_finetune_distributed``
  names NCCL whatever the device) fails on a torch built without NCCL: there it gets ``gloo``;
- ``torchtune.training.get_memory_stats`` raises on a CPU, and the recipes call it once the
  model is set up: there it gives the process' peak resident memory (GiB) for all three values;
- ``torchtune.training.cleanup_before_training`` empties the device cache, which a CPU does
  not have: there it only collects garbage.

On a CUDA machine (NCCL built in, device ``cuda``) all three do what torchtune's do. The config
still says ``device=cpu`` (and ``dtype=fp32`` where bfloat16 is slow) itself: those are
settings, not assumptions.

Owns: :func:`run`. Must not: change anything before :func:`run` is called (a module that only
imports this stays as torchtune made it).
"""

from __future__ import annotations

import gc
import os
import resource
import runpy
import sys
from typing import Any, Final

RECIPES: Final = ("lora_finetune_distributed", "full_finetune_distributed")
GIB: Final = 1024**3


def recipe_path(name: str) -> str:
    """The file of torchtune's built-in recipe ``name``."""
    import torchtune

    root = os.path.dirname(os.path.dirname(torchtune.__file__))
    return os.path.join(root, "recipes", f"{name}.py")


def gloo_without_nccl(backend: Any) -> Any:
    """``backend`` for ``init_process_group``: one that names NCCL becomes ``gloo`` when this
    torch has no NCCL; any other is kept."""
    import torch.distributed as dist

    if isinstance(backend, str) and "nccl" in backend and not dist.is_nccl_available():
        return "gloo"
    return backend


def peak_memory_gib() -> float:
    """This process' peak resident memory in GiB (``ru_maxrss`` is in KiB on Linux, in bytes
    on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (peak if sys.platform == "darwin" else peak * 1024) / GIB


def patch() -> None:
    """Apply the three changes of the module docstring."""
    import torch.distributed as dist
    from torchtune import training

    init = dist.init_process_group
    stats = training.get_memory_stats
    cleanup = training.cleanup_before_training

    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        return init(gloo_without_nccl(backend), *args, **kwargs)

    def get_memory_stats(device: Any, reset_stats: bool = True) -> dict[str, float]:
        if getattr(device, "type", None) == "cuda":
            return stats(device, reset_stats)
        peak = round(peak_memory_gib(), 2)
        return {"peak_memory_active": peak, "peak_memory_alloc": peak, "peak_memory_reserved": peak}

    def cleanup_before_training() -> None:
        import torch

        if torch.cuda.is_available():
            cleanup()
        else:
            gc.collect()

    dist.init_process_group = init_process_group
    training.get_memory_stats = get_memory_stats
    training.cleanup_before_training = cleanup_before_training


def run(name: str) -> None:
    """Run torchtune's recipe ``name`` as ``__main__`` with this process' arguments."""
    if name not in RECIPES:
        raise ValueError(f"recipe: {name!r}; accepted: {', '.join(RECIPES)}")
    patch()
    path = recipe_path(name)
    sys.argv[0] = path
    runpy.run_path(path, run_name="__main__")
