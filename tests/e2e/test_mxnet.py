"""examples/mxnet end to end: an MXJob (Scheduler, two Servers, two Workers) whose pods check
the MX_CONFIG / DMLC_* contract the operator injects and then do a parameter-server round
trip in plain Python (MXNet has no wheels for current Python), through ``kubetrain run``.

Every pod must find MX_CONFIG and DMLC_* in agreement; the Scheduler must see both Servers and
both Workers register at DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT; each Worker must pull exactly the
sums of what both Workers pushed (a Server that missed a push would not answer, one that
counted a push twice would give another sum); and the job must succeed on the Scheduler,
which exits last.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e import examples_fixtures as examples
from tests.integration.operator.jobs_fixtures import jobs_of

MXJOBS = jobs_of("mxjobs")
PULLED = "pulled [3.0, 6.0, 9.0, 12.0] (expected [3.0, 6.0, 9.0, 12.0])"


def test_the_mxjob_example_registers_every_node_and_sums_the_pushes_exactly(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    path = examples.manifest("mxnet/mxjob.yaml", namespace, tmp_path)
    done = examples.kubetrain_run(path, namespace, kubeconfig, tmp_path / "home")

    assert done.returncode == 0, examples.output(done)
    log = done.stdout
    agreed = r"MX_CONFIG and DMLC_\* agree: root mxnet-ps-scheduler-0:\d+, 2 servers, 2 workers"
    for replica in ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1"):
        assert re.search(rf"^\[{replica}\] {replica}: {agreed}$", log, re.M), examples.output(done)
    assert "[scheduler-0] scheduler: 2 servers and 2 workers registered" in log, log
    for worker in ("worker-0", "worker-1"):
        assert f"[{worker}] {worker}: {PULLED}" in log, log
        assert f"[{worker}] {worker}: sum 30 (expected 30)" in log, log
    assert "[scheduler-0] scheduler: every worker finished; servers stopped" in log, log
    for server in ("server-0", "server-1"):
        assert f"[{server}] {server}: stopped; held keys " in log, log
    assert "mxjob/mxnet-ps Succeeded" in done.stderr, examples.output(done)
    examples.assert_finished(kubeconfig, MXJOBS, namespace, "mxnet-ps")
