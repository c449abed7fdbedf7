"""TorchTune in a TrainJob's trainer pods: progress for ``trainerStatus``, and torchtune's
distributed recipes on machines without CUDA.

    metric_logger    :class:`~.metric_logger.TrainJobLogger`, a torchtune metric logger
                     (``metric_logger._component_=kubetrain.builtin.torchtune.TrainJobLogger``)
                     that prints each logged step, as torchtune's own loggers do, and reports
                     progress, ETA and the step's values with ``kubetrain.report``
    cpu              what torchtune 0.6.1's distributed recipes assume of a CUDA device, made
                     to hold on a CPU, so that the recipes run unchanged over gloo
    lora_finetune_distributed, full_finetune_distributed
                     those recipes, run with :mod:`.cpu`'s fixes: ``tune run`` takes them by
                     their module path, ``tune run ... kubetrain/builtin/torchtune/
                     lora_finetune_distributed --config llama3_2/1B_lora``

Upstream's TorchTune runtimes run ``tune run`` with torchtune's own recipes; none of this is
needed there. It is what a data scientist adds to see progress in ``kubectl get trainjob``, and
what a TrainJob names to fine-tune across nodes where torch has no NCCL (a CPU-only wheel).

Must not: import torchtune (or torch) at import time of this package: the logger is imported by
torchtune's config system inside a recipe that already has them, and ``kubetrain`` itself must
import without the ``llm`` extra.
"""

from __future__ import annotations

from kubetrain.builtin.torchtune.metric_logger import TrainJobLogger

__all__ = ["TrainJobLogger"]
