"""The container runtime's decisions without an engine: which containers a node with an engine
runs in it and with what (command or the image's entrypoint, env without the host's, limits),
the create request it sends, where it looks for the engine, and the engine's times and log
frames read back."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from kubetrain.frameworks import hostimage
from kubetrain.local.node import podspec, runtime

node_engine = pytest.importorskip("kubetrain.local.node.engine", reason="the containers extra")

ENGINE_HOST = podspec.Host(
    "node-a",
    "127.0.0.1",
    base_env=(("PATH", "/usr/bin:/bin"), ("VIRTUAL_ENV", "/opt/venv")),
    entrypoints={"kubectl-delivery": ("kubectl-delivery",)},
    containers=True,
)


def pod(*containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "train-0", "namespace": "team", "uid": "uid-1"},
        "spec": {"containers": list(containers)},
    }


def spec_of(container: dict[str, Any], host: podspec.Host = ENGINE_HOST) -> runtime.ContainerSpec:
    return podspec.container_spec(pod(container), container, podspec.Sources(), host)[0]


def test_an_image_without_command_runs_its_entrypoint_with_the_args_and_its_own_env() -> None:
    spec = spec_of(
        {
            "name": "main",
            "image": "ghcr.io/team/train:2",
            "args": ["--lr=$(LR)"],
            "env": [{"name": "LR", "value": "0.1"}],
            "imagePullPolicy": "Never",
            "resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}},
        }
    )
    assert spec.image == "ghcr.io/team/train:2"
    assert spec.image_entrypoint
    assert spec.argv == ("--lr=0.1",)
    assert dict(spec.env) == {"HOSTNAME": "train-0", "LR": "0.1"}  # no host PATH, no venv
    assert (spec.pull_policy, spec.cpu_limit, spec.memory_limit) == ("Never", 1.5, 1 << 30)


def test_the_host_image_and_the_helper_images_still_run_as_host_processes() -> None:
    for image in (hostimage.HOST_IMAGE, "kubetrain/python:local", "alpine:3.10"):
        spec = spec_of({"name": "main", "image": image, "command": ["sh", "-c", "true"]})
        assert spec.image == "", image
        assert dict(spec.env)["PATH"] == "/usr/bin:/bin", image
    delivery = spec_of({"name": "d", "image": "ghcr.io/kubeflow/kubectl-delivery:latest"})
    assert (delivery.image, delivery.argv) == ("", ("kubectl-delivery",))
    assert spec_of({"name": "main", "image": "alpine:3.11", "command": ["true"]}).image


def test_run_as_user_and_group_come_from_the_container_over_the_pod() -> None:
    container = {"name": "m", "image": "busybox", "command": ["id"]}
    for pod_context, own, user in (
        ({}, {}, ""),
        ({"runAsUser": 1000, "runAsGroup": 100}, {}, "1000:100"),
        ({"runAsUser": 1000, "runAsGroup": 100}, {"runAsUser": 0}, "0:100"),
        ({}, {"runAsGroup": 5}, ""),  # a group alone: the image's user
    ):
        mine = {**container, "securityContext": own}
        whole = {**pod(mine), "spec": {"containers": [mine], "securityContext": pod_context}}
        assert podspec.container_spec(whole, mine, podspec.Sources(), ENGINE_HOST)[0].user == user


def test_without_an_engine_every_image_runs_as_host_processes() -> None:
    host = podspec.Host("node-a", "127.0.0.1")
    assert spec_of({"name": "m", "image": "busybox", "command": ["true"]}, host).image == ""
    with pytest.raises(podspec.NoCommand):
        spec_of({"name": "m", "image": "busybox"}, host)


def test_the_sandbox_says_whether_the_engine_runs_some_of_the_pods_containers() -> None:
    mixed = pod(
        {"name": "a", "image": hostimage.HOST_IMAGE, "command": ["true"]},
        {"name": "b", "image": "busybox", "command": ["true"]},
    )
    assert podspec.sandbox(mixed, podspec.Sources(), ENGINE_HOST, "").engine
    only_host = pod({"name": "a", "image": hostimage.HOST_IMAGE, "command": ["true"]})
    assert not podspec.sandbox(only_host, podspec.Sources(), ENGINE_HOST, "").engine


def test_the_create_request_keeps_the_pod_contract(tmp_path: Any) -> None:
    engine = node_engine.Engine(runtime.Settings(root=str(tmp_path)), "docker", "unix:///x.sock")
    sb = runtime.Sandbox("uid-1", "team", "train-0", "train-0", hosts="127.0.0.1 train-0\n")
    spec = runtime.ContainerSpec(
        name="main",
        argv=("python3", "train.py"),
        env=(("A", "1"),),
        working_dir="/code",
        memory_limit=1 << 30,
        gpus=("1",),
        image="team/train:2",
        cpu_limit=0.5,
        user="1000:100",
    )
    mounts = [{"source": "/v/data", "target": "/data", "readOnly": True}]
    config = engine._config(sb, spec, runtime.ContainerId("uid-1", "main", 2), mounts)
    host = config["HostConfig"]
    assert (config["Entrypoint"], config["Cmd"]) == (["python3", "train.py"], [])
    assert (config["Env"], config["WorkingDir"], config["User"]) == (["A=1"], "/code", "1000:100")
    assert host["NetworkMode"] == "host"
    assert host["Mounts"][0] == {
        "Type": "bind",
        "Source": "/v/data",
        "Target": "/data",
        "ReadOnly": True,
    }
    assert host["Mounts"][1]["Target"] == "/etc/hosts"
    assert (host["Memory"], host["NanoCpus"]) == (1 << 30, 500_000_000)
    assert host["DeviceRequests"] == [
        {"Driver": "nvidia", "DeviceIDs": ["1"], "Capabilities": [["gpu"]]}
    ]
    labels = config["Labels"]
    assert (labels[node_engine.LABEL_POD], labels[node_engine.LABEL_ATTEMPT]) == ("uid-1", "2")
    entry = engine._config(
        sb,
        runtime.ContainerSpec("main", ("--fast",), (), image="t:1", image_entrypoint=True),
        runtime.ContainerId("uid-1", "main", 0),
        [],
    )
    assert "Entrypoint" not in entry
    assert entry["Cmd"] == ["--fast"]


ENGINE_LOOKUPS = {
    "docker reads DOCKER_HOST first": (
        "docker",
        {"DOCKER_HOST": "unix:///d.sock", "CONTAINER_HOST": "unix:///p.sock"},
        "unix:///d.sock",
    ),
    "podman reads CONTAINER_HOST first": (
        "podman",
        {"DOCKER_HOST": "unix:///d.sock", "CONTAINER_HOST": "unix:///p.sock"},
        "unix:///p.sock",
    ),
    "either takes the other's variable": (
        "podman",
        {"DOCKER_HOST": "tcp://h:2375"},
        "tcp://h:2375",
    ),
}


@pytest.mark.parametrize(
    ("kind", "environ", "found"), ENGINE_LOOKUPS.values(), ids=list(ENGINE_LOOKUPS)
)
def test_the_engine_is_found_as_its_own_clients_find_it(
    kind: str, environ: dict[str, str], found: str
) -> None:
    assert node_engine.find(kind, environ) == found


def test_engine_times_read_back_to_the_nanosecond() -> None:
    assert node_engine._rfc3339("2026-11-28T04:18:11.2987806Z") == "2026-11-28T04:18:11.298780600Z"
    assert node_engine._rfc3339("0001-01-01T00:00:00Z") == ""  # Go's zero time: not yet
    assert node_engine._ns("2026-11-28T04:18:11Z") == 1795839491 * 10**9


def test_the_engines_log_frames_come_apart_by_stream() -> None:
    def frame(kind: int, text: bytes) -> bytes:
        return struct.pack(">BxxxI", kind, len(text)) + text

    async def read() -> list[tuple[str, bytes]]:
        stream = asyncio.StreamReader()
        stream.feed_data(frame(1, b"T1 out\nT2 more\n") + frame(2, b"T3 err\n"))
        stream.feed_eof()
        return [item async for item in node_engine._frames(stream)]  # type: ignore[arg-type]

    assert asyncio.run(read()) == [
        ("stdout", b"T1 out\n"),
        ("stdout", b"T2 more\n"),
        ("stderr", b"T3 err\n"),
    ]


class FakeImages:
    """The engine's images API: what it has, and what a pull answers."""

    def __init__(self, present: set[str], pull_error: str = "") -> None:
        self.present = present
        self.pull_error = pull_error
        self.pulled: list[str] = []

    async def inspect(self, name: str) -> dict[str, Any]:
        if name not in self.present:
            raise node_engine.aiodocker.DockerError(404, f"No such image: {name}")
        return {"Id": "sha256:1"}

    async def pull(self, name: str) -> list[dict[str, Any]]:
        self.pulled.append(name)
        if self.pull_error:
            raise node_engine.aiodocker.DockerError(500, self.pull_error)
        self.present.add(name)
        return [{"status": "Downloaded newer image"}]


PULLS = {
    "IfNotPresent and present: no pull": ("t:1", "IfNotPresent", {"t:1"}, "", [], ""),
    "no policy, a tag, present: no pull": ("t:1", "", {"t:1"}, "", [], ""),
    "no policy and :latest: a pull each start": ("t", "", {"t"}, "", ["t"], ""),
    "Always, the registry out of reach: the copy here runs": (
        "t:1",
        "Always",
        {"t:1"},
        "no such host",
        ["t:1"],
        "",
    ),
    "missing and the pull fails: ErrImagePull with the engine's message": (
        "t:1",
        "IfNotPresent",
        set(),
        'Get "https://registry-1.docker.io/v2/": no such host',
        ["t:1"],
        'ErrImagePull: failed to pull and unpack image "t:1": Get "https://registry-1.docker.io'
        '/v2/": no such host',
    ),
    "Never and missing: ErrImageNeverPull": (
        "t:1",
        "Never",
        set(),
        "",
        [],
        'ErrImageNeverPull: Container image "t:1" is not present with pull policy of Never',
    ),
}


@pytest.mark.parametrize(
    ("image", "policy", "present", "pull_error", "pulled", "refused"),
    PULLS.values(),
    ids=list(PULLS),
)
def test_the_image_pull_policy_is_honoured(
    tmp_path: Any,
    image: str,
    policy: str,
    present: set[str],
    pull_error: str,
    pulled: list[str],
    refused: str,
) -> None:
    engine = node_engine.Engine(runtime.Settings(root=str(tmp_path)), "docker", "unix:///x.sock")
    images = FakeImages(set(present), pull_error)

    class FakeDocker:
        pass

    fake = FakeDocker()
    fake.images = images  # type: ignore[attr-defined]
    engine._docker = fake  # type: ignore[assignment]
    spec = runtime.ContainerSpec("main", (), (), image=image, pull_policy=policy)
    try:
        asyncio.run(engine._image(spec))
        outcome = ""
    except runtime.StartError as exc:
        outcome = f"{exc.reason}: {exc.message}"
    assert (outcome, images.pulled) == (refused, pulled)
