"""What the node says of a container that died because its port was taken (portclash)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from kubetrain.local.node import portclash, runtime


def pod(name: str, *ports: int, host_network: bool = False, uid: str = "") -> dict[str, Any]:
    container = {"name": "main", "ports": [{"containerPort": p} for p in ports]}
    spec: dict[str, Any] = {"containers": [container]}
    if host_network:
        spec["hostNetwork"] = True
    return {"metadata": {"namespace": "team", "name": name, "uid": uid or name}, "spec": spec}


@pytest.mark.parametrize(
    "line",
    [
        "OSError: [Errno 98] Address already in use",
        "[W socket.cpp:464] [c10d] The server socket has failed to listen on any local network "
        "address. port: 23456, useIpv6: 0, code: -98, name: EADDRINUSE, message: address "
        "already in use",
        "E0000 chttp2_server.cc: UNKNOWN:No address added out of total 1 resolved for "
        "'[::]:2222' {errno:98, os_error:Address already in use}",
    ],
)
def test_the_words_of_python_torch_and_grpc_are_recognised(line: str) -> None:
    assert portclash.in_use(f"starting\n{line}\nTraceback ...")


def test_other_failures_are_not_taken_for_a_taken_port() -> None:
    assert not portclash.in_use("ConnectionRefusedError: [Errno 111] Connection refused")


def test_the_message_names_the_port_the_other_pod_and_the_operator_flag() -> None:
    text = portclash.message(pod("tf-worker-1", 2222), [pod("other", 80), pod("tf-worker-0", 2222)])
    assert text.startswith("address already in use: port 2222 is also declared by pod ")
    assert "team/tf-worker-0" in text
    assert "team/other" not in text
    assert "Run the operator with --host-network (kubetrain operator --host-network)" in text


def test_without_another_pod_it_names_the_port_and_still_the_flag() -> None:
    text = portclash.message(pod("tf-worker-1", 2222), [])
    assert "a port this pod declares (2222) is taken on this host" in text
    assert "--host-network" in text


def test_a_host_network_pod_is_told_about_the_port_range_instead() -> None:
    text = portclash.message(pod("a", 20001, host_network=True), [pod("b", 20001)])
    assert "port 20001 is also declared by pod team/b" in text
    assert "--host-port-range" in text
    assert "--host-network" not in text


def state(uid: str, exit_code: int | None, message: str = "") -> runtime.ContainerState:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return runtime.ContainerState(
        id=runtime.ContainerId(uid, "main", 0),
        pid=None,
        started_at=now,
        finished_at=None if exit_code is None else now,
        exit_code=exit_code,
        reason="" if exit_code is None else "Error",
        message=message,
    )


class FakeRuntime:
    """Log files by pod uid, and the containers on disk."""

    def __init__(self, logs: dict[str, str], states: list[runtime.ContainerState]) -> None:
        self.logs = logs
        self.states = states

    def log_path(self, id: runtime.ContainerId) -> str:
        return self.logs[id.pod_uid]

    def containers(self) -> list[runtime.ContainerState]:
        return self.states


def test_only_a_failed_attempt_whose_log_says_so_gets_the_message(tmp_path: Any) -> None:
    failed, crashed = tmp_path / "failed.log", tmp_path / "crashed.log"
    failed.write_text("OSError: [Errno 98] Address already in use\n")
    crashed.write_text("ZeroDivisionError: division by zero\n")
    holder = pod("holder", 2222, uid="h")
    pods = {"h": holder}
    node = FakeRuntime(
        {"f": str(failed), "c": str(crashed)},
        [state("h", None), state("f", 1), state("c", 1)],
    )
    explained = portclash.explain(
        pod("second", 2222, uid="f"), {"main": [state("f", 1)]}, node, pods.get
    )
    assert "team/holder" in explained["main"][-1].message
    untouched = portclash.explain(
        pod("third", 2222, uid="c"), {"main": [state("c", 1)]}, node, pods.get
    )
    assert untouched["main"][-1].message == ""
    assert portclash.worth_a_look({"main": [state("f", 1)]})
    assert not portclash.worth_a_look({"main": [state("f", 0)], "side": [state("f", None)]})
    assert not portclash.worth_a_look({"main": [state("f", 1, "already said")]})
