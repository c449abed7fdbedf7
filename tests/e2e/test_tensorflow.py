"""examples/tensorflow end to end: TFJobs whose replicas take their whole cluster from the
TF_CONFIG the operator writes, each through ``kubetrain run``.

- ``tfjob.yaml``: MultiWorkerMirroredStrategy on a Chief and two Workers. All three must
  report 3 replicas in sync and end with the same weights checksum (a replica that trained
  alone would hold other weights), and the Chief's held-out accuracy must pass a threshold.
- ``tfjob-ps.yaml``: ParameterServerStrategy with a ClusterCoordinator on the Chief, one PS
  and two Workers. The variables must live on the PS, both Workers must have run steps (each
  prints its first), the Chief must count every scheduled step, and the accuracy of the
  variables it reads back from the PS must pass a threshold.

Both run on the local plane. On the real one (tests/e2e/conftest.py) TensorFlow trains in one
representative form, the parameter-server example, to keep the suite's time in budget; the
TF_CONFIG handshake of PS and Workers runs on both (test_training.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e import examples_fixtures as examples
from tests.e2e.conftest import local_only
from tests.integration.operator.jobs_fixtures import TFJOBS

MULTIWORKER_ACCURACY = 0.9  # the example prints 0.971
PS_ACCURACY = 0.85  # asynchronous updates vary from run to run: 0.92 to 0.96 seen
ACCURACY_LINE = r"^\[chief-0\] test accuracy ([0-9.]+)$"


@pytest.fixture
def tensorflow_installed() -> None:
    examples.require("sklearn", "train")
    examples.require("tensorflow", "tf")


def test_the_multiworker_tfjob_example_trains_in_sync_on_chief_and_workers(
    tensorflow_installed: None, kubeconfig: str, namespace: str, tmp_path: Path, plane: str
) -> None:
    local_only(plane, "TensorFlow trains on the real plane as the parameter-server example")
    path = examples.manifest("tensorflow/tfjob.yaml", namespace, tmp_path)
    done = examples.kubetrain_run(path, namespace, kubeconfig, tmp_path / "home")

    assert done.returncode == 0, examples.output(done)
    log = done.stdout
    checksums = set()
    for replica in ("chief-0", "worker-0", "worker-1"):
        assert f"[{replica}] {replica}: 3 replicas in sync, cluster " in log, examples.output(done)
        found = re.search(rf"^\[{replica}\] {replica}: weights checksum ([0-9.]+)$", log, re.M)
        assert found is not None, log
        checksums.add(found.group(1))
    assert len(checksums) == 1, f"the replicas ended with different weights: {checksums}\n{log}"
    address = rf"tf-multiworker-chief-0\.{namespace}\.svc:\d+"
    assert re.search(rf'"chief": \["{address}"\]', log), log
    assert "[chief-0] epoch 8 loss " in log, log
    assert examples.number(ACCURACY_LINE, log) >= MULTIWORKER_ACCURACY, log
    assert "tfjob/tf-multiworker Succeeded" in done.stderr, examples.output(done)
    examples.assert_finished(kubeconfig, TFJOBS, namespace, "tf-multiworker")


def test_the_parameter_server_tfjob_example_trains_through_the_ps(
    tensorflow_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    path = examples.manifest("tensorflow/tfjob-ps.yaml", namespace, tmp_path)
    done = examples.kubetrain_run(path, namespace, kubeconfig, tmp_path / "home")

    assert done.returncode == 0, examples.output(done)
    log = done.stdout
    on_ps = "[chief-0] chief-0: 4 variables on ['/job:ps/replica:0/task:0/device:CPU:0'], 2 workers"
    assert on_ps in log, examples.output(done)
    assert "[ps-0] ps-0: serving at grpc://" in log, log
    for worker in ("worker-0", "worker-1"):
        assert f"[{worker}] {worker}: serving at grpc://" in log, log
        assert re.search(rf"^\[{worker}\] ran its step 1 - step \d+ of all", log, re.M), log
    assert "[chief-0] chief-0: 200 steps done by the workers" in log, log
    assert examples.number(ACCURACY_LINE, log) >= PS_ACCURACY, log
    assert "tfjob/tf-ps Succeeded" in done.stderr, examples.output(done)
    examples.assert_finished(kubeconfig, TFJOBS, namespace, "tf-ps")
