"""A job that kubetrain's admission rejects but that a real kube-apiserver stored, because no
kubetrain webhook checked it: ``kubectl apply`` takes it, ``kubetrain operator`` refuses it
with a ``Failed`` condition in the very words ``kubetrain validate`` prints, ``kubectl get``
shows it Failed, ``kubetrain wait`` ends on it with those words, and fixing the spec with
``kubectl`` lets the job proceed: the condition goes and its pods are created.

The control plane is this module's own (etcd and kube-apiserver, with kubetrain's CRDs), so
that no kubetrain webhook another test registers on the session's plane refuses the jobs
first; the operator runs beside it, as docs/cluster.md runs it out of the cluster. Nothing
schedules or runs the pods, so they stay Pending, which is as far as these tests need them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import yaml

from kubetrain import envtest
from tests import processes, realcluster

T = TypeVar("T")
REPOSITORY = Path(__file__).resolve().parents[2]
RUNTIMES = REPOSITORY / "deploy" / "runtimes"
TIMEOUT = 90.0  # seconds for the operator to start, or to act on a change (2 busy cores)
STOP_TIMEOUT = 30.0
JOB_NAME = "training.kubeflow.org/job-name"
TRAINJOB_NAME = "jobset.sigs.k8s.io/jobset-name"


def until(check: Callable[[], T | None], what: str, problem: Callable[[], str]) -> T:
    """Poll ``check`` until it returns something, for at most :data:`TIMEOUT` seconds."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = check()
        if found is not None and found is not False:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} after {TIMEOUT:.0f}s\n{problem()}")
        time.sleep(0.2)


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


class Operator:
    """``kubetrain operator --kubeconfig`` on the plane, its log in a file."""

    def __init__(self, plane: envtest.ControlPlane, log: Path) -> None:
        self.log = log
        probe = envtest.free_port()
        command = [
            sys.executable, "-m", "kubetrain", "operator",
            "--kubeconfig", plane.kubeconfig,
            "--metrics-bind-address", "0",
            "--health-probe-bind-address", f"127.0.0.1:{probe}",
            "--log-format", "text",
        ]  # fmt: skip
        environ = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=environ
            )
        until(
            lambda: self.exited() or ready(f"http://127.0.0.1:{probe}/readyz"),
            "the operator's caches did not sync",
            self.tail,
        )
        assert not self.exited(), self.tail()

    def exited(self) -> str:
        return "" if self.process.poll() is None else f"exited ({self.process.returncode})"

    def tail(self) -> str:
        try:
            return "operator log:\n" + self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[envtest.ControlPlane]:
    """kube-apiserver with kubetrain's CRDs and built-in runtimes, and no webhook."""
    if not realcluster.available():
        pytest.skip(f"no real Kubernetes control plane: {'; '.join(realcluster.missing)}")
    started = envtest.ControlPlane(
        envtest.find_assets(),
        tmp_path_factory.mktemp("refused-kube-apiserver"),
        controllers=False,
        scheduler=False,
        crds=(realcluster.CRDS,),
    )
    try:
        started.start()
    except RuntimeError as exc:
        pytest.fail(f"the real control plane did not start: {exc}")
    try:
        started.kubectl("apply", "-k", str(RUNTIMES))
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def operator(
    plane: envtest.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Operator]:
    running = Operator(plane, tmp_path_factory.mktemp("operator") / "operator.log")
    try:
        yield running
    finally:
        processes.stop(running.process, timeout=STOP_TIMEOUT)


@pytest.fixture
def namespace(plane: envtest.ControlPlane) -> Iterator[str]:
    name = f"refused-{uuid.uuid4().hex[:8]}"
    plane.kubectl("create", "namespace", name)
    # kube-controller-manager would make it; kube-apiserver admits no pod without it
    plane.kubectl("create", "serviceaccount", "default", "-n", name)
    yield name
    with contextlib.suppress(RuntimeError):
        plane.kubectl("delete", "namespace", name, "--wait=false")


def validate(path: Path) -> list[str]:
    """What ``kubetrain validate -f`` prints about the manifest: one line per problem."""
    done = subprocess.run(
        [sys.executable, "-m", "kubetrain", "validate", "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    return [line for line in done.stderr.splitlines() if line]


def written(tmp_path: Path, name: str, doc: dict[str, object]) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def jsonpath(plane: envtest.ControlPlane, what: str, namespace: str, path: str) -> str:
    return plane.kubectl("get", what, "-n", namespace, "-o", f"jsonpath={path}")


def refused_with(
    plane: envtest.ControlPlane, operator: Operator, what: str, namespace: str, reason: str
) -> str:
    """Wait until ``what`` is refused; its condition's message."""
    last = "{.status.conditions[-1:]"

    def refusal() -> str | None:
        found = jsonpath(plane, what, namespace, last + ".reason}")
        return jsonpath(plane, what, namespace, last + ".message}") if found == reason else None

    return until(refusal, f"{what} was not refused with {reason}", operator.tail)


def kubetrain_wait(plane: envtest.ControlPlane, ref: str, namespace: str) -> tuple[int, str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubetrain",
            "wait",
            ref,
            "--for",
            "Succeeded",
            "--timeout",
            "60s",
            "--kubeconfig",
            plane.kubeconfig,
            "-n",
            namespace,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stderr


def pods(plane: envtest.ControlPlane, namespace: str, selector: str) -> list[str]:
    found = plane.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "name")
    return sorted(found.split())


PYTORCHJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "two-masters"},
    "spec": {
        "pytorchReplicaSpecs": {
            role: {
                "replicas": 2,
                "template": {
                    "spec": {"containers": [{"name": "pytorch", "image": "example/train:1"}]}
                },
            }
            for role in ("Master", "Worker")
        }
    },
}


def test_a_pytorchjob_no_webhook_checked_is_refused_in_the_words_of_validate_until_fixed(
    plane: envtest.ControlPlane, operator: Operator, namespace: str, tmp_path: Path
) -> None:
    path = written(tmp_path, "two-masters", PYTORCHJOB)
    (line,) = validate(path)
    prefix = "PyTorchJob/two-masters: "
    assert line.startswith(prefix), line
    words = line.removeprefix(prefix)
    assert words == "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"

    plane.kubectl("apply", "-n", namespace, "-f", str(path))  # no webhook: stored as written
    message = refused_with(
        plane, operator, "pytorchjob/two-masters", namespace, "PyTorchJobFailedValidation"
    )
    assert message == f"PyTorchJob failed validation because {words}"
    table = plane.kubectl("get", "pytorchjob", "two-masters", "-n", namespace).splitlines()
    assert table[0].split() == ["NAME", "STATE", "AGE"]
    assert table[1].split()[:2] == ["two-masters", "Failed"]
    assert pods(plane, namespace, f"{JOB_NAME}=two-masters") == []
    code, stderr = kubetrain_wait(plane, "pytorchjob/two-masters", namespace)
    assert (code, stderr) == (
        1,
        f"kubetrain: pytorchjob/two-masters cannot run as written: {message}; "
        "fix its spec and wait again\n",
    )

    fix = '{"spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}}}}'
    plane.kubectl("patch", "pytorchjob", "two-masters", "-n", namespace, "--type=merge", "-p", fix)
    until(
        lambda: (
            pods(plane, namespace, f"{JOB_NAME}=two-masters")
            == ["pod/two-masters-master-0", "pod/two-masters-worker-0", "pod/two-masters-worker-1"]
        ),
        "the fixed job's pods were not created",
        operator.tail,
    )
    types = until(
        lambda: (
            jsonpath(
                plane, "pytorchjob/two-masters", namespace, "{.status.conditions[*].type}"
            ).split()
            or None
        ),
        "the fixed job has no conditions",
        operator.tail,
    )
    assert "Failed" not in types, types
    created = jsonpath(
        plane,
        "pytorchjob/two-masters",
        namespace,
        '{.status.conditions[?(@.type=="Created")].status}',
    )
    assert created == "True"


PATCH_TARGET = "/spec/runtimePatches/0/trainingRuntimeSpec/template/spec/replicatedJobs/0/name"
TRAINJOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "patch-typo"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "runtimePatches": [
            {
                "manager": "example.com/tuner",
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "worker",  # torch-distributed's job is node
                                    "template": {
                                        "spec": {
                                            "template": {"spec": {"nodeSelector": {"pool": "a"}}}
                                        }
                                    },
                                }
                            ]
                        }
                    }
                },
            }
        ],
    },
}


def test_a_trainjob_its_runtime_rejects_is_refused_in_the_words_of_validate_until_fixed(
    plane: envtest.ControlPlane, operator: Operator, namespace: str, tmp_path: Path
) -> None:
    """Its runtime patch names a replicated job the runtime lacks: wrong only against the
    runtime, and fixable (the trainer, initializer and runtimeRef of a stored TrainJob are
    immutable, its runtime patches are not)."""
    runtime = yaml.safe_load((RUNTIMES / "torch_distributed.yaml").read_text(encoding="utf-8"))
    # validate judges a TrainJob against the runtimes given beside it, as installed here
    path = tmp_path / "patch-typo.yaml"
    path.write_text(yaml.safe_dump_all([runtime, TRAINJOB], sort_keys=False), encoding="utf-8")
    (line,) = validate(path)
    prefix = "TrainJob/patch-typo: "
    assert line.startswith(prefix), line
    words = line.removeprefix(prefix)
    assert words == (
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name: "
        'Invalid value: "worker": must not have replicated job that doesn\'t exist in the '
        "runtime job template"
    )

    job = written(tmp_path, "job", TRAINJOB)
    plane.kubectl("apply", "-n", namespace, "-f", str(job))  # no webhook: stored as written
    message = refused_with(
        plane, operator, "trainjob/patch-typo", namespace, "TrainJobFailedValidation"
    )
    assert message == f"TrainJob failed validation because {words}"
    table = plane.kubectl("get", "trainjob", "patch-typo", "-n", namespace).splitlines()
    assert table[1].split()[:2] == ["patch-typo", "Failed"]
    assert pods(plane, namespace, f"{TRAINJOB_NAME}=patch-typo") == []
    code, stderr = kubetrain_wait(plane, "trainjob/patch-typo", namespace)
    assert (code, stderr) == (
        1,
        f"kubetrain: trainjob/patch-typo cannot run as written: {message}; "
        "fix its spec and wait again\n",
    )

    fix = f'[{{"op": "replace", "path": "{PATCH_TARGET}", "value": "node"}}]'
    plane.kubectl("patch", "trainjob", "patch-typo", "-n", namespace, "--type=json", "-p", fix)
    until(
        lambda: (
            pods(plane, namespace, f"{TRAINJOB_NAME}=patch-typo") == ["pod/patch-typo-node-0-0"]
        ),
        "the fixed TrainJob's pod was not created",
        operator.tail,
    )
    selector = jsonpath(plane, "pod/patch-typo-node-0-0", namespace, "{.spec.nodeSelector.pool}")
    assert selector == "a", "the fixed patch applies"
    until(
        lambda: (
            "Failed"
            not in jsonpath(plane, "trainjob/patch-typo", namespace, "{.status.conditions[*].type}")
        ),
        "the fixed TrainJob is still refused",
        operator.tail,
    )
