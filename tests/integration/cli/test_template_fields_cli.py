"""A misspelt field inside a pod template is refused wherever a job is submitted, with the
field's full path: by ``kubetrain validate`` offline (with the name it should be), and by the
API server's schema for ``kubetrain apply``, ``kubetrain run`` and ``kubectl apply``, in
kube-apiserver's words (the CRDs carry Kubernetes' PodTemplateSpec schema, and kubetrain's
client asks for strict field validation, as kubectl does). Nothing is stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.fixtures.cluster import Kubectl
from tests.integration.cli.conftest import Cli, pytorchjob

JobFile = Callable[[dict[str, Any]], str]
FIELD = "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].comand"
PROBLEM = f'{FIELD}: Unknown field: did you mean "command"?'
# what the API server's schema says, before any admission runs
UNKNOWN = 'unknown field "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].comand"'
STRICT = f"strict decoding error: {UNKNOWN}"


def misspelt(name: str) -> dict[str, Any]:
    job = pytorchjob(name, 1)
    container = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["comand"] = container.pop("command")
    return job


def stored(custom: client.CustomObjectsApi, namespace: str, name: str) -> bool:
    try:
        custom.get_namespaced_custom_object("kubeflow.org", "v1", namespace, "pytorchjobs", name)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


@pytest.mark.parametrize("verb", ["validate", "apply", "run"])
def test_kubetrain_refuses_it_naming_the_field(
    verb: str, job_file: JobFile, kt: Cli, custom: client.CustomObjectsApi, namespace: str
) -> None:
    result = kt(verb, "-f", job_file(misspelt(f"typo-{verb}")), namespaced=verb != "validate")
    assert result.returncode == 1
    if verb == "validate":
        assert f"PyTorchJob/typo-{verb}: {PROBLEM}" in result.stderr
    else:
        assert STRICT in result.stderr
    assert not stored(custom, namespace, f"typo-{verb}")


def test_kubectl_apply_is_refused_naming_the_field(
    job_file: JobFile, kubectl: Kubectl, custom: client.CustomObjectsApi, namespace: str
) -> None:
    result = kubectl("apply", "-n", namespace, "-f", job_file(misspelt("typo")), check=False)
    assert result.returncode != 0
    assert STRICT in result.stderr
    assert not stored(custom, namespace, "typo")
    server_side = kubectl(
        "apply", "--server-side", "-n", namespace, "-f", job_file(misspelt("typo")), check=False
    )
    assert server_side.returncode != 0
    assert UNKNOWN in server_side.stderr
