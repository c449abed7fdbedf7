"""examples/jax end to end: ``jax.distributed.initialize`` from the coordinator env the operator
injects, then a cross-process ``psum`` on CPU, as a JAXJob (2 Workers, COORDINATOR_* env) and
as a TrainJob on the built-in ``jax-distributed`` runtime (2 nodes, JAX_* env), each through
``kubetrain run``.

Each process contributes ``process_id + 1``, so both must print the exact sum 3; a process that
did not join the other would print its own value instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrain.operator.trainjob import kinds
from tests.e2e import examples_fixtures as examples
from tests.integration.operator.jobs_fixtures import jobs_of

JAXJOBS = jobs_of("jaxjobs")


@pytest.fixture
def jax_installed() -> None:
    examples.require("jax", "jax")


def test_the_jaxjob_example_sums_across_both_workers(
    jax_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    path = examples.manifest("jax/jaxjob.yaml", namespace, tmp_path)
    done = examples.kubetrain_run(path, namespace, kubeconfig, tmp_path / "home")

    assert done.returncode == 0, examples.output(done)
    log = done.stdout
    for index in (0, 1):
        joined = f"[worker-{index}] process {index}/2 coordinator jax-psum-worker-0:"
        assert joined in log, examples.output(done)
        assert f"[worker-{index}] psum 3 (expected 3)" in log, log
    assert "jaxjob/jax-psum Succeeded" in done.stderr, examples.output(done)
    examples.assert_finished(kubeconfig, JAXJOBS, namespace, "jax-psum")


def test_the_jax_trainjob_example_sums_on_the_jax_distributed_runtime(
    jax_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    path = examples.manifest("jax/trainjob.yaml", namespace, tmp_path)
    done = examples.kubetrain_run(path, namespace, kubeconfig, tmp_path / "home")

    assert done.returncode == 0, examples.output(done)
    log = done.stdout
    coordinator = "coordinator jax-trainjob-node-0-0.jax-trainjob:"
    for prefix, index in (("node-0", 0), ("node-0-1", 1)):
        assert f"[{prefix}] process {index}/2 {coordinator}" in log, examples.output(done)
        assert f"[{prefix}] psum 3 (expected 3)" in log, log
    examples.assert_finished(kubeconfig, kinds.TRAINJOBS, namespace, "jax-trainjob")
