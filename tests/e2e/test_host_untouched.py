"""The local node leaves the host as it was, runs a pod in the directory a user expects, and the
official ``kubeflow-training`` SDK still imports and runs on the machine afterwards.

One scenario, run once for the module on a local control plane of its own (started from an
empty directory of the test's, as ``kubetrain up`` would be from anywhere): jobs of every kind
(the seven ``kubeflow.org/v1`` kinds and TrainJobs on the built-in ``torch-distributed`` and
``mpi-distributed`` runtimes) whose pods need what the host lacks: the ServiceAccount files
at ``/var/run/secrets/kubernetes.io/serviceaccount`` (``/var/run`` is a link to ``/run`` on
Debian), an emptyDir at a root-level path, a ConfigMap under ``/etc``, a ``workingDir`` that
does not exist, the MPIJob launcher's ``/etc/mpi`` and ``/opt/kube``, the MPI TrainJob's
``/root/.ssh``. Each pod checks that it sees them, and writes a file with a relative path.
Then ``kubetrain submit`` and ``kubetrain run -f`` are typed in a project directory and their
pods run ``python3 hello.py`` from there; then the ``kubeflow-training`` 1.9.4 SDK lists the
jobs; then the control plane stops, as ``kubetrain down`` stops it.

How the host is compared, and why it does not depend on the machine being idle (other
engineers' tests and tools run beside this one): a snapshot is a set of (path, type) pairs,
never times or sizes, taken before the control plane starts and after it stopped, of

- what can be attributed to this scenario alone: every path its pods named (unique names,
  plus the fixed ones above) and each of their ancestors, the directory the control plane was
  started from (it must stay empty), and the file the pods wrote by a relative path (it must
  be in none of the repository, that directory and ``/tmp``);
- trees where a stray mount point or directory would land and other processes rarely write:
  the entries of ``/``, ``/run`` and ``$HOME``, and the whole of ``/etc``, ``/opt``,
  ``/usr/local``, ``/srv``, ``/home``, ``/mnt``, ``/media`` and ``/var`` without its busy
  parts (``lib``, ``log``, ``cache``, ``tmp``, ``spool``, ``mail``, ``backups``).

Left out: ``/proc``, ``/sys``, ``/dev``, ``/tmp`` (every test's scratch space; covered by the
attributed checks), ``KUBETRAIN_HOME`` (the node's own, a temporary directory here), the
repository and its virtual environment (others edit them meanwhile: covered by the attributed
checks). The pods' own ``$HOME`` is a temporary directory, since what their processes write
there (kubectl's cache) is theirs, not the node's. A package installed on the machine while
this runs would show as a difference in ``/etc`` or ``/var``; the message lists every path.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import kube
from kubetrain.cli import jobkinds
from kubetrain.frameworks import hostimage
from kubetrain.local.node import podspec
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import eventually, run
from tests.e2e import conftest as e2e
from tests.e2e.trainjob_fixtures import REPOSITORY, log_of

TOKEN = secrets.token_hex(4)
DATA = f"/kt-hostdiff-{TOKEN}/data"  # nearest existing directory: / itself
CONFIG = f"/etc/kt-hostdiff-{TOKEN}"
WORK = f"/kt-hostdiff-{TOKEN}-work/run"
CREDENTIALS = podspec.API_ACCESS_PATH
SSH = "/root/.ssh"  # the MPI TrainJob's sshAuthMountPath default
MPI_PATHS = ("/etc/mpi", "/opt/kube")  # the MPIJob launcher's mounts
NAMED = (DATA, CONFIG, WORK, CREDENTIALS, SSH, *MPI_PATHS)
MARK = f"kt-hostdiff-{TOKEN}.txt"
NAMESPACE = "hostdiff"
CLI_NAMESPACE = "hostdiff-cli"  # apart: kubeflow-training 1.9.4 cannot read a job without runPolicy
JOB_TIMEOUT = 240.0
CLI_TIMEOUT = 240.0
SDK_ENV = "KUBETRAIN_KUBEFLOW_TRAINING"
SDK_DIR = REPOSITORY / ".venv" / "kubeflow-training"
SDK_VERSION = "1.9.4"

WHOLE = ("/etc", "/opt", "/usr/local", "/srv", "/home", "/mnt", "/media", "/var")
ENTRIES = ("/", "/run", os.path.expanduser("~"))
BUSY = frozenset(
    f"/var/{name}" for name in ("lib", "log", "cache", "tmp", "spool", "mail", "backups")
)

Snapshot = frozenset[tuple[str, str]]


def kind_of(path: str) -> str:
    if os.path.islink(path):
        return "link"
    if os.path.isdir(path):
        return "dir"
    return "file" if os.path.lexists(path) else "absent"


def snapshot() -> Snapshot:
    """The (path, type) pairs of the compared trees (see the module docstring)."""
    seen: set[tuple[str, str]] = set()
    for top in ENTRIES:
        seen.update((os.path.join(top, n), kind_of(os.path.join(top, n))) for n in _names(top))
    for top in WHOLE:
        for directory, dirs, files in os.walk(top, onerror=lambda _: None):
            dirs[:] = [d for d in dirs if os.path.join(directory, d) not in BUSY]
            for name in (*dirs, *files):
                path = os.path.join(directory, name)
                seen.add((path, kind_of(path)))
    for path in NAMED:
        while path != "/":
            seen.add((path, kind_of(path)))
            path = os.path.dirname(path)
    return frozenset(seen)


def _names(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


SCRIPT = """
import os, sys
missing = [p for p in sys.argv[1:] if not os.path.exists(p)]
open({mark!r}, 'w').write(os.getcwd())
print('cwd', os.getcwd(), 'missing', missing, flush=True)
sys.exit(3 if missing else 0)
"""


def container(name: str, *paths: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": hostimage.HOST_IMAGE,
        "command": ["python3", "-c", SCRIPT.format(mark=MARK), *paths],
        **fields,
    }


def v1_job(kind: jobkinds.JobKind, replicas: dict[str, int], **container_fields: Any) -> dict:
    """A job of ``kind`` whose pods mount the emptyDir at DATA and the ConfigMap at CONFIG."""
    mounts = [{"name": "data", "mountPath": DATA}, {"name": "config", "mountPath": CONFIG}]
    template = {
        "spec": {
            "containers": [
                container(
                    kind.default_container or "main",
                    f"{CREDENTIALS}/namespace",
                    DATA,
                    f"{CONFIG}/key",
                    volumeMounts=mounts,
                    **container_fields,
                )
            ],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "config", "configMap": {"name": "hostdiff"}},
            ],
        }
    }
    specs = {rtype: {"replicas": n, "template": template} for rtype, n in replicas.items()}
    return {
        "apiVersion": kind.resource.api_version,
        "kind": kind.kind,
        "metadata": {"name": f"hostdiff-{kind.lower}", "namespace": NAMESPACE},
        "spec": {"runPolicy": {"cleanPodPolicy": "Running"}, kind.replica_field: specs},
    }


def mpijob() -> dict[str, Any]:
    """The launcher checks its /etc/mpi and /opt/kube too; the worker runs the operator's idle
    command until the launcher is done."""
    job = v1_job(jobkinds.find("MPIJob"), {"Launcher": 1, "Worker": 1})
    specs = job["spec"]["mpiReplicaSpecs"]
    specs["Launcher"] = json.loads(json.dumps(specs["Launcher"]))  # its own copy to change
    launcher = specs["Launcher"]["template"]["spec"]["containers"][0]
    launcher["command"] += ["/etc/mpi/hostfile", "/opt/kube/kubectl"]
    specs["Worker"]["template"] = {
        "spec": {"containers": [{"name": "worker", "image": hostimage.HOST_IMAGE}]}
    }
    return job


def mxjob() -> dict[str, Any]:
    job = v1_job(jobkinds.find("MXJob"), {"Scheduler": 1, "Server": 1, "Worker": 1})
    job["spec"]["jobMode"] = "MXTrain"
    return job


def trainjob(runtime: str, *paths: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": f"hostdiff-{runtime}", "namespace": NAMESPACE},
        "spec": {
            "runtimeRef": {"name": runtime},
            "trainer": {
                "numNodes": 1,
                "command": ["python3", "-c", SCRIPT.format(mark=MARK), *paths],
            },
        },
    }


def jobs() -> list[dict[str, Any]]:
    find = jobkinds.find
    return [
        v1_job(find("PyTorchJob"), {"Master": 1, "Worker": 1}),
        v1_job(find("TFJob"), {"Worker": 1}, workingDir=WORK),
        v1_job(find("XGBoostJob"), {"Master": 1}),
        v1_job(find("JAXJob"), {"Worker": 1}),
        v1_job(find("PaddleJob"), {"Worker": 1}),
        mxjob(),
        mpijob(),
        trainjob("torch-distributed", f"{CREDENTIALS}/namespace"),
        trainjob("mpi-distributed", f"{CREDENTIALS}/namespace", SSH),
    ]


HELLO = """
import os, sys
tag = sys.argv[1] if len(sys.argv) > 1 else 'submit'
open(f"hello-{tag}-{os.environ.get('RANK', '0')}.txt", 'w').write(os.getcwd())
print('hello from', os.getcwd(), flush=True)
"""

RUN_JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "hello-run"},
    "spec": {
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "pytorch",
                                "image": hostimage.HOST_IMAGE,
                                "command": ["python3", "hello.py", "run"],
                            }
                        ]
                    }
                },
            }
        }
    },
}

SDK_CHECK = """
import json, sys
from kubeflow.training import TrainingClient
from kubeflow.training.utils import utils

kubeconfig, namespace = sys.argv[1:3]
client = TrainingClient(config_file=kubeconfig, namespace=namespace)
jobs = client.list_jobs(job_kind="PyTorchJob")
print(json.dumps({
    "in_pod": utils.is_running_in_k8s(),
    "jobs": sorted(job.metadata.name for job in jobs),
    "succeeded": client.is_job_succeeded("hostdiff-pytorchjob", job_kind="PyTorchJob"),
}))
"""


@dataclass
class Scenario:
    before: Snapshot = frozenset()
    after: Snapshot = frozenset()
    started_from: Path = Path()
    project: Path = Path()
    outcomes: dict[str, str] = field(default_factory=dict)  # job name -> final condition
    logs: dict[str, str] = field(default_factory=dict)
    cli: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    sdk: subprocess.CompletedProcess[str] | None = None
    hostname: tuple[str, str] = ("", "")
    etc_hosts: tuple[str, str] = ("", "")


def kubeflow_training() -> Path | None:
    given = os.environ.get(SDK_ENV)
    directory = Path(given) if given else SDK_DIR
    return directory if (directory / "kubeflow" / "training" / "__init__.py").exists() else None


def resource_of(job: dict[str, Any]) -> kube.Resource:
    return jobkinds.of(job).resource


def finished(job: dict[str, Any]) -> str | None:
    """The job's terminal condition type, once it has one."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in (
            "Succeeded",
            "Complete",
            "Failed",
        ):
            return str(condition["type"])
    return None


async def run_jobs(kubeconfig: str, scenario: Scenario) -> None:
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        namespaces = kube.Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
        configmaps = kube.Resource("", "v1", "configmaps", kind="ConfigMap")
        for name in (NAMESPACE, CLI_NAMESPACE):
            await client.create(namespaces, {"metadata": {"name": name}})
        await client.create(
            configmaps, {"metadata": {"name": "hostdiff"}, "data": {"key": "value"}},
            namespace=NAMESPACE,
        )  # fmt: skip
        submitted = jobs()
        for job in submitted:
            await client.create(resource_of(job), job, namespace=NAMESPACE)

        async def outcome(job: dict[str, Any]) -> None:
            name = job["metadata"]["name"]

            async def done() -> str | None:
                current = await client.get(resource_of(job), name, namespace=NAMESPACE)
                return finished(current)

            scenario.outcomes[name] = await eventually(
                done, f"{name} finished", timeout=JOB_TIMEOUT
            )

        await asyncio.gather(*(outcome(job) for job in submitted))
        pods = await client.list(kinds.PODS, namespace=NAMESPACE)
        for pod in pods.get("items") or []:
            name = pod["metadata"]["name"]
            container = pod["spec"]["containers"][0]["name"]
            scenario.logs[name] = await log_of(client, NAMESPACE, name, container)


def kubetrain(
    args: list[str], cwd: Path, kubeconfig: str, home: Path
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(KUBETRAIN_KUBECONFIG=kubeconfig, KUBETRAIN_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "kubetrain", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )


def typed_in_a_project(scenario: Scenario, kubeconfig: str, home: Path) -> None:
    project = scenario.project
    project.mkdir()
    (project / "hello.py").write_text(HELLO, encoding="utf-8")
    (project / "job.yaml").write_text(yaml.safe_dump(RUN_JOB), encoding="utf-8")
    ns = ["-n", CLI_NAMESPACE]
    scenario.cli["submit"] = kubetrain(
        ["submit", "pytorch", "--name", "hello-submit", "--workers", "2", *ns, "--", "python3",
         "hello.py"], project, kubeconfig, home,
    )  # fmt: skip
    scenario.cli["wait"] = kubetrain(
        ["wait", "hello-submit", "--for", "Succeeded", "--timeout", "4m", *ns],
        project, kubeconfig, home,
    )  # fmt: skip
    scenario.cli["run"] = kubetrain(["run", "-f", "job.yaml", *ns], project, kubeconfig, home)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    base = tmp_path_factory.mktemp("hostdiff")
    problem = e2e._isolation_problem(base / "probe")
    if problem:
        pytest.skip(problem)
    result = Scenario(started_from=base / "started-here", project=base / "proj")
    result.started_from.mkdir()
    (base / "pods-home").mkdir()
    (base / "home").mkdir()
    result.before = snapshot()
    hostname, etc_hosts = socket.gethostname(), Path("/etc/hosts").read_text()
    environ = {"HOME": str(base / "pods-home")}
    with e2e.local_plane(base / "home", cwd=result.started_from, environ=environ) as plane:
        run(run_jobs(plane.kubeconfig, result))
        typed_in_a_project(result, plane.kubeconfig, base / "cli-home")
        sdk = kubeflow_training()
        if sdk is not None:
            env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTHONPATH")}
            env["PYTHONPATH"] = str(sdk)
            result.sdk = subprocess.run(
                [sys.executable, "-c", SDK_CHECK, plane.kubeconfig, NAMESPACE],
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT,
                env=env,
                cwd=base,
            )
    result.after = snapshot()
    result.hostname = (hostname, socket.gethostname())
    result.etc_hosts = (etc_hosts, Path("/etc/hosts").read_text())
    return result


def test_jobs_of_every_kind_see_what_the_host_lacks(scenario: Scenario) -> None:
    """Each pod found the ServiceAccount files, its volumes and its working directory."""
    expected = {
        job["metadata"]["name"]: "Complete" if job["kind"] == "TrainJob" else "Succeeded"
        for job in jobs()
    }
    assert scenario.outcomes == expected, json.dumps(scenario.logs, indent=1)[-6000:]
    assert any(f"cwd {WORK} missing []" in log for log in scenario.logs.values()), scenario.logs


def test_nothing_outside_kubetrain_home_changed(scenario: Scenario) -> None:
    added = sorted(scenario.after - scenario.before)
    removed = sorted(scenario.before - scenario.after)
    assert (added, removed) == ([], []), f"added: {added}\nremoved: {removed}"
    assert list(scenario.started_from.iterdir()) == [], "a pod wrote where the plane started"
    for directory in (REPOSITORY, Path("/tmp"), scenario.started_from):
        assert not (directory / MARK).exists(), f"a pod without workingDir wrote in {directory}"
    assert scenario.hostname[0] == scenario.hostname[1]
    assert scenario.etc_hosts[0] == scenario.etc_hosts[1]


def test_submit_and_run_typed_in_a_project_run_its_script_there(scenario: Scenario) -> None:
    """``cd proj && kubetrain submit pytorch --workers 2 -- python3 hello.py`` finds
    ./hello.py, and so does ``kubetrain run -f job.yaml`` of a template without workingDir."""
    for step in ("submit", "wait", "run"):
        done = scenario.cli[step]
        assert done.returncode == 0, f"{step}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    written = {p.name: p.read_text() for p in scenario.project.glob("hello-*.txt")}
    here = str(scenario.project)
    assert written == {
        "hello-submit-0.txt": here,
        "hello-submit-1.txt": here,
        "hello-run-0.txt": here,
    }


def test_the_kubeflow_training_sdk_imports_and_runs_after_jobs_ran(scenario: Scenario) -> None:
    """kubeflow-training 1.9.4 takes a directory /var/run/secrets/kubernetes.io for proof that
    it runs in a pod, and then fails at import reading the namespace file: the node made that
    directory on the host before."""
    if scenario.sdk is None:
        pytest.skip(
            f"kubeflow-training=={SDK_VERSION} is not in {SDK_DIR}: `make test` installs it "
            f"there (set {SDK_ENV} to use another directory)"
        )
    done = scenario.sdk
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {
        "in_pod": False,
        "jobs": ["hostdiff-pytorchjob"],
        "succeeded": True,
    }
