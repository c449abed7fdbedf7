"""The job lifecycle through the real ``kubetrain`` binary: apply, list, get, events, delete,
suspend, resume, wait, submit and top, and one-line errors for user mistakes.

The operator is simulated (see conftest.py): a test sets the conditions and pods it would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.cli.conftest import NO_SCHEDULER, Cli, Operator, cli_env, pytorchjob

JobFile = Callable[[dict[str, Any]], str]


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """A user mistake: a non-zero exit and exactly one line on stderr, no traceback."""
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_apply_creates_then_reports_unchanged_and_configured(kt: Cli, job_file: JobFile) -> None:
    path = job_file(pytorchjob("train", 2))
    assert ok(kt("apply", "-f", path, binary=True)) == "pytorchjob.kubeflow.org/train created\n"
    assert ok(kt("apply", "-f", path)) == "pytorchjob.kubeflow.org/train unchanged\n"
    changed = pytorchjob("train", 3)
    assert ok(kt("apply", "-f", "-", input=yaml.safe_dump(changed))) == (
        "pytorchjob.kubeflow.org/train configured\n"
    )


def test_apply_prints_each_admission_cause_on_its_own_line(kt: Cli, job_file: JobFile) -> None:
    bad = pytorchjob("bad", 1)
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    bad["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "x"
    result = kt("apply", "-f", job_file(bad))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert (
        "PyTorchJob/bad: spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1" in lines
    )
    assert any("must have at least one container with name pytorch" in line for line in lines)
    assert all(line.startswith("PyTorchJob/bad: spec.") for line in lines)


def test_list_shows_state_and_replicas_and_json_parses(
    kt: Cli, job_file: JobFile, operator: Operator
) -> None:
    ok(kt("apply", "-f", job_file(pytorchjob("a", 2))))
    ok(kt("apply", "-f", job_file(pytorchjob("b", 1, master=False))))
    operator.conditions(
        "PyTorchJob", "a", "Created", "Running",
        startTime="2024-01-01T00:00:00Z", replicaStatuses={"Master": {"active": 1}},
    )  # fmt: skip
    rows = [line.split() for line in ok(kt("list")).splitlines()]
    assert rows[0] == ["KIND", "NAME", "STATE", "AGE", "DURATION", "REPLICAS"]
    assert [r[:3] + r[-1:] for r in rows[1:]] == [
        ["PyTorchJob", "a", "Running", "1/3"],
        ["PyTorchJob", "b", "Pending", "0/1"],
    ]
    listed = json.loads(ok(kt("list", "-o", "json", binary=True)))
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a", "b"]
    assert ok(kt("list", "--state", "running", "-o", "name")) == "pytorchjob.kubeflow.org/a\n"
    assert ok(kt("list", "--kind", "tfjob", "-o", "name")) == ""
    everywhere = ok(kt("list", "-A", namespaced=False))
    assert everywhere.splitlines()[0].split()[0] == "NAMESPACE"


def test_get_shows_conditions_replicas_with_pods_and_events(
    kt: Cli, job_file: JobFile, operator: Operator
) -> None:
    ok(kt("apply", "-f", job_file(pytorchjob("g", 2))))
    operator.conditions("PyTorchJob", "g", "Created", "Running")
    operator.pod("g", "Master", 0)
    worker = operator.pod("g", "Worker", 1)
    operator.pod_status(worker, "Failed", exit_code=3)
    operator.event("PyTorchJob", "g", "SuccessfulCreatePod", "Created pod: g-worker-1")
    text = ok(kt("get", "g", binary=True))
    assert "Running (PyTorchJobRunning" in text
    replicas = text.split("Replicas:\n")[1].split("\n\n")[0].splitlines()
    assert [row.split()[:3] for row in replicas[1:]] == [
        ["master-0", "g-master-0", "Pending"],
        ["worker-0", "-", "-"],
        ["worker-1", "g-worker-1", "Failed"],
    ]
    assert "3 (Error)" in replicas[3]
    assert "Created pod: g-worker-1" in text.split("Events:\n")[1]
    as_json = json.loads(ok(kt("get", "pytorchjob/g", "-o", "json")))
    assert as_json["metadata"]["name"] == "g"
    events = ok(kt("events", "g")).splitlines()
    assert events[0].split()[:4] == ["LAST", "SEEN", "TYPE", "REASON"]
    assert "SuccessfulCreatePod" in events[1]


def test_a_name_used_by_two_kinds_asks_for_kind_slash_name(kt: Cli, job_file: JobFile) -> None:
    ok(kt("apply", "-f", job_file(pytorchjob("same", 1))))
    tf = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "same"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
            "containers": [{"name": "tensorflow", "image": "x"}]}}}}},
    }  # fmt: skip
    ok(kt("apply", "-f", job_file(tf)))
    line = one_line_error(kt("get", "same"))
    assert "job name same is ambiguous" in line
    assert "tfjob/same, pytorchjob/same" in line
    assert "KIND/NAME" in line
    assert "TFJob" in ok(kt("get", "tfjob/same"))


def test_suspend_resume_and_delete(kt: Cli, job_file: JobFile, operator: Operator) -> None:
    ok(kt("apply", "-f", job_file(pytorchjob("s", 1))))
    assert ok(kt("suspend", "s")) == "pytorchjob.kubeflow.org/s suspended\n"
    assert operator.job("PyTorchJob", "s")["spec"]["runPolicy"]["suspend"] is True
    assert ok(kt("suspend", "s")) == "pytorchjob.kubeflow.org/s was already suspended\n"
    assert ok(kt("resume", "s")) == "pytorchjob.kubeflow.org/s resumed\n"
    assert operator.job("PyTorchJob", "s")["spec"]["runPolicy"]["suspend"] is False
    operator.conditions("PyTorchJob", "s", "Created", "Succeeded")
    assert "already succeeded" in one_line_error(kt("suspend", "s"))
    ok(kt("apply", "-f", job_file(pytorchjob("other", 1))))
    assert ok(kt("delete", "--state", "Succeeded")) == "pytorchjob.kubeflow.org/s deleted\n"
    assert ok(kt("list", "-o", "name")) == "pytorchjob.kubeflow.org/other\n"
    assert ok(kt("delete", "--all")) == "pytorchjob.kubeflow.org/other deleted\n"
    assert ok(kt("list", "-o", "name")) == ""


def test_wait_exit_statuses(
    kt: Cli, job_file: JobFile, operator: Operator, kubeconfig: str, cli_home: Any, namespace: str
) -> None:
    ok(kt("apply", "-f", job_file(pytorchjob("w", 1))))
    timed_out = kt("wait", "w", "--for", "Running", "--timeout", "1s")
    assert timed_out.returncode == 2
    assert "still Pending after 1s, not Running" in timed_out.stderr
    waiting = subprocess.Popen(
        [sys.executable, "-m", "kubetrain", "wait", "w", "--for", "Complete", "--timeout", "60s",
         "-n", namespace],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=cli_env(kubeconfig, cli_home),
    )  # fmt: skip
    try:
        operator.conditions("PyTorchJob", "w", "Created", "Running")
        operator.conditions("PyTorchJob", "w", "Created", "Succeeded")
        out, err = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, err
    assert out == "pytorchjob/w Succeeded\n"
    failed = kt("wait", "w", "--for", "Failed", "--timeout", "5s")
    assert failed.returncode == 1
    assert "ended Succeeded" in failed.stderr


def test_submit_dry_run_passes_validate_and_submit_creates(kt: Cli) -> None:
    manifest = ok(
        kt("submit", "pytorch", "--name", "sub", "--workers", "3", "--cpu", "1",
           "-e", "EPOCHS=2", "--dry-run", "--", "python", "-c", "print('hi there')",
           namespaced=False)
    )  # fmt: skip
    checked = kt("validate", "-f", "-", "-q", input=manifest, namespaced=False, binary=True)
    assert checked.returncode == 0, checked.stderr
    job = yaml.safe_load(manifest)
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert master["command"] == ["python", "-c", "print('hi there')"]
    created = kt("submit", "pytorch", "--name", "sub", "--workers", "2", "--", "python", "t.py")
    assert ok(created) == "pytorchjob.kubeflow.org/sub created\n"
    assert "kubetrain logs -f pytorchjob/sub" in created.stderr
    again = kt("submit", "pytorch", "--name", "sub", "--", "python", "t.py")
    assert "already exists" in one_line_error(again)


def test_top_job_sums_the_specs_requests(kt: Cli, job_file: JobFile) -> None:
    ok(kt("apply", "-f", job_file(pytorchjob("big", 3))))
    result = kt("top", "job")
    rows = [line.split() for line in ok(result).splitlines()]
    assert rows[0] == [
        "KIND", "NAME", "STATE", "PODS", "CPU(REQ)", "CPU(USED)", "MEMORY(REQ)", "MEMORY(USED)",
        "GPU(REQ)", "GPU(USED)",
    ]  # fmt: skip
    # nothing runs yet, so nothing is used; the local API server serves metrics.k8s.io
    assert rows[1] == ["PyTorchJob", "big", "Pending", "0/4", "2", "-", "4Gi", "-", "0", "-"]
    assert "requests only" not in result.stderr
    nodes = kt("top", "node", namespaced=False)
    assert nodes.returncode == 0, nodes.stderr


MISTAKES = [
    pytest.param(("get", "nope"), "no such job nope in namespace", id="an unknown job"),
    pytest.param(("get", "pods/x"), "no job kind 'pods'", id="an unknown kind"),
    pytest.param(("list", "--state", "done"), "no job state 'done'", id="an unknown state"),
    pytest.param(("wait", "x", "--timeout", "soon"), "duration 'soon'", id="a bad duration"),
    pytest.param(("apply", "-f", "/nonexistent.yaml"), "/nonexistent.yaml", id="a missing file"),
    pytest.param(("delete",), "name the jobs to delete", id="delete without names"),
    pytest.param(("logs", "nope"), "`kubetrain list -A` shows jobs", id="logs of an unknown job"),
]


@pytest.mark.parametrize(("args", "message"), MISTAKES)
def test_user_mistakes_are_one_line_and_a_non_zero_exit(
    kt: Cli, args: tuple[str, ...], message: str
) -> None:
    assert message in one_line_error(kt(*args, binary=args[0] == "get"))


def test_verbose_adds_the_traceback(kt: Cli) -> None:
    result = kt("get", "nope", "-v")
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("kubetrain: no such job nope")


def test_an_explicit_kubeconfig_beats_the_environment(
    kubeconfig: str, cli_home: Any, namespace: str, tmp_path: Any
) -> None:
    env = cli_env(str(tmp_path / "missing-kubeconfig"), cli_home)
    args = [sys.executable, "-m", "kubetrain", "list", "-n", namespace]
    broken = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert "cannot read kubeconfig" in one_line_error(broken)
    fixed = subprocess.run(
        [*args, "--kubeconfig", kubeconfig], capture_output=True, text=True, env=env, timeout=60
    )
    assert fixed.returncode == 0, fixed.stderr


def test_jobs_are_read_through_the_api_only(
    kt: Cli, job_file: JobFile, custom: client.CustomObjectsApi, namespace: str
) -> None:
    """What kubectl users would do (a create through the API) shows up in list at once."""
    custom.create_namespaced_custom_object(
        "kubeflow.org", "v1", namespace, "pytorchjobs", pytorchjob("viaapi", 1)
    )
    assert "viaapi" in ok(kt("list"))
    assert ok(kt("delete", "viaapi")) == "pytorchjob.kubeflow.org/viaapi deleted\n"
    with pytest.raises(ApiException) as gone:
        custom.get_namespaced_custom_object(
            "kubeflow.org", "v1", namespace, "pytorchjobs", "viaapi"
        )
    assert gone.value.status == 404


TORCH_RUNTIME = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: torch-rt
  labels:
    trainer.kubeflow.org/framework: torch
spec:
  mlPolicy:
    numNodes: 1
    torch:
      numProcPerNode: auto
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime
"""


def trainjob_pod(core: client.CoreV1Api, namespace: str, job: str, index: int, phase: str) -> None:
    """The pod of node ``index`` of a TrainJob, with the labels its JobSet's Job puts on it."""
    name = f"{job}-node-{index}-0"
    labels = {
        "jobset.sigs.k8s.io/jobset-name": job,
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/job-index": str(index),
        "batch.kubernetes.io/job-completion-index": "0",
    }
    spec = {"schedulerName": NO_SCHEDULER, "containers": [{"name": "node", "image": "x:1"}]}
    core.create_namespaced_pod(namespace, {"metadata": {"name": name, "labels": labels},
                                           "spec": spec})  # fmt: skip
    core.patch_namespaced_pod_status(name, namespace, {"status": {"phase": phase}})


def test_trainjobs_are_jobs_too(
    kt: Cli, core: client.CoreV1Api, custom: client.CustomObjectsApi, namespace: str
) -> None:
    refused = kt("submit", "trainjob", "--name", "tj", "--runtime", "missing", "--", "python")
    assert refused.returncode == 1
    assert "must be created before the TrainJob is created" in refused.stderr
    assert ok(kt("apply", "-f", "-", input=TORCH_RUNTIME)) == (
        "trainingruntime.trainer.kubeflow.org/torch-rt created\n"
    )
    submitted = kt(
        "submit", "trainjob", "--name", "tj", "--runtime", "torch-rt",
        "--runtime-kind", "TrainingRuntime", "--nodes", "2", "--cpu", "2",
        "--", "torchrun", "train.py",
    )  # fmt: skip
    assert ok(submitted) == "trainjob.trainer.kubeflow.org/tj created\n"
    rows = [line.split() for line in ok(kt("list")).splitlines()]
    assert rows[1][:3] + rows[1][-1:] == ["TrainJob", "tj", "Created", "0/2"]
    described = ok(kt("get", "trainjob/tj"))
    assert "Kind:" in described
    assert "Replicas:  0/2 running" in described
    # without --nodes the runtime's numNodes (1 in torch-rt) is the count to reach
    submitted = kt(
        "submit", "trainjob", "--name", "tj-runtime-nodes", "--runtime", "torch-rt",
        "--runtime-kind", "TrainingRuntime", "--", "torchrun", "train.py",
    )  # fmt: skip
    assert ok(submitted) == "trainjob.trainer.kubeflow.org/tj-runtime-nodes created\n"
    rows = [line.split() for line in ok(kt("list")).splitlines()]
    assert ["TrainJob", "tj-runtime-nodes", "0/1"] in [[r[0], r[1], r[-1]] for r in rows[1:]]
    assert "Replicas:  0/1 running" in ok(kt("get", "trainjob/tj-runtime-nodes"))
    assert ok(kt("top", "job", "tj")).splitlines()[1].split()[3:5] == ["0/2", "4"]
    # each job counts its own running pods, from one pods list for the namespace
    for job, index, phase in [("tj", 0, "Running"), ("tj", 1, "Pending"),
                              ("tj-runtime-nodes", 0, "Running")]:  # fmt: skip
        trainjob_pod(core, namespace, job, index, phase)
    rows = [line.split() for line in ok(kt("list")).splitlines()]
    assert [[r[1], r[-1]] for r in rows[1:]] == [["tj", "1/2"], ["tj-runtime-nodes", "1/1"]]
    ok(kt("delete", "trainjob/tj-runtime-nodes"))
    assert ok(kt("suspend", "trainjobs/tj")) == "trainjob.trainer.kubeflow.org/tj suspended\n"
    stored = custom.get_namespaced_custom_object(
        "trainer.kubeflow.org", "v1alpha1", namespace, "trainjobs", "tj"
    )
    assert stored["spec"]["suspend"] is True
    complete = {"type": "Complete", "status": "True", "reason": "Done", "message": "done"}
    complete["lastTransitionTime"] = "2024-01-01T00:00:00Z"
    custom.patch_namespaced_custom_object_status(
        "trainer.kubeflow.org", "v1alpha1", namespace, "trainjobs", "tj",
        {"status": {"conditions": [complete]}},
    )  # fmt: skip
    assert (
        ok(kt("wait", "tj", "--for", "Succeeded", "--timeout", "10s")) == "trainjob/tj Complete\n"
    )
    assert ok(kt("list", "--state", "Succeeded", "-o", "name")) == (
        "trainjob.trainer.kubeflow.org/tj\n"
    )


@pytest.mark.skipif(
    bool(os.environ.get("KUBETRAIN_TEST_KUBECONFIG")),
    reason="starts kubetrain's own local control plane",
)
def test_without_a_target_the_local_control_plane_is_started_once(tmp_path: Any) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBETRAIN_KUBECONFIG")}
    env["KUBETRAIN_HOME"] = str(tmp_path / "home")

    def kubetrain(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kubetrain", *args],
            capture_output=True, text=True, env=env, timeout=90,
        )  # fmt: skip

    try:
        first = kubetrain("list")
        assert first.returncode == 0, first.stderr
        assert first.stderr.splitlines() == [
            first.stderr.splitlines()[0],
            "No jobs found in namespace default.",
        ]
        assert first.stderr.startswith("kubetrain: started the local control plane at https://")
        assert "`kubetrain down` stops it" in first.stderr
        second = kubetrain("list")
        assert second.stderr == "No jobs found in namespace default.\n"
    finally:
        assert kubetrain("down").returncode == 0
