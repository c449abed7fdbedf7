"""A torchtune metric logger that reports to the TrainJob: ``trainerStatus`` shows the
progress, the ETA and the values of the last logged step while the recipe trains.

    tune run ... metric_logger._component_=kubetrain.builtin.torchtune.TrainJobLogger

Each ``log_dict`` (the recipe calls it every ``log_every_n_steps`` steps, on rank 0 only) prints
``Step N | loss:... lr:...`` as torchtune's ``StdoutLogger`` does, so the pod's log shows the
loss, and calls :func:`kubetrain.report` with the step's values and the percentage of steps done
(``kubetrain.report`` projects the ETA from it and sends at most one update every two seconds).
With ``log_dir`` (the configs' ``DiskLogger`` block has one, which stays when only
``_component_`` is overridden) the lines also go to torchtune's ``DiskLogger`` file there.

**The total.** torchtune hands a metric logger the step and the values only. The number of steps
is ``total_steps`` when given; else the recipe's own count, read from the recipe object that
calls the logger (every torchtune 0.6 training recipe keeps ``total_epochs`` and
``_steps_per_epoch``, which it computes from the dataloader); else ``epochs ×
max_steps_per_epoch`` from the config, when both are set; else none, and only the values are
reported.

Outside a TrainJob it prints, and ``kubetrain.report`` warns once that nothing is reported.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from types import FrameType
from typing import Any, Final

from kubetrain import progress

FRAMES: Final = 4  # how far up the stack the calling recipe may be (log → log_dict → here)


def _value(data: Any) -> Any:
    """A tensor as its number; anything else as it is."""
    item = getattr(data, "item", None)
    return item() if callable(item) else data


def _steps(recipe: Any) -> int | None:
    epochs = getattr(recipe, "total_epochs", None)
    per_epoch = getattr(recipe, "_steps_per_epoch", None)
    if isinstance(epochs, int) and isinstance(per_epoch, int) and epochs > 0 and per_epoch > 0:
        return epochs * per_epoch
    return None


def recipe_steps(frame: FrameType | None) -> int | None:
    """The step count of the torchtune recipe whose method is on the stack above ``frame``."""
    for _ in range(FRAMES):
        if frame is None:
            return None
        found = _steps(frame.f_locals.get("self"))
        if found is not None:
            return found
        frame = frame.f_back
    return None


class TrainJobLogger:
    """torchtune's metric-logger interface (``log``, ``log_dict``, ``log_config``, ``close``),
    printing each step and reporting it to the TrainJob; see the module docstring."""

    def __init__(
        self,
        total_steps: int | None = None,
        log_dir: str | None = None,
        filename: str | None = None,
    ) -> None:
        if total_steps is not None and (not isinstance(total_steps, int) or total_steps < 1):
            raise ValueError(f"TrainJobLogger.total_steps: {total_steps!r}; accepted: 1 or more")
        self._total = total_steps
        self._from_config: int | None = None
        self._disk: Any = None
        if log_dir is not None:
            from torchtune.training.metric_logging import DiskLogger

            self._disk = DiskLogger(log_dir=log_dir, filename=filename)

    def total_steps(self, frame: FrameType | None = None) -> int | None:
        if self._total is not None:
            return self._total
        return recipe_steps(frame) or self._from_config

    def log(self, name: str, data: Any, step: int) -> None:
        self._log({name: data}, step, sys._getframe(1))

    def log_dict(self, payload: Mapping[str, Any], step: int) -> None:
        self._log(payload, step, sys._getframe(1))

    def _log(self, payload: Mapping[str, Any], step: int, caller: FrameType) -> None:
        values = {str(name): _value(data) for name, data in payload.items()}
        print(f"Step {step} | " + " ".join(f"{k}:{v}" for k, v in values.items()), flush=True)
        if self._disk is not None:
            self._disk.log_dict(values, step)
        total = self.total_steps(caller)
        done = None if total is None else min(100.0, 100.0 * step / total)
        metrics = {k: v for k, v in values.items() if not _nan(v)}
        progress.report(progress=done, metrics={**metrics, "step": step})

    def log_config(self, config: Any) -> None:
        """Keep the config's ``epochs × max_steps_per_epoch`` (the last resort for the total)
        and save it beside the outputs, as torchtune's own loggers do."""
        epochs, per_epoch = config.get("epochs"), config.get("max_steps_per_epoch")
        if isinstance(epochs, int) and isinstance(per_epoch, int) and epochs > 0 and per_epoch > 0:
            self._from_config = epochs * per_epoch
        if self._disk is not None:
            self._disk.log_config(config)
        elif config.get("output_dir"):
            from torchtune.training.metric_logging import save_config

            save_config(config)

    def close(self) -> None:
        sys.stdout.flush()
        if self._disk is not None:
            self._disk.close()


def _nan(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)
