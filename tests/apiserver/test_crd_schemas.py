"""kubetrain's CRDs carry Kubernetes' own schemas where a job keeps Kubernetes objects (pod
templates, env vars, resources, a JobSet spec), so the API server itself explains, refuses and
merges inside them: ``kubectl explain`` reads a pod-template field, strict field validation
(kubectl's default) refuses an unknown field there and ``--validate=ignore`` drops it, a bad
quantity is refused, every built-in runtime installs, server-side apply merges a TrainJob's
``trainer.env`` by name, and each CRD stays well below what the server can store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.fixtures.cluster import Kubectl

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# etcd's default --max-request-bytes: the largest object kube-apiserver can store
ETCD_REQUEST_LIMIT = 1572864

WORKER = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]"

PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: example/trainer:1
    Worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: example/trainer:1
              {extra}
"""

RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: torch
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
                      image: example/torch:1
"""

TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: merged
spec:
  runtimeRef:
    name: torch
    kind: TrainingRuntime
  suspend: true
  trainer:
    env:
      - name: A
        value: "1"
      - name: B
        value: "2"
"""

# another tool's apply: only the entry it cares about
TRAINJOB_B_ONLY = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: merged
spec:
  trainer:
    env:
      - name: B
        value: "2"
"""


def pytorchjob(name: str, extra: str = "") -> str:
    return PYTORCHJOB.format(name=name, extra=extra)


def test_kubectl_explain_reads_a_pod_template_field(kubectl: Kubectl) -> None:
    # kubectl explain walks a map (the replica specs) without its key: ".Worker." is not a
    # field to it, on either server
    out = kubectl(
        "explain", "pytorchjob.spec.pytorchReplicaSpecs.template.spec.containers.resources"
    ).stdout
    assert "FIELD: resources <Object>" in out
    assert "Compute Resources required by this container." in out
    fields = re.findall(r"^  (\w+)\t", out, re.MULTILINE)
    assert fields == ["claims", "limits", "requests"], out


def test_kubectl_explain_reads_a_trainjobs_env_and_a_runtimes_jobset(kubectl: Kubectl) -> None:
    env = kubectl("explain", "trainjob.spec.trainer.env").stdout
    assert "name\t<string> -required-" in env
    assert "valueFrom\t<Object>" in env
    jobset = kubectl("explain", "clustertrainingruntime.spec.template.spec").stdout
    for field in ("replicatedJobs", "successPolicy", "volumeClaimPolicies"):
        assert f"  {field}\t" in jobset, field


def test_an_unknown_field_in_a_pod_template_is_refused_under_strict_validation(
    kubectl: Kubectl, namespace: str
) -> None:
    manifest = pytorchjob("typo", extra="comand: [python3]")
    refused = kubectl("apply", "-n", namespace, "-f", "-", input=manifest, check=False)
    assert refused.returncode != 0
    assert (
        'PyTorchJob in version "v1" cannot be handled as a PyTorchJob: strict decoding error: '
        f'unknown field "{WORKER}.comand"'
    ) in refused.stderr
    got = kubectl("get", "-n", namespace, "pytorchjobs", "-o", "name").stdout
    assert got.strip() == ""


def test_an_unknown_field_in_a_pod_template_is_dropped_when_not_validated(
    kubectl: Kubectl, namespace: str
) -> None:
    warned = kubectl(
        "apply",
        "-n",
        namespace,
        "--validate=warn",
        "-f",
        "-",
        input=pytorchjob("warned", extra="comand: [python3]"),
    )
    assert f'unknown field "{WORKER}.comand"' in warned.stderr
    kubectl(
        "apply",
        "-n",
        namespace,
        "--validate=ignore",
        "-f",
        "-",
        input=pytorchjob("ignored", extra="comand: [python3]"),
    )
    for name in ("warned", "ignored"):
        job = json.loads(kubectl("get", "-n", namespace, "pytorchjob", name, "-o", "json").stdout)
        worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
        assert worker["containers"][0] == {"name": "pytorch", "image": "example/trainer:1"}


def test_a_quantity_that_is_not_one_is_refused(kubectl: Kubectl, namespace: str) -> None:
    manifest = pytorchjob("cpu", extra="resources: {limits: {cpu: lots}}")
    refused = kubectl("apply", "-n", namespace, "-f", "-", input=manifest, check=False)
    assert refused.returncode != 0
    assert (
        f'The PyTorchJob "cpu" is invalid: {WORKER}.resources.limits.cpu: Invalid value: "lots": '
        f"{WORKER}.resources.limits.cpu in body should match '^(\\+|-)?"
    ) in refused.stderr
    accepted = pytorchjob("cpu", extra='resources: {limits: {cpu: 2, memory: "1Gi"}}')
    kubectl("apply", "-n", namespace, "-f", "-", input=accepted)


def test_every_built_in_runtime_installs(kubectl: Kubectl) -> None:
    kubectl("apply", "-k", str(DEPLOY / "runtimes"))
    installed = kubectl("get", "clustertrainingruntimes", "-o", "name").stdout.split()
    for path in sorted((DEPLOY / "runtimes").glob("*_*.yaml")):
        name = yaml.safe_load(path.read_text())["metadata"]["name"]
        assert f"clustertrainingruntime.trainer.kubeflow.org/{name}" in installed, path.name


def test_the_one_policy_rule_evaluates_on_the_empty_jax_and_xgboost_policies(
    kubectl: Kubectl, namespace: str
) -> None:
    """kube-apiserver 1.28's CEL could not evaluate ``has()`` on an object schema without
    properties, so it refused every jax and xgboost runtime with an evaluation error; the
    empty policies keep no fields instead, and the rule reads as upstream's."""
    both = RUNTIME.replace(
        "    torch:\n      numProcPerNode: auto\n", "    jax: {}\n    xgboost: {}\n"
    )
    refused = kubectl("apply", "-n", namespace, "-f", "-", input=both, check=False)
    assert refused.returncode != 0
    assert (
        'The TrainingRuntime "torch" is invalid: spec.mlPolicy: Invalid value: ' in refused.stderr
    )
    assert "Only one of the policy can be configured" in refused.stderr
    assert "evaluating rule" not in refused.stderr
    jax = RUNTIME.replace("    torch:\n      numProcPerNode: auto\n", "    jax: {}\n")
    kubectl("apply", "-n", namespace, "-f", "-", input=jax)


def test_server_side_apply_merges_a_trainjobs_env_by_name(kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=RUNTIME)

    def apply(manager: str, manifest: str) -> None:
        kubectl(
            "apply",
            "-n",
            namespace,
            "--server-side",
            f"--field-manager={manager}",
            "-f",
            "-",
            input=manifest,
        )

    apply("alice", TRAINJOB)
    # An atomic list would conflict here (alice owns the whole list, bob sends another one);
    # a list keyed by name lets bob own the entry he sends, alongside alice.
    apply("bob", TRAINJOB_B_ONLY)
    # alice's next apply leaves B out: bob still owns it, so it stays
    apply("alice", TRAINJOB.replace('      - name: B\n        value: "2"\n', ""))
    job = json.loads(
        kubectl(
            "get", "-n", namespace, "trainjob", "merged", "-o", "json", "--show-managed-fields"
        ).stdout
    )
    assert job["spec"]["trainer"]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
    ]
    owned = {
        entry["manager"]: set(entry["fieldsV1"]["f:spec"]["f:trainer"]["f:env"])
        for entry in job["metadata"]["managedFields"]
        if entry["manager"] in ("alice", "bob")
    }
    assert owned == {"alice": {'k:{"name":"A"}'}, "bob": {'k:{"name":"B"}'}}


def test_every_crd_is_stored_well_below_the_size_limit(kubectl: Kubectl) -> None:
    for path in sorted((DEPLOY / "crds").glob("*_*.yaml")):
        group, plural = path.stem.split("_")  # upstream's file names: <group>_<plural>.yaml
        name = f"{plural}.{group}"
        stored = json.loads(
            kubectl("get", "crd", name, "-o", "json", "--show-managed-fields").stdout
        )
        size = len(json.dumps(stored, separators=(",", ":")))
        assert size < ETCD_REQUEST_LIMIT / 2, f"{name}: {size} bytes"
        annotations = stored["metadata"].get("annotations") or {}
        assert "kubectl.kubernetes.io/last-applied-configuration" not in annotations, name
