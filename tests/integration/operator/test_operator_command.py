"""``kubetrain operator`` as a process: its flags turn into a running operator that works a
namespace of the API server it is pointed at, and its mistakes are one-line errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from kubetrain import kube
from tests.apiserver.cascade import run
from tests.builders import pytorchjob
from tests.integration.operator.jobs_fixtures import PYTORCHJOBS, wait_pods


def operator_command(*flags: str) -> list[str]:
    return [sys.executable, "-m", "kubetrain", "operator", *flags]


def test_the_operator_command_runs_the_job_controllers(kubeconfig: str, namespace: str) -> None:
    process = subprocess.Popen(
        operator_command(
            "--kubeconfig",
            kubeconfig,
            "--namespace",
            namespace,
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
            "--enable-scheme",
            "pytorchjob",
            "--disable-trainjob",
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
    )
    try:

        async def body() -> None:
            cluster = await kube.from_kubeconfig(kubeconfig)
            async with kube.Client(cluster) as client:
                doc = pytorchjob(namespace, "cmd").master().workers(1).doc()
                await client.create(PYTORCHJOBS, doc, namespace=namespace)
                await wait_pods(client, namespace, {"cmd-master-0", "cmd-worker-0"})

        run(body())
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode in (0, -signal.SIGTERM), stderr.decode()[-2000:]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ((), "no cluster named: pass --kubeconfig"),
        (("--kubeconfig", "x", "--host-port-range", "9-1"), "--host-port-range: '9-1'"),
        (("--kubeconfig", "x", "--enable-scheme", "nosuchjob"), "unknown kind 'nosuchjob'"),
        (("--kubeconfig", "x", "--controller-threads", "0"), "--controller-threads: 0"),
    ],
    ids=["no cluster", "bad port range", "unknown scheme", "no threads"],
)
def test_operator_mistakes_are_one_line_errors(flags: tuple[str, ...], message: str) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }
    done = subprocess.run(
        operator_command(*flags), capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
