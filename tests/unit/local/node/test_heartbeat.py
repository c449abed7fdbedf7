"""The Node and its Lease kept as the kubelet keeps them: conditions that keep their transition
time while their status holds, a status posted only when it changed or the report is due, and
a Lease renewed from the copy last written. A fake client records what the node asks of the
API server."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubetrain import kube
from kubetrain.local.node import heartbeat, settings

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
EARLIER = "2025-12-31T00:00:00Z"


def identity(**changes: Any) -> heartbeat.Identity:
    fields: dict[str, Any] = {
        "name": "n1",
        "labels": {"kubernetes.io/hostname": "n1"},
        "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
        "port": 10250,
        "capacity": {"cpu": "4", "memory": "1024Ki", "pods": "110"},
        "info": {"kubeletVersion": "v1.32.0-kubetrain"},
    }
    fields.update(changes)
    return heartbeat.Identity(**fields)


def by_type(conditions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in conditions}


# -- conditions ---------------------------------------------------------------------------


def test_a_new_node_reports_ready_and_no_pressure() -> None:
    got = by_type(heartbeat.conditions([], "T"))
    assert [got[k]["status"] for k in ("MemoryPressure", "DiskPressure", "PIDPressure")] == [
        "False",
        "False",
        "False",
    ]
    assert got["Ready"]["status"] == "True"
    assert got["Ready"]["reason"] == "KubeletReady"
    assert {c["lastHeartbeatTime"] for c in got.values()} == {"T"}
    assert {c["lastTransitionTime"] for c in got.values()} == {"T"}


def test_a_condition_whose_status_holds_keeps_its_transition_time() -> None:
    old = heartbeat.conditions([], EARLIER)
    got = by_type(heartbeat.conditions(old, "LATER"))
    assert got["Ready"]["lastTransitionTime"] == EARLIER
    assert got["Ready"]["lastHeartbeatTime"] == "LATER"


def test_ready_after_the_controllers_unknown_is_a_transition() -> None:
    """kube-controller-manager sets Unknown on a node it lost; the node's next post is True,
    with a fresh transition time."""
    old = [
        {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "lastTransitionTime": EARLIER,
        }
    ]
    got = by_type(heartbeat.conditions(old, "NOW"))
    assert got["Ready"]["status"] == "True"
    assert got["Ready"]["lastTransitionTime"] == "NOW"


def test_conditions_of_other_writers_are_kept() -> None:
    network = {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated"}
    got = heartbeat.conditions([network], "T")
    assert got[0] == network
    assert [c["type"] for c in got[1:]] == [
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "Ready",
    ]


def test_only_heartbeat_times_are_no_change() -> None:
    first = heartbeat.node_status(identity(), {}, "T1")
    again = heartbeat.node_status(identity(), first, "T2")
    assert not heartbeat.changed(first, again)
    as_written_back = {**first, "capacity": {**first["capacity"], "memory": "1Mi"}}
    assert not heartbeat.changed(as_written_back, again)  # 1024Ki, in the server's words
    moved = heartbeat.node_status(identity(port=10251), first, "T2")
    assert heartbeat.changed(first, moved)
    lost = {**first, "conditions": [{**c, "status": "Unknown"} for c in first["conditions"]]}
    assert heartbeat.changed(lost, heartbeat.node_status(identity(), lost, "T2"))


# -- the loops, against a fake API server -------------------------------------------------


class FakeApi:
    """Nodes and Leases by name, with resourceVersions; records each call."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.version = 0

    def _stored(self, r: kube.Resource, body: Mapping[str, Any]) -> dict[str, Any]:
        self.version += 1
        obj = copy.deepcopy(dict(body))
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.version)
        meta.setdefault("uid", f"uid-{meta['name']}")
        self.objects[(r.plural, meta["name"])] = obj
        return copy.deepcopy(obj)

    async def get(self, r: kube.Resource, name: str, **_: Any) -> dict[str, Any]:
        self.calls.append(("get", r.plural))
        if (r.plural, name) not in self.objects:
            raise kube.NotFound(f"{r.plural} {name} not found", code=404)
        return copy.deepcopy(self.objects[(r.plural, name)])

    async def create(self, r: kube.Resource, body: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        self.calls.append(("create", r.plural))
        if (r.plural, body["metadata"]["name"]) in self.objects:
            raise kube.AlreadyExists("exists", code=409)
        return self._stored(r, body)

    async def replace(self, r: kube.Resource, body: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        self.calls.append(("replace", r.plural))
        current = self.objects[(r.plural, body["metadata"]["name"])]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise kube.Conflict("the object has been modified", code=409)
        return self._stored(r, body)

    async def patch(
        self, r: kube.Resource, name: str, patch: Mapping[str, Any], **options: Any
    ) -> dict[str, Any]:
        self.calls.append(("patch " + (options.get("subresource") or ""), r.plural))
        return self._stored(r, merge(self.objects[(r.plural, name)], patch))


def merge(target: Any, patch: Any) -> Any:
    """A JSON merge patch (RFC 7386), as the client sends by default."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


class Clock:
    def __init__(self) -> None:
        self.seconds = 0.0

    def now(self) -> datetime:
        return T0 + timedelta(seconds=self.seconds)

    def monotonic(self) -> float:
        return self.seconds


def beat(api: FakeApi, clock: Clock, **changes: Any) -> heartbeat.Heartbeat:
    config = settings.Settings(root="/unused", status_report=300.0)
    return heartbeat.Heartbeat(
        api,  # type: ignore[arg-type]
        identity(**changes),
        config,
        clock=clock.now,
        monotonic=clock.monotonic,
    )


def test_registration_creates_the_node_with_status_and_no_taints() -> None:
    api, clock = FakeApi(), Clock()
    asyncio.run(beat(api, clock).register())
    node = api.objects[("nodes", "n1")]
    assert "taints" not in (node.get("spec") or {})
    assert node["metadata"]["labels"] == {"kubernetes.io/hostname": "n1"}
    status = node["status"]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert status["addresses"] == [{"type": "InternalIP", "address": "10.0.0.5"}]
    assert by_type(status["conditions"])["Ready"]["status"] == "True"
    assert api.calls == [("create", "nodes")]


def test_a_node_that_exists_is_taken_over() -> None:
    api, clock = FakeApi(), Clock()
    old = heartbeat.node_status(identity(port=1), {}, "2025-01-01T00:00:00Z")
    unknown = [{**c, "status": "Unknown"} for c in old["conditions"]]
    api.objects[("nodes", "n1")] = {
        "metadata": {"name": "n1", "uid": "u0", "resourceVersion": "1", "labels": {"a": "b"}},
        "status": {**old, "conditions": unknown},
    }
    asyncio.run(beat(api, clock).register())
    node = api.objects[("nodes", "n1")]
    assert node["metadata"]["labels"] == {"a": "b", "kubernetes.io/hostname": "n1"}
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250
    ready = by_type(node["status"]["conditions"])["Ready"]
    assert ready["status"] == "True"
    assert ready["lastTransitionTime"] == "2026-01-01T12:00:00Z"


def test_the_status_is_posted_on_change_or_when_the_report_is_due() -> None:
    api, clock = FakeApi(), Clock()
    node = beat(api, clock)

    async def rounds() -> list[bool]:
        await node.register()
        posted = []
        for seconds in (10, 20, 290):
            clock.seconds = seconds
            posted.append(await node.update_status())
        clock.seconds = 300  # nodeStatusReportFrequency after the registration
        posted.append(await node.update_status())
        clock.seconds = 310
        api.objects[("nodes", "n1")]["status"]["conditions"][-1]["status"] = "Unknown"
        posted.append(await node.update_status())
        return posted

    assert asyncio.run(rounds()) == [False, False, False, True, True]
    ready = by_type(api.objects[("nodes", "n1")]["status"]["conditions"])["Ready"]
    assert ready["status"] == "True"
    assert ready["lastHeartbeatTime"] == "2026-01-01T12:05:10Z"


def test_the_lease_is_created_then_renewed_from_the_copy_written() -> None:
    api, clock = FakeApi(), Clock()
    node = beat(api, clock)

    async def renew() -> None:
        await node.register()
        await node.renew_lease()
        clock.seconds = 10
        await node.renew_lease()

    asyncio.run(renew())
    lease = api.objects[("leases", "n1")]
    assert lease["spec"] == {
        "holderIdentity": "n1",
        "leaseDurationSeconds": 40,
        "renewTime": "2026-01-01T12:00:10.000000Z",
    }
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "uid-n1"}
    ]
    assert api.calls == [
        ("create", "nodes"),
        ("get", "leases"),
        ("create", "leases"),
        ("replace", "leases"),
    ]


def test_a_lease_changed_by_another_writer_is_read_again() -> None:
    api, clock = FakeApi(), Clock()
    node = beat(api, clock)

    async def renew() -> None:
        await node.renew_lease()
        stored = api.objects[("leases", "n1")]
        api._stored(heartbeat.LEASES, stored)  # someone else wrote it
        clock.seconds = 10
        await node.renew_lease()

    asyncio.run(renew())
    assert api.calls[-3:] == [("replace", "leases"), ("get", "leases"), ("replace", "leases")]
    assert api.objects[("leases", "n1")]["spec"]["renewTime"] == "2026-01-01T12:00:10.000000Z"


def test_the_kubelets_timings_are_the_defaults() -> None:
    config = settings.Settings(root="/unused")
    assert (config.lease_duration, config.lease_renew) == (40, 10.0)
    assert (config.status_interval, config.status_report) == (10.0, 300.0)


@pytest.mark.parametrize("status", [[], None])
def test_a_node_without_conditions_gets_all_of_the_kubelets(status: Any) -> None:
    got = heartbeat.node_status(identity(), {"conditions": status}, "T")
    assert [c["type"] for c in got["conditions"]] == [
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "Ready",
    ]
