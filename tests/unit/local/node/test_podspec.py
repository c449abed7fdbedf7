"""A Pod (and what it refers to) turned into runtime specs the kubelet's way: ``$(VAR)``
expansion (kube's expansion tests), the environment (envFrom, valueFrom, the downward API),
the command, volumes and mounts, limits and GPUs, and the errors the kubelet reports."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from kubetrain.local.node import podspec, runtime

HOST = podspec.Host(
    "node-a",
    "127.0.0.1",
    allocatable={"cpu": "4", "memory": "8Gi"},
    base_env=(("PATH", "/usr/bin:/bin"), ("LANG", "C.UTF-8")),
)
CONTEXT = {
    "VAR_A": "A",
    "VAR_B": "B",
    "VAR_C": "C",
    "VAR_REF": "$(VAR_A)",
    "VAR_EMPTY": "",
    "GOOD_ODDS": "5:1",
    "BIG_MONEY": "$1",
}

# kube's third_party/forked/golang/expansion/expand_test.go, case for case where it applies
EXPANSIONS = {
    "a whole variable": ("$(VAR_A)", "A"),
    "a variable in the middle": ("___$(VAR_B)___", "___B___"),
    "variables back to back": ("$(VAR_A)$(VAR_B)$(VAR_C)", "ABC"),
    "a reference is not expanded again": ("$(VAR_REF)", "$(VAR_A)"),
    "an empty value": ("foo$(VAR_EMPTY)bar", "foobar"),
    "an unknown name stays": ("$(VAR_DNE)", "$(VAR_DNE)"),
    "an escaped operator": ("$$(VAR_B)", "$(VAR_B)"),
    "an escaped operator then a reference": ("$$$(VAR_A)", "$A"),
    "many escapes": ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
    "many escapes then a reference": ("$$$$$$$(GOOD_ODDS)", "$$$5:1"),
    "an unclosed reference": ("$(VAR_A", "$(VAR_A"),
    "no parenthesis": ("$VAR_A", "$VAR_A"),
    "an operator at the end": ("$(VAR_A)$", "A$"),
    "a lone operator": ("$", "$"),
    "an empty name": ("$()", "$()"),
    "a doubled operator alone": ("$$", "$"),
    "an escape inside text": ("f000-$$VAR_A", "f000-$VAR_A"),
    "nothing to expand": ("plain text", "plain text"),
}


@pytest.mark.parametrize(("given", "expected"), EXPANSIONS.values(), ids=EXPANSIONS.keys())
def test_expansion_follows_kubernetes(given: str, expected: str) -> None:
    assert podspec.expand(given, podspec.mapping_for(CONTEXT)) == expected


# -- builders ---------------------------------------------------------------------------------


def make_pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "train-worker-0",
            "namespace": "team",
            "uid": "uid-1",
            "labels": {"app": "train", "tier": "gpu"},
            "annotations": {"batch.kubernetes.io/job-completion-index": "3"},
        },
        "spec": {
            "nodeName": "node-a",
            "serviceAccountName": "trainer",
            "containers": list(containers) or [container()],
            **spec,
        },
    }


def container(name: str = "main", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "python:3", "command": ["python3", "-c", "pass"], **fields}


def configmap(data: dict[str, str], **more: Any) -> dict[str, Any]:
    return {"metadata": {"name": "cfg"}, "data": data, **more}


def secret(data: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "creds"},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def env_of(pod: dict[str, Any], sources: podspec.Sources | None = None) -> dict[str, str]:
    c = pod["spec"]["containers"][0]
    return dict(podspec.environment(pod, c, sources or podspec.Sources(), HOST).env)


# -- the environment ----------------------------------------------------------------------------


def test_values_expand_against_what_is_defined_before_them() -> None:
    pod = make_pod(
        container(
            env=[
                {"name": "FIRST", "value": "one"},
                {"name": "BOTH", "value": "$(FIRST)-$(LATER)"},
                {"name": "LATER", "value": "two"},
                {"name": "ESCAPED", "value": "$$(FIRST)"},
            ]
        )
    )
    assert env_of(pod) == {
        "FIRST": "one",
        "BOTH": "one-$(LATER)",
        "LATER": "two",
        "ESCAPED": "$(FIRST)",
    }


def test_env_from_comes_first_with_its_prefix_and_env_overrides_it() -> None:
    pod = make_pod(
        container(
            envFrom=[
                {"configMapRef": {"name": "cfg"}, "prefix": "CFG_"},
                {"secretRef": {"name": "creds"}},
            ],
            env=[{"name": "CFG_MODE", "value": "override"}],
        )
    )
    sources = podspec.Sources(
        configmaps={"cfg": configmap({"MODE": "fast", "1BAD": "x", "SIZE": "3"})},
        secrets={"creds": secret({"TOKEN": "s3cret"})},
    )
    environ = podspec.environment(pod, pod["spec"]["containers"][0], sources, HOST)
    assert dict(environ.env) == {
        "CFG_1BAD": "x",
        "CFG_MODE": "override",
        "CFG_SIZE": "3",
        "TOKEN": "s3cret",
    }
    without_prefix = make_pod(container(envFrom=[{"configMapRef": {"name": "cfg"}}]))
    environ = podspec.environment(
        without_prefix, without_prefix["spec"]["containers"][0], sources, HOST
    )
    assert environ.skipped == ("1BAD",)
    assert "1BAD" not in dict(environ.env)


REFERENCE_ERRORS = {
    "a missing ConfigMap": (
        {"configMapKeyRef": {"name": "nope", "key": "k"}},
        'configmap "nope" not found',
    ),
    "a missing key": (
        {"configMapKeyRef": {"name": "cfg", "key": "absent"}},
        "couldn't find key absent in ConfigMap team/cfg",
    ),
    "a missing Secret": ({"secretKeyRef": {"name": "nope", "key": "k"}}, 'secret "nope" not found'),
    "a missing Secret key": (
        {"secretKeyRef": {"name": "creds", "key": "absent"}},
        "couldn't find key absent in Secret team/creds",
    ),
    "an unsupported field": (
        {"fieldRef": {"fieldPath": "spec.priority"}},
        "unsupported fieldPath: spec.priority",
    ),
}
SOURCES = podspec.Sources(
    configmaps={"cfg": configmap({"MODE": "fast"})}, secrets={"creds": secret({"TOKEN": "t"})}
)


@pytest.mark.parametrize(
    ("value_from", "message"), REFERENCE_ERRORS.values(), ids=REFERENCE_ERRORS.keys()
)
def test_an_unresolvable_reference_is_a_config_error(
    value_from: dict[str, Any], message: str
) -> None:
    pod = make_pod(container(env=[{"name": "X", "valueFrom": value_from}]))
    with pytest.raises(podspec.SpecError) as caught:
        env_of(pod, SOURCES)
    assert caught.value.reason == "CreateContainerConfigError"
    assert caught.value.message == message


def test_optional_references_that_do_not_resolve_are_left_out() -> None:
    pod = make_pod(
        container(
            envFrom=[{"configMapRef": {"name": "nope", "optional": True}}],
            env=[
                {
                    "name": "A",
                    "valueFrom": {
                        "configMapKeyRef": {"name": "nope", "key": "k", "optional": True}
                    },
                },
                {
                    "name": "B",
                    "valueFrom": {"secretKeyRef": {"name": "creds", "key": "no", "optional": True}},
                },
                {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "MODE"}}},
                {"name": "D", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "TOKEN"}}},
            ],
        )
    )
    assert env_of(pod, SOURCES) == {"C": "fast", "D": "t"}


DOWNWARD = {
    "metadata.name": "train-worker-0",
    "metadata.namespace": "team",
    "metadata.uid": "uid-1",
    "metadata.labels['app']": "train",
    "metadata.labels['missing']": "",
    "metadata.annotations['batch.kubernetes.io/job-completion-index']": "3",
    "spec.nodeName": "node-a",
    "spec.serviceAccountName": "trainer",
    "status.podIP": "127.0.0.1",
    "status.hostIP": "127.0.0.1",
}


@pytest.mark.parametrize(("path", "value"), DOWNWARD.items(), ids=DOWNWARD.keys())
def test_the_downward_api_in_env(path: str, value: str) -> None:
    pod = make_pod(container(env=[{"name": "V", "valueFrom": {"fieldRef": {"fieldPath": path}}}]))
    assert env_of(pod) == {"V": value}


RESOURCES = {
    "a cpu limit in millicores": ({"limits": {"cpu": "500m"}}, "limits.cpu", "1m", "500"),
    "a cpu limit rounded up to cores": ({"limits": {"cpu": "500m"}}, "limits.cpu", None, "1"),
    "a memory limit in MiB": ({"limits": {"memory": "100Mi"}}, "limits.memory", "1Mi", "100"),
    "a memory request in bytes": (
        {"requests": {"memory": "1Ki"}},
        "requests.memory",
        None,
        "1024",
    ),
    "no limit: the node's allocatable": ({}, "limits.memory", "1Gi", "8"),
    "no request: zero": ({}, "requests.cpu", None, "0"),
}


@pytest.mark.parametrize(
    ("resources", "resource", "divisor", "value"), RESOURCES.values(), ids=RESOURCES.keys()
)
def test_resource_field_refs(
    resources: dict[str, Any], resource: str, divisor: str | None, value: str
) -> None:
    ref: dict[str, Any] = {"resource": resource}
    if divisor:
        ref["divisor"] = divisor
    pod = make_pod(
        container(resources=resources, env=[{"name": "R", "valueFrom": {"resourceFieldRef": ref}}])
    )
    assert env_of(pod) == {"R": value}


# -- the container spec -------------------------------------------------------------------------


def test_a_container_spec_is_fully_resolved() -> None:
    pod = make_pod(
        container(
            command=["torchrun", "--nproc=$(NPROC)"],
            args=["train.py", "--out=$(OUT)/$(POD_NAME)", "$$(LITERAL)"],
            env=[
                {"name": "NPROC", "value": "2"},
                {"name": "OUT", "value": "/data"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "LANG", "value": "en_US.UTF-8"},
            ],
            workingDir="/work",
            resources={"limits": {"memory": "100Mi", "nvidia.com/gpu": "2"}},
            volumeMounts=[
                {"name": "data", "mountPath": "/data", "readOnly": True},
                {"name": "data", "mountPath": "/out", "subPathExpr": "$(POD_NAME)"},
            ],
        )
    )
    spec, _ = podspec.container_spec(
        pod, pod["spec"]["containers"][0], podspec.Sources(), HOST, gpus=("0", "1")
    )
    assert spec.argv == (
        "torchrun",
        "--nproc=2",
        "train.py",
        "--out=/data/train-worker-0",
        "$(LITERAL)",
    )
    env = dict(spec.env)
    assert env["PATH"] == "/usr/bin:/bin"  # from the node's base environment
    assert env["LANG"] == "en_US.UTF-8"  # the pod's own wins
    assert env["HOSTNAME"] == "train-worker-0"
    assert env["NPROC"] == "2"
    assert spec.working_dir == "/work"
    assert spec.memory_limit == 100 * 2**20
    assert spec.gpus == ("0", "1")
    assert spec.mounts == (
        runtime.Mount("data", "/data", read_only=True),
        runtime.Mount("data", "/out", sub_path="train-worker-0"),
    )
    assert podspec.gpu_limit(pod["spec"]["containers"][0]) == 2


def test_a_container_without_a_command_cannot_run_here() -> None:
    pod = make_pod(container(), {"name": "sidecar", "image": "busybox", "args": ["sleep"]})
    with pytest.raises(podspec.NoCommand) as caught:
        podspec.container_spec(pod, pod["spec"]["containers"][1], podspec.Sources(), HOST)
    message = caught.value.message
    assert caught.value.reason == "CreateContainerError"
    assert message.startswith("Pod team/train-worker-0: spec.containers[1].command: required")
    assert "images are not pulled locally" in message


def test_what_a_pod_refers_to() -> None:
    pod = make_pod(
        container(
            envFrom=[{"configMapRef": {"name": "a"}}, {"secretRef": {"name": "s1"}}],
            env=[{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s2", "key": "k"}}}],
        ),
        volumes=[
            {"name": "v1", "configMap": {"name": "b"}},
            {"name": "v2", "secret": {"secretName": "s3"}},
            {"name": "v3", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "v4", "projected": {"sources": [{"configMap": {"name": "c"}}]}},
        ],
    )
    assert podspec.needs(pod) == podspec.Needs(
        frozenset({"a", "b", "c"}), frozenset({"s1", "s2", "s3"}), frozenset({"data"})
    )


# -- volumes --------------------------------------------------------------------------------------


def volumes_of(
    volumes: list[dict[str, Any]], sources: podspec.Sources | None = None
) -> dict[str, runtime.Volume]:
    pod = make_pod(volumes=volumes)
    sandbox = podspec.sandbox(pod, sources or podspec.Sources(), HOST, "hosts text")
    assert (sandbox.uid, sandbox.namespace, sandbox.name) == ("uid-1", "team", "train-worker-0")
    assert sandbox.hostname == "train-worker-0"
    assert sandbox.hosts == "hosts text"
    return {v.name: v for v in sandbox.volumes}


def test_directories_from_empty_dirs_host_paths_and_claims() -> None:
    sources = podspec.Sources(
        claims={"data": {"spec": {"volumeName": "pv-1"}}},
        volumes={"pv-1": {"spec": {"hostPath": {"path": "/srv/volumes/pv-1"}}}},
    )
    found = volumes_of(
        [
            {"name": "scratch", "emptyDir": {"medium": "Memory"}},
            {"name": "host", "hostPath": {"path": "/datasets"}},
            {"name": "claim", "persistentVolumeClaim": {"claimName": "data"}},
        ],
        sources,
    )
    assert found == {
        "scratch": runtime.Volume("scratch", "empty"),
        "host": runtime.Volume("host", "host", host_path="/datasets"),
        "claim": runtime.Volume("claim", "host", host_path="/srv/volumes/pv-1"),
    }


def test_files_from_config_maps_secrets_and_the_downward_api() -> None:
    sources = podspec.Sources(
        configmaps={"cfg": configmap({"a.yaml": "a: 1", "b.yaml": "b: 2"})},
        secrets={"creds": secret({"token": "t0k"})},
    )
    found = volumes_of(
        [
            {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 0o640}},
            {
                "name": "one",
                "configMap": {
                    "name": "cfg",
                    "items": [{"key": "b.yaml", "path": "sub/b", "mode": 0o600}],
                },
            },
            {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}},
            {
                "name": "info",
                "downwardAPI": {
                    "items": [
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                        {
                            "path": "mem",
                            "resourceFieldRef": {
                                "containerName": "main",
                                "resource": "limits.memory",
                                "divisor": "1Gi",
                            },
                        },
                    ]
                },
            },
            {
                "name": "all",
                "projected": {
                    "defaultMode": 0o444,
                    "sources": [
                        {
                            "configMap": {
                                "name": "cfg",
                                "items": [{"key": "a.yaml", "path": "a.yaml"}],
                            }
                        },
                        {"secret": {"name": "creds"}},
                        {
                            "downwardAPI": {
                                "items": [
                                    {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}
                                ]
                            }
                        },
                    ],
                },
            },
        ],
        sources,
    )
    assert found["cfg"].files == (
        runtime.File("a.yaml", b"a: 1", 0o640),
        runtime.File("b.yaml", b"b: 2", 0o640),
    )
    assert found["one"].files == (runtime.File("sub/b", b"b: 2", 0o600),)
    assert found["creds"].files == (runtime.File("token", b"t0k", 0o400),)
    assert found["info"].files == (
        runtime.File("labels", b'app="train"\ntier="gpu"', 0o644),
        runtime.File("name", b"train-worker-0", 0o644),
        runtime.File("mem", b"8", 0o644),
    )
    assert found["all"].files == (
        runtime.File("a.yaml", b"a: 1", 0o444),
        runtime.File("token", b"t0k", 0o444),
        runtime.File("ns", b"team", 0o444),
    )
    assert {v.kind for v in found.values()} == {"files"}


MOUNT_ERRORS = {
    "a missing ConfigMap": (
        {"configMap": {"name": "nope"}},
        'MountVolume.SetUp failed for volume "v" : configmap "nope" not found',
    ),
    "a missing key": (
        {"configMap": {"name": "cfg", "items": [{"key": "zz", "path": "zz"}]}},
        'MountVolume.SetUp failed for volume "v" : configmap references non-existent config '
        "key: zz",
    ),
    "a missing claim": (
        {"persistentVolumeClaim": {"claimName": "nope"}},
        'MountVolume.SetUp failed for volume "v" : persistentvolumeclaim "nope" not found',
    ),
    "an unbound claim": (
        {"persistentVolumeClaim": {"claimName": "pending"}},
        'MountVolume.SetUp failed for volume "v" : persistentvolumeclaim "pending" is not bound',
    ),
    "an unsupported type": (
        {"nfs": {"server": "x", "path": "/"}},
        "volume type nfs is not supported",
    ),
}


@pytest.mark.parametrize(("source", "message"), MOUNT_ERRORS.values(), ids=MOUNT_ERRORS.keys())
def test_a_volume_that_cannot_be_set_up_says_which_and_why(
    source: dict[str, Any], message: str
) -> None:
    sources = podspec.Sources(
        configmaps={"cfg": configmap({"a": "1"})}, claims={"pending": {"spec": {}}}
    )
    with pytest.raises(podspec.SpecError) as caught:
        volumes_of([{"name": "v", **source}], sources)
    assert caught.value.reason == "FailedMount"
    assert message in caught.value.message


def test_optional_volumes_that_do_not_resolve_are_empty() -> None:
    found = volumes_of([{"name": "v", "configMap": {"name": "nope", "optional": True}}])
    assert found["v"] == runtime.Volume("v", "files")


def test_hostname_and_subdomain() -> None:
    pod = make_pod(hostname="master-0", subdomain="job")
    assert podspec.hostname(pod) == "master-0"
    long = copy.deepcopy(make_pod())
    long["metadata"]["name"] = "x" * 62 + "-abc"
    assert podspec.hostname(long) == "x" * 62
