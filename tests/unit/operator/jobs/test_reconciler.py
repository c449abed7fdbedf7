"""The reconciler's own duties, on an in-memory API: the order of calls, 409 on create meaning
"exists", expectations, the status compare-and-swap, events after the status write, metrics,
and what a failed call does. (What to do is :mod:`.plan`'s and tested there.)"""

from __future__ import annotations

import asyncio
import copy
import itertools
from typing import Any

import pytest

from kubetrain import frameworks, kube
from kubetrain.kube import workqueue
from kubetrain.operator.jobs import children, reconciler
from kubetrain.operator.jobs.settings import Settings
from kubetrain.operator.runtime import controller, manager
from kubetrain.operator.runtime import metrics as metrics_
from tests.builders import mpijob, pytorchjob
from tests.unit.operator.jobs.world import T0

KEY = controller.Key("ns", "a")


class FakeApi:
    """The client calls the reconciler makes, against a dict; ``fail[(verb, plural)]`` lists
    errors for the next such calls. ``served`` is what discovery finds."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.calls: list[str] = []
        self.fail: dict[tuple[str, str], list[Exception]] = {}
        self.served = {"pods", "services", "configmaps", "serviceaccounts", "events"}
        self._uids = itertools.count(1)

    def _check(self, verb: str, resource: kube.Resource, name: str) -> None:
        self.calls.append(f"{verb} {resource.plural}/{name}")
        errors = self.fail.get((verb, resource.plural))
        if errors:
            raise errors.pop(0)

    async def create(
        self, resource: kube.Resource, body: Any, *, namespace: str | None = None, **_: Any
    ) -> dict[str, Any]:
        name = body["metadata"].get("name") or f"gen-{next(self._uids)}"
        if resource.plural == "events":
            self.calls.append(f"event {body.get('reason')}")
        self._check("create", resource, name)
        key = (resource.plural, namespace or "", name)
        if key in self.objects:
            raise kube.AlreadyExists("exists", code=409, reason="AlreadyExists")
        obj = copy.deepcopy(dict(body))
        obj["metadata"] = {**obj["metadata"], "name": name, "uid": f"uid-{next(self._uids)}"}
        self.objects[key] = obj
        return obj

    async def get(
        self, resource: kube.Resource, name: str, *, namespace: str | None = None, **_: Any
    ) -> dict[str, Any]:
        self._check("get", resource, name)
        found = self.objects.get((resource.plural, namespace or "", name))
        if found is None:
            raise kube.NotFound("not found", code=404, reason="NotFound")
        return found

    async def delete(
        self, resource: kube.Resource, name: str, *, namespace: str | None = None, **_: Any
    ) -> dict[str, Any]:
        self._check("delete", resource, name)
        found = self.objects.pop((resource.plural, namespace or "", name), None)
        if found is None:
            raise kube.NotFound("not found", code=404, reason="NotFound")
        return found

    async def patch(
        self,
        resource: kube.Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        self._check("patch", resource, name)
        return {}

    async def replace(
        self,
        resource: kube.Resource,
        body: Any,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        self._check(f"replace{'/' + subresource if subresource else ''}", resource, "")
        return dict(body)

    async def discover(self) -> Any:
        served = self.served

        class Found:
            def find(self, group: str, plural: str, version: str | None = None) -> Any:
                return plural if plural in served else None

        return Found()


def harness(
    doc: dict[str, Any], api: FakeApi | None = None, **objects: list[dict[str, Any]]
) -> tuple[Any, Any, Any]:
    """A reconciler of the doc's kind over ``api`` (a new FakeApi by default), its stores
    filled with ``objects``."""
    api = api if api is not None else FakeApi()
    metrics = metrics_.Metrics()
    mgr = manager.Manager(
        api,  # type: ignore[arg-type]
        manager.Settings(leader_election=False, metrics_address="", probe_address=""),
        metrics=metrics,
    )
    framework = frameworks.for_kind(doc["kind"])
    job = copy.deepcopy(doc)
    job["metadata"].update(uid="job-uid", resourceVersion="1")
    made = reconciler.JobReconciler(mgr, framework, Settings(), clock=lambda: T0)
    made.jobs.replace([job])
    made.pods.replace(objects.get("pods", []))
    made.services.replace(objects.get("services", []))
    for store in made.cached.values():
        store.replace([])
    return api, made, metrics


def pytorch() -> dict[str, Any]:
    return pytorchjob("ns", "a").master().workers(1).doc()


def reconcile(made: Any) -> Any:
    return asyncio.run(made.reconcile(KEY))


def test_services_come_before_their_pods_and_the_status_before_the_events() -> None:
    api, made, metrics = harness(pytorch())
    assert reconcile(made) == controller.Result()
    creates = [c for c in api.calls if c.startswith("create") and "events" not in c]
    assert creates == [
        "create services/a-master-0",
        "create pods/a-master-0",
        "create services/a-worker-0",
        "create pods/a-worker-0",
    ]
    assert api.calls.index("replace/status pytorchjobs/") < api.calls.index(
        "event PyTorchJobCreated"
    )
    assert metrics.pods_created.value == 2
    assert metrics.services_created.value == 2
    assert metrics.jobs_created.labels(job_namespace="ns", framework="pytorch").value == 1


class StatusFirst(FakeApi):
    """Creates of pods answer only once the job's status has been written."""

    def __init__(self) -> None:
        super().__init__()
        self.status_written = asyncio.Event()

    async def create(self, resource: kube.Resource, body: Any, **kwargs: Any) -> dict[str, Any]:
        if resource.plural == "pods":
            await self.status_written.wait()
        return await super().create(resource, body, **kwargs)

    async def replace(self, resource: kube.Resource, body: Any, **kwargs: Any) -> dict[str, Any]:
        self.status_written.set()
        return await super().replace(resource, body, **kwargs)


def test_the_status_is_written_beside_the_creates_not_after_them() -> None:
    """One round trip less per pass: the status a pass decided does not wait for its pods
    (a pass that waited would never end here)."""
    held = StatusFirst()
    _, made, _ = harness(pytorch(), held)
    assert asyncio.run(asyncio.wait_for(made.reconcile(KEY), 10)) == controller.Result()
    assert held.calls.index("replace/status pytorchjobs/") < held.calls.index(
        "create pods/a-master-0"
    )
    assert [c for c in held.calls if c.startswith("create pods")] == [
        "create pods/a-master-0",
        "create pods/a-worker-0",
    ]


def test_a_second_pass_waits_until_the_cache_shows_what_the_first_created() -> None:
    api, made, _ = harness(pytorch())
    reconcile(made)
    api.calls.clear()
    assert reconcile(made) == controller.Result(requeue_after=made.expectations.ttl)
    assert api.calls == []


def test_an_existing_pod_counts_as_created() -> None:
    api, made, metrics = harness(pytorch())
    api.fail[("create", "pods")] = [kube.AlreadyExists("taken", code=409, reason="AlreadyExists")]
    assert reconcile(made) == controller.Result()
    assert metrics.pods_created.value == 1  # the other one
    # the existing pod is not waited for: the cache may never show it as this job's
    assert len(made.expectations.pending("ns/a/pods")[0]) == 1


def test_a_failed_service_keeps_its_pod_back_and_the_pass_is_retried_after_the_rest() -> None:
    api, made, metrics = harness(pytorch())
    refused = kube.Forbidden("quota", code=403, reason="Forbidden")
    api.fail[("create", "services")] = [refused]
    with pytest.raises(kube.Forbidden):
        reconcile(made)
    pods = [c for c in api.calls if c.startswith("create pods")]
    assert len(pods) == 1, "the pod of the refused service is not created"
    assert "replace/status pytorchjobs/" in api.calls, "the status is still written"
    assert metrics.services_failed.value == 1
    events = [o for (plural, _, _), o in api.objects.items() if plural == "events"]
    assert "FailedCreateService" in {e.get("reason") for e in events}


def conflict_on_status(api: FakeApi, before: Any = None) -> None:
    """The next status write is answered 409, after ``before()`` ran (an event that arrives
    while the write is on its way)."""
    original = api.replace

    async def replace(resource: kube.Resource, body: Any, **options: Any) -> dict[str, Any]:
        if options.get("subresource") != "status":
            return await original(resource, body, **options)
        api.replace = original  # type: ignore[method-assign]
        api.calls.append(f"replace/status {resource.plural}/")
        if before is not None:
            before()
        raise kube.Conflict("the object has been modified", code=409, reason="Conflict")

    api.replace = replace  # type: ignore[method-assign]


def one_pass(made: Any) -> tuple[str, workqueue.WorkQueue[controller.Key]]:
    """One reconcile of KEY as the worker loop runs it, with the job store wired to the queue
    as the manager wires it; the outcome, and the queue after the pass."""

    async def main() -> tuple[str, workqueue.WorkQueue[controller.Key]]:
        queue: workqueue.WorkQueue[controller.Key] = workqueue.WorkQueue("pytorchjob")
        made.jobs.add_enqueuer(lambda type, obj, old: queue.add(KEY))
        runner = controller.Controller("pytorchjob", made, metrics=None)
        queue.add(KEY)
        key = queue.get_nowait()
        assert key == KEY
        try:
            outcome = await runner.process(queue, key)
        finally:
            queue.done(key)
        return outcome, queue

    return asyncio.run(main())


def test_a_409_on_the_status_with_no_newer_job_cached_is_retried() -> None:
    """docs/reliability.md, the stall under faults: a 409 that no newer job caused (the fault
    proxy's) ended the pass quietly, waiting for the event of a newer job that did not exist;
    no event came, and the job stayed Running for good after its pods had ended."""
    api, made, metrics = harness(pytorch())
    conflict_on_status(api)
    with pytest.raises(kube.Conflict):
        reconcile(made)
    reasons = {o.get("reason") for (plural, _, _), o in api.objects.items() if plural == "events"}
    assert "PyTorchJobCreated" not in reasons, "the next pass emits this pass's events"
    assert metrics.jobs_created.labels(job_namespace="ns", framework="pytorch").value == 0


def test_after_a_409_with_no_newer_job_cached_the_worker_loop_holds_the_job_for_a_retry() -> None:
    api, made, _ = harness(pytorch())
    conflict_on_status(api)
    outcome, queue = one_pass(made)
    assert outcome == controller.ERROR
    assert queue.waiting == 1, "retried after its back-off, with no event needed"


def test_a_409_on_the_status_after_the_cache_got_a_newer_job_ends_the_pass_quietly() -> None:
    """The usual race: the job changed while the pass ran; its event queued the job again."""
    api, made, metrics = harness(pytorch())
    newer = copy.deepcopy(made.jobs.get("ns", "a"))
    newer["metadata"]["resourceVersion"] = "2"
    conflict_on_status(api, before=lambda: made.jobs.apply("MODIFIED", newer))
    outcome, queue = one_pass(made)
    assert outcome == controller.SUCCESS
    assert len(queue) == 1, "queued again at once, by the event"
    assert queue.waiting == 0
    reasons = {o.get("reason") for (plural, _, _), o in api.objects.items() if plural == "events"}
    assert "PyTorchJobCreated" not in reasons
    assert metrics.jobs_created.labels(job_namespace="ns", framework="pytorch").value == 0


def test_an_invalid_job_gets_its_refusal_then_its_event_then_a_terminal_error() -> None:
    doc = pytorchjob("ns", "a").master(2).workers(1).doc()
    api, made, metrics = harness(doc)
    with pytest.raises(controller.TerminalError, match="must be 1"):
        reconcile(made)
    assert [c for c in api.calls if "events" not in c] == [
        "replace/status pytorchjobs/",
        "event PyTorchJobFailedValidation",
    ]
    assert metrics.jobs_failed.labels(job_namespace="ns", framework="pytorch").value == 0


def test_a_refused_job_seen_again_is_neither_written_nor_announced_again() -> None:
    doc = pytorchjob("ns", "a").master(2).workers(1).doc()
    api, made, _ = harness(doc)
    written: list[dict[str, Any]] = []
    replace = api.replace

    async def recorded(resource: kube.Resource, body: Any, **kwargs: Any) -> dict[str, Any]:
        written.append(copy.deepcopy(body))
        return await replace(resource, body, **kwargs)

    api.replace = recorded  # type: ignore[method-assign]
    with pytest.raises(controller.TerminalError):
        reconcile(made)
    (refused,) = written
    refused["metadata"]["resourceVersion"] = "2"  # as the API server returns it
    made.jobs.replace([refused])
    api.calls.clear()
    with pytest.raises(controller.TerminalError):
        reconcile(made)
    assert api.calls == []


def test_a_refusal_lost_to_a_newer_job_ends_the_pass_quietly() -> None:
    doc = pytorchjob("ns", "a").master(2).workers(1).doc()
    api, made, _ = harness(doc)
    newer = copy.deepcopy(made.jobs.get("ns", "a"))
    newer["metadata"]["resourceVersion"] = "9"

    async def conflict(*args: Any, **kwargs: Any) -> Any:
        made.jobs.replace([newer])
        raise kube.Conflict("conflict", code=409, reason="Conflict")

    api.replace = conflict  # type: ignore[method-assign]
    assert reconcile(made) == controller.Result()
    assert not [c for c in api.calls if c.startswith("event")]


def test_a_refusal_lost_with_nothing_newer_is_retried() -> None:
    doc = pytorchjob("ns", "a").master(2).workers(1).doc()
    api, made, _ = harness(doc)
    api.fail[("replace/status", "pytorchjobs")] = [
        kube.Conflict("conflict", code=409, reason="Conflict")
    ]
    with pytest.raises(kube.Conflict):
        reconcile(made)
    assert not [c for c in api.calls if c.startswith("event")]


def test_a_gone_job_is_forgotten() -> None:
    api, made, _ = harness(pytorch())
    made.jobs.replace([])
    assert asyncio.run(made.reconcile(KEY)) == controller.Result()
    assert api.calls == []


def restarting_world() -> tuple[Any, Any, Any]:
    doc = pytorchjob("ns", "a").workers(1, restart_policy="ExitCode").doc()
    owner = children.owner_reference("PyTorchJob", "a", "job-uid")
    labels = {
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "0",
    }
    meta = {"name": "a-worker-0", "namespace": "ns", "labels": labels}
    pod = {
        "metadata": {**meta, "uid": "p1", "resourceVersion": "2", "ownerReferences": [owner]},
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "pytorch", "state": {"terminated": {"exitCode": 137}}}],
        },
    }
    service = {
        "metadata": {**meta, "uid": "s1", "resourceVersion": "3", "ownerReferences": [owner]}
    }
    api, made, metrics = harness(doc, pods=[pod], services=[service])
    api.objects[("pods", "ns", "a-worker-0")] = pod
    return api, made, metrics


def test_a_restart_records_then_deletes_then_announces_and_counts() -> None:
    api, made, metrics = restarting_world()
    reconcile(made)
    assert api.calls.index("patch services/a-worker-0") < api.calls.index("delete pods/a-worker-0")
    assert metrics.jobs_restarted.labels(job_namespace="ns", framework="pytorch").value == 1
    assert metrics.pods_failed.value == 1
    assert made.expectations.pending("ns/a/pods")[1] == {"a-worker-0"}


def test_a_restart_whose_record_fails_keeps_the_pod() -> None:
    api, made, metrics = restarting_world()
    api.fail[("patch", "services")] = [kube.ServerError("down", code=500)]
    with pytest.raises(kube.ServerError):
        reconcile(made)
    assert "delete pods/a-worker-0" not in api.calls
    assert metrics.jobs_restarted.labels(job_namespace="ns", framework="pytorch").value == 0


def test_rbac_is_skipped_where_the_api_server_serves_none() -> None:
    doc = mpijob("ns", "a").replica("Launcher", 1).workers(1).doc()
    api, made, _ = harness(doc)
    reconcile(made)
    assert "create serviceaccounts/a-launcher" in api.calls
    assert not [c for c in api.calls if "roles" in c or "rolebindings" in c]
    api.served |= {"roles", "rolebindings"}
    made.expectations.forget("ns/a/pods")
    reconcile(made)
    assert "create roles/a-launcher" in api.calls
    assert api.calls.count("create serviceaccounts/a-launcher") == 1, "created once"


def _ended(pod: dict[str, Any], code: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod while it ran, and once its container ended with ``code``."""
    running = copy.deepcopy(pod)
    running["status"] = {"phase": "Running", "containerStatuses": [
        {"name": "pytorch", "state": {"running": {}}}
    ]}  # fmt: skip
    ended = copy.deepcopy(pod)
    ended["status"] = {"phase": "Failed", "containerStatuses": [
        {"name": "pytorch", "state": {"terminated": {"exitCode": code, "reason": "Error"}}}
    ]}  # fmt: skip
    return running, ended


@pytest.mark.parametrize(
    ("finished", "reported"),
    [
        (False, ["event ExitedWithCode", "event Error"]),  # a running job's pod exits: upstream's
        (True, []),  # a finished job's pods stopped by cleanPodPolicy: no error of the job's
    ],
)
def test_pod_exits_are_reported_while_the_job_runs_only(
    finished: bool, reported: list[str]
) -> None:
    api, made, _ = restarting_world()
    if finished:
        job = made.jobs.get("ns", "a")
        job["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    pod = made.pods.get("ns", "a-worker-0") or api.objects[("pods", "ns", "a-worker-0")]
    running, ended = _ended(pod, 143)
    made._on_pod("MODIFIED", ended, running)
    reconcile(made)
    events = [c for c in api.calls if c in ("event ExitedWithCode", "event Error")]
    assert events == reported
