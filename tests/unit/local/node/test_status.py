"""A pod's status the kubelet's way, from the states of its containers: phase by restart
policy, conditions with their reasons and messages, container statuses, and a patch only when
something changed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubetrain.local.node import runtime, status

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
NOW = T0 + timedelta(minutes=5)
UID = "uid-1"


def make_pod(
    restart: str = "Always", containers: Sequence[str] = ("main",), init: Sequence[str] = ()
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": restart,
        "containers": [{"name": n, "image": f"img/{n}"} for n in containers],
    }
    if init:
        spec["initContainers"] = [{"name": n, "image": f"img/{n}"} for n in init]
    return {"metadata": {"name": "p", "namespace": "ns", "uid": UID}, "spec": spec, "status": {}}


def running(name: str = "main", attempt: int = 0) -> runtime.ContainerState:
    return runtime.ContainerState(
        runtime.ContainerId(UID, name, attempt), 100, T0 + timedelta(seconds=attempt), None, None
    )


def exited(
    name: str = "main", code: int = 0, attempt: int = 0, reason: str = ""
) -> runtime.ContainerState:
    started = T0 + timedelta(seconds=attempt)
    return runtime.ContainerState(
        runtime.ContainerId(UID, name, attempt),
        100,
        started,
        started + timedelta(seconds=1),
        code,
        reason or ("Completed" if code == 0 else "Error"),
    )


def observe(**containers: Sequence[runtime.ContainerState]) -> status.Observed:
    return status.Observed(address="127.0.0.1", containers=containers, sandbox_ready=True)


def compute(pod: dict[str, Any], observed: status.Observed, now: datetime = NOW) -> dict[str, Any]:
    return status.pod_status(pod, observed, now)


def conditions(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in result["conditions"]}


# -- phase ----------------------------------------------------------------------------------------

WAITING_RESTART = status.Waiting("CrashLoopBackOff", "back-off 10s restarting failed container")
CANNOT_CREATE = status.Waiting(
    status.CREATE_CONTAINER_ERROR, "spec.containers[0].command: required on this node"
)
PHASES = {
    "nothing started yet is Pending": ("Always", (), {}, {}, "Pending"),
    "a running container is Running": ("Never", (), {"main": [running()]}, {}, "Running"),
    "Never and a failure is Failed": ("Never", (), {"main": [exited(code=3)]}, {}, "Failed"),
    "Never and success is Succeeded": ("Never", (), {"main": [exited()]}, {}, "Succeeded"),
    "OnFailure and success is Succeeded": ("OnFailure", (), {"main": [exited()]}, {}, "Succeeded"),
    "OnFailure restarting after a crash is Running": (
        "OnFailure",
        (),
        {"main": [exited(code=1)]},
        {"main": WAITING_RESTART},
        "Running",
    ),
    "Always with every container exited is Running": (
        "Always",
        (),
        {"main": [exited()]},
        {},
        "Running",
    ),
    "an init container running is Pending": (
        "Always",
        ("init",),
        {"init": [running("init")]},
        {},
        "Pending",
    ),
    "a failed init container with Never is Failed": (
        "Never",
        ("init",),
        {"init": [exited("init", code=2)]},
        {},
        "Failed",
    ),
    "a failed init container otherwise is Pending": (
        "OnFailure",
        ("init",),
        {"init": [exited("init", code=2)]},
        {"init": WAITING_RESTART},
        "Pending",
    ),
    "a container that cannot be created keeps the pod Pending under OnFailure": (
        "OnFailure",
        (),
        {},
        {"main": CANNOT_CREATE},
        "Pending",
    ),
    "and under Never too: it never ran, so it never failed": (
        "Never",
        (),
        {},
        {"main": CANNOT_CREATE},
        "Pending",
    ),
    "an init container that cannot be created keeps the pod Pending": (
        "Never",
        ("init",),
        {},
        {"init": CANNOT_CREATE},
        "Pending",
    ),
}


@pytest.mark.parametrize(
    ("restart", "init", "containers", "waiting", "expected"), PHASES.values(), ids=PHASES.keys()
)
def test_phase(
    restart: str,
    init: tuple[str, ...],
    containers: dict[str, list[runtime.ContainerState]],
    waiting: dict[str, status.Waiting],
    expected: str,
) -> None:
    observed = status.Observed(
        address="127.0.0.1", containers=containers, waiting=waiting, sandbox_ready=True
    )
    assert compute(make_pod(restart, init=init), observed)["phase"] == expected


def test_a_terminal_pod_gets_a_final_phase_whatever_its_policy() -> None:
    observed = status.Observed(
        address="127.0.0.1", containers={"main": [exited(code=143)]}, terminal=True
    )
    assert compute(make_pod("Always"), observed)["phase"] == "Failed"


def test_a_terminal_phase_is_never_left() -> None:
    pod = make_pod("Always")
    pod["status"] = {"phase": "Succeeded"}
    assert compute(pod, observe(main=[running(attempt=1)]))["phase"] == "Succeeded"


def test_a_deadline_fails_the_pod_with_its_reason() -> None:
    observed = status.Observed(
        address="127.0.0.1",
        containers={"main": [exited(code=137)]},
        failure=status.Waiting(status.DEADLINE_EXCEEDED, status.DEADLINE_MESSAGE),
        terminal=True,
    )
    result = compute(make_pod("Always"), observed)
    assert (result["phase"], result["reason"], result["message"]) == (
        "Failed",
        "DeadlineExceeded",
        "Pod was active on the node longer than the specified deadline",
    )


# -- container statuses ----------------------------------------------------------------------------


def test_a_failed_container_reports_its_exit_code_and_reason() -> None:
    result = compute(make_pod("Never"), observe(main=[exited(code=3)]))
    (entry,) = result["containerStatuses"]
    assert entry["state"] == {
        "terminated": {
            "exitCode": 3,
            "reason": "Error",
            "startedAt": "2026-01-01T12:00:00Z",
            "finishedAt": "2026-01-01T12:00:01Z",
            "containerID": "kubetrain://uid-1/main/0",
        }
    }
    assert entry["containerID"] == "kubetrain://uid-1/main/0"
    assert (entry["ready"], entry["started"], entry["restartCount"]) == (False, False, 0)
    assert (entry["image"], entry["imageID"]) == ("img/main", "")


def test_a_restarted_container_shows_its_last_state_and_count() -> None:
    result = compute(
        make_pod("OnFailure"),
        observe(main=[exited(code=1), exited(code=1, attempt=1), running(attempt=2)]),
    )
    (entry,) = result["containerStatuses"]
    assert entry["restartCount"] == 2
    assert entry["state"] == {"running": {"startedAt": "2026-01-01T12:00:02Z"}}
    assert entry["lastState"]["terminated"]["containerID"] == "kubetrain://uid-1/main/1"
    assert (entry["ready"], entry["started"]) == (True, True)


def test_a_container_in_back_off_is_waiting_with_the_last_run_as_last_state() -> None:
    waiting = status.Waiting("CrashLoopBackOff", "back-off 20s restarting failed container=main")
    observed = status.Observed(
        address="127.0.0.1",
        containers={"main": [exited(code=1), exited(code=1, attempt=1)]},
        waiting={"main": waiting},
    )
    (entry,) = compute(make_pod("Always"), observed)["containerStatuses"]
    assert entry["state"] == {
        "waiting": {
            "reason": "CrashLoopBackOff",
            "message": "back-off 20s restarting failed container=main",
        }
    }
    assert entry["lastState"]["terminated"]["exitCode"] == 1
    assert entry["restartCount"] == 1


def test_a_container_that_cannot_be_created_waits_with_the_reason() -> None:
    observed = status.Observed(
        address="127.0.0.1", waiting={"main": CANNOT_CREATE}, sandbox_ready=True
    )
    result = compute(make_pod("OnFailure"), observed)
    (entry,) = result["containerStatuses"]
    assert entry["state"] == {
        "waiting": {
            "reason": "CreateContainerError",
            "message": "spec.containers[0].command: required on this node",
        }
    }
    assert (entry["lastState"], entry["restartCount"]) == ({}, 0)
    assert "reason" not in result
    assert conditions(result)["ContainersReady"]["reason"] == "ContainersNotReady"


def test_waiting_reasons_before_the_first_start() -> None:
    plain = compute(make_pod(), observe())
    assert plain["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    with_init = compute(make_pod(init=("setup",)), observe())
    assert with_init["initContainerStatuses"][0]["state"] == {
        "waiting": {"reason": "PodInitializing"}
    }
    assert with_init["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}


def test_container_statuses_are_sorted_by_name_and_init_ones_kept_in_order() -> None:
    result = compute(make_pod(containers=("b", "a"), init=("z", "y")), observe())
    assert [s["name"] for s in result["containerStatuses"]] == ["a", "b"]
    assert [s["name"] for s in result["initContainerStatuses"]] == ["z", "y"]


# -- conditions ----------------------------------------------------------------------------------


def test_conditions_of_a_running_pod() -> None:
    result = compute(make_pod(), observe(main=[running()]))
    assert [c["type"] for c in result["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert {c["status"] for c in result["conditions"]} == {"True"}
    assert (result["podIP"], result["hostIP"]) == ("127.0.0.1", "127.0.0.1")
    assert result["podIPs"] == [{"ip": "127.0.0.1"}]
    assert result["qosClass"] == "BestEffort"


def test_conditions_name_the_containers_that_hold_the_pod_back() -> None:
    result = conditions(
        compute(make_pod(containers=("a", "b"), init=("setup",)), observe(setup=[running("setup")]))
    )
    assert result["Initialized"] == {
        "type": "Initialized",
        "status": "False",
        "reason": "ContainersNotInitialized",
        "message": "containers with incomplete status: [setup]",
        "lastProbeTime": None,
        "lastTransitionTime": "2026-01-01T12:05:00Z",
    }
    assert result["Ready"]["reason"] == "ContainersNotReady"
    assert result["Ready"]["message"] == "containers with unready status: [a b]"


def test_a_finished_pod_is_not_ready_because_it_completed() -> None:
    result = conditions(compute(make_pod("Never"), observe(main=[exited()])))
    assert result["Ready"]["reason"] == result["ContainersReady"]["reason"] == "PodCompleted"
    assert result["Ready"]["status"] == "False"


def test_a_transition_time_holds_while_the_status_does() -> None:
    pod = make_pod()
    first = compute(pod, observe(main=[running()]), now=T0)
    pod["status"] = first
    later = compute(pod, observe(main=[running()]), now=T0 + timedelta(hours=1))
    assert conditions(later)["Ready"]["lastTransitionTime"] == "2026-01-01T12:00:00Z"
    assert status.patch(first, later) is None
    pod["status"] = later
    stopped = compute(pod, observe(main=[exited(code=1)]), now=T0 + timedelta(hours=2))
    assert conditions(stopped)["Ready"]["lastTransitionTime"] == "2026-01-01T14:00:00Z"


def test_other_components_conditions_are_kept() -> None:
    pod = make_pod()
    pod["status"] = {"conditions": [{"type": "DisruptionTarget", "status": "True"}]}
    result = compute(pod, observe(main=[running()]))
    assert conditions(result)["DisruptionTarget"] == {"type": "DisruptionTarget", "status": "True"}


def test_the_patch_holds_only_what_changed() -> None:
    pod = make_pod()
    before = compute(pod, observe())
    after = compute({**pod, "status": before}, observe(main=[running()]))
    change = status.patch(before, after)
    assert change is not None
    assert set(change["status"]) == {"phase", "conditions", "containerStatuses"}
    assert change["status"]["phase"] == "Running"
    assert "metadata" not in change


def test_the_patch_names_its_pod_so_a_successor_of_the_same_name_is_not_written() -> None:
    """A replaced pod's worker may write its end after the replacement (same name, another
    uid) exists; the uid in the patch makes the API server refuse that write."""
    pod = make_pod()
    before = compute(pod, observe())
    after = compute({**pod, "status": before}, observe(main=[exited(code=137)]))
    change = status.patch(before, after, uid="uid-of-the-old-pod")
    assert change is not None
    assert change["metadata"] == {"uid": "uid-of-the-old-pod"}
    assert change["status"]["phase"] == after["phase"]
    assert status.patch(after, after, uid="uid-of-the-old-pod") is None


QOS = {
    "no resources": ([{}], "BestEffort"),
    "requests only": ([{"requests": {"cpu": "1"}}], "Burstable"),
    "limits equal requests": (
        [{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}],
        "Guaranteed",
    ),
    "limits only": ([{"limits": {"cpu": "1", "memory": "1Gi"}}], "Guaranteed"),
    "a memory limit only": ([{"limits": {"memory": "1Gi"}}], "Burstable"),
}


@pytest.mark.parametrize(("resources", "expected"), QOS.values(), ids=QOS.keys())
def test_qos_class(resources: list[dict[str, Any]], expected: str) -> None:
    pod = {
        "spec": {"containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)]}
    }
    assert status.qos_class(pod) == expected
