"""kubetrain's TorchTune pieces for trainer pods: the metric logger prints each step as
torchtune's own loggers do and reports progress from the calling recipe's step count (or the one
given, or the config's), and the CPU fixes change only what has no CUDA."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from kubetrain import progress
from kubetrain.builtin.torchtune import TrainJobLogger, cpu, metric_logger


class Tensor:
    """What a recipe logs: a 0-d tensor stands in as anything with ``item()``."""

    def __init__(self, value: float) -> None:
        self.value = value

    def item(self) -> float:
        return self.value


class Recipe:
    """The counters every torchtune 0.6 training recipe keeps, and its logging call."""

    def __init__(self, logger: TrainJobLogger, epochs: int, steps_per_epoch: int) -> None:
        self._metric_logger = logger
        self.total_epochs = epochs
        self._steps_per_epoch = steps_per_epoch
        self.global_step = 0

    def train_step(self, loss: float) -> None:
        self.global_step += 1
        self._metric_logger.log_dict({"loss": Tensor(loss), "lr": 0.01}, step=self.global_step)


@pytest.fixture
def reports(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    def report(progress: Any = None, metrics: Any = None, eta_seconds: Any = None) -> None:
        sent.append({"progress": progress, "metrics": dict(metrics or {})})

    monkeypatch.setattr(progress, "report", report)
    return sent


def test_each_step_is_printed_as_torchtune_prints_it_and_reported_with_the_recipe_progress(
    reports: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = Recipe(TrainJobLogger(), epochs=2, steps_per_epoch=4)
    for loss in (5.0, 4.0, 3.5):
        recipe.train_step(loss)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "Step 1 | loss:5.0 lr:0.01",
        "Step 2 | loss:4.0 lr:0.01",
        "Step 3 | loss:3.5 lr:0.01",
    ]
    assert [r["progress"] for r in reports] == [12.5, 25.0, 37.5]
    assert reports[-1]["metrics"] == {"loss": 3.5, "lr": 0.01, "step": 3}


def test_a_given_total_wins_and_the_config_is_the_last_resort(
    reports: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    Recipe(TrainJobLogger(total_steps=10), epochs=1, steps_per_epoch=4).train_step(1.0)
    assert reports[-1]["progress"] == 10.0
    logger = TrainJobLogger()
    logger.log_config({"epochs": 3, "max_steps_per_epoch": 5})
    logger.log("loss", Tensor(2.0), 3)  # called from no recipe
    assert reports[-1]["progress"] == 20.0
    plain = TrainJobLogger()
    plain.log_config({"epochs": 3, "max_steps_per_epoch": None})
    plain.log_dict({"loss": 2.0}, 4)
    assert reports[-1] == {"progress": None, "metrics": {"loss": 2.0, "step": 4}}
    assert capsys.readouterr().out.splitlines()[-1] == "Step 4 | loss:2.0"


def test_a_value_that_is_not_a_number_is_printed_but_not_reported(
    reports: list[dict[str, Any]],
) -> None:
    TrainJobLogger(total_steps=2).log_dict({"loss": float("nan"), "lr": 0.5}, 2)
    assert reports[-1] == {"progress": 100.0, "metrics": {"lr": 0.5, "step": 2}}


def test_a_total_that_is_not_a_count_is_refused() -> None:
    with pytest.raises(
        ValueError, match=re.escape("TrainJobLogger.total_steps: 0; accepted: 1 or more")
    ):
        TrainJobLogger(total_steps=0)


def test_with_a_log_dir_the_lines_also_go_to_torchtunes_disk_log(
    reports: list[dict[str, Any]], tmp_path: Any
) -> None:
    pytest.importorskip("torchtune", reason="the llm extra is not installed")
    logger = TrainJobLogger(total_steps=4, log_dir=str(tmp_path), filename="log.txt")
    logger.log_dict({"loss": 1.5}, 1)
    logger.close()
    assert (tmp_path / "log.txt").read_text() == "Step 1 | loss:1.5 \n"


def test_the_recipe_is_found_up_the_stack_only_where_it_keeps_both_counters() -> None:
    class Half:
        total_epochs = 2

        def frame(self) -> Any:
            import sys

            return sys._getframe(0)

    assert metric_logger.recipe_steps(Half().frame()) is None


def test_without_nccl_a_backend_that_names_it_becomes_gloo() -> None:
    dist = pytest.importorskip("torch.distributed")
    mixed = "cuda:nccl,cpu:gloo"
    expected = mixed if dist.is_nccl_available() else "gloo"
    assert cpu.gloo_without_nccl(mixed) == expected
    assert cpu.gloo_without_nccl("gloo") == "gloo"
    assert cpu.gloo_without_nccl(None) is None


def test_the_cpu_memory_figure_is_this_process_peak() -> None:
    peak = cpu.peak_memory_gib()
    assert 0.001 < peak < 64


def test_only_torchtunes_distributed_recipes_run_and_their_files_are_found() -> None:
    with pytest.raises(ValueError, match="recipe: 'generate'; accepted: lora_finetune_distributed"):
        cpu.run("generate")
    pytest.importorskip("torchtune", reason="the llm extra is not installed")
    for name in cpu.RECIPES:
        assert os.path.isfile(cpu.recipe_path(name)), name
