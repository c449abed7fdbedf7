"""examples/xgboost end to end: distributed XGBoost over xgboost's collective, as an XGBoostJob
(Master + 2 Workers, MASTER_* / RANK env) and as a TrainJob on the built-in
``xgboost-distributed`` runtime (3 nodes, DMLC_* env), each through ``kubetrain run``.

Rank 0 runs the tracker; the test checks that every rank got the rank it was given, that the
tracker saw all three workers, that the model it trained on its shards is accurate on the
held-out split, and that the API reports the job finished well.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrain.operator.trainjob import kinds
from tests.e2e import examples_fixtures as examples
from tests.integration.operator.jobs_fixtures import jobs_of

XGBOOSTJOBS = jobs_of("xgboostjobs")
ACCURACY = 0.9  # held-out accuracy the example must reach (it prints 0.958)
ACCURACY_LINE = r"\] test accuracy ([0-9.]+)$"


@pytest.fixture
def xgboost_installed() -> None:
    examples.require("sklearn", "train")
    examples.require("xgboost", "xgboost")


def test_the_xgboostjob_example_trains_across_master_and_workers(
    xgboost_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    path = examples.manifest("xgboost/xgboostjob.yaml", namespace, tmp_path)
    done = examples.kubetrain_run(path, namespace, kubeconfig, tmp_path / "home")

    assert done.returncode == 0, examples.output(done)
    log = done.stdout
    assert "[master-0] training on 569 samples across 3 workers" in log, examples.output(done)
    for prefix, rank in (("master-0", 0), ("worker-0", 1), ("worker-1", 2)):
        assert f"[{prefix}] rank {rank}/3 tracker xgboost-dist-master-0" in log, log
        assert f"Task {rank} got rank {rank}" in log, log
    assert examples.number(ACCURACY_LINE, log) >= ACCURACY, log
    assert "xgboostjob/xgboost-dist Succeeded" in done.stderr, examples.output(done)
    examples.assert_finished(kubeconfig, XGBOOSTJOBS, namespace, "xgboost-dist")


def test_the_xgboost_trainjob_example_trains_on_the_xgboost_distributed_runtime(
    xgboost_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    path = examples.manifest("xgboost/trainjob.yaml", namespace, tmp_path)
    done = examples.kubetrain_run(path, namespace, kubeconfig, tmp_path / "home")

    assert done.returncode == 0, examples.output(done)
    log = done.stdout
    assert "[node-0] training on 569 samples across 3 workers" in log, examples.output(done)
    tracker = "xgboost-trainjob-node-0-0.xgboost-trainjob"
    for prefix, rank in (("node-0", 0), ("node-0-1", 1), ("node-0-2", 2)):
        assert f"[{prefix}] rank {rank}/3 tracker {tracker}" in log, log
        assert f"Task {rank} got rank {rank}" in log, log
    assert examples.number(ACCURACY_LINE, log) >= ACCURACY, log
    examples.assert_finished(kubeconfig, kinds.TRAINJOBS, namespace, "xgboost-trainjob")
