"""examples/paddle end to end: a PaddleJob of two Workers, each running
``python -m paddle.distributed.launch`` on the PADDLE_* env the operator injects, through
``kubetrain run``.

The launchers must meet at worker 0's key-value store (PADDLE_MASTER) and give the two
trainers ranks 0 and 1; both must print the exact all-reduce sum of ``rank + 1`` (a trainer
that did not join the other would print its own value), and rank 0 the held-out accuracy of
the model trained with ``paddle.DataParallel`` over gloo.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e import examples_fixtures as examples
from tests.integration.operator.jobs_fixtures import jobs_of

PADDLEJOBS = jobs_of("paddlejobs")
ACCURACY = 0.9  # the example prints 0.971
ACCURACY_LINE = r"^\[worker-\d\] test accuracy ([0-9.]+)$"


@pytest.fixture
def paddle_installed() -> None:
    examples.require("sklearn", "train")
    examples.require("paddle", "paddle")


def test_the_paddlejob_example_all_reduces_and_trains_across_both_workers(
    paddle_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    path = examples.manifest("paddle/paddlejob.yaml", namespace, tmp_path)
    done = examples.kubetrain_run(path, namespace, kubeconfig, tmp_path / "home")

    assert done.returncode == 0, examples.output(done)
    log = done.stdout
    # Worker 0 serves the launchers' store at its own pod IP; worker 1 dials it by name.
    master = r"PADDLE_MASTER value: "
    assert re.search(rf"^\[worker-0\] .*{master}[0-9.]+:\d+$", log, re.M), log
    assert re.search(rf"^\[worker-1\] .*{master}paddle-collective-worker-0:\d+$", log, re.M), log
    ranks = sorted(re.findall(r"^\[worker-[01]\] rank (\d)/2 backend GLOO$", log, re.M))
    assert ranks == ["0", "1"], examples.output(done)
    sums = re.findall(r"^\[worker-[01]\] all-reduce sum 3 \(expected 3\)$", log, re.M)
    assert len(sums) == 2, log
    # The store's host takes rank 0, so worker 0's trainer is the one that reports.
    assert re.search(r"^\[worker-0\] rank 0/2 ", log, re.M), log
    assert "[worker-0] epoch 10 loss " in log, log
    assert examples.number(ACCURACY_LINE, log) >= ACCURACY, log
    assert "paddlejob/paddle-collective Succeeded" in done.stderr, examples.output(done)
    examples.assert_finished(kubeconfig, PADDLEJOBS, namespace, "paddle-collective")
