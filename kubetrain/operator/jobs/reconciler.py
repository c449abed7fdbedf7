"""The v1 job reconciler: reads one job and what it owns from the cache, asks :mod:`.plan` what
to do, and does it through the client.

One :class:`JobReconciler` per kind, all alike (house rule 12): the framework is data. A pass:

1. The job is gone: forget it. Expectations unmet (the cache has not shown the pods and
   services the last pass created, or the failed pods it deleted to restart): wait for those
   events.
2. Plan. A job managed elsewhere or being deleted is left alone; an invalid one gets its
   refusal written to ``/status`` when it changed, then its Warning event, and a
   :class:`~kubetrain.operator.runtime.controller.TerminalError` (the next edit of the job
   reconciles it again).
3. Deletes, then creates (a Service before its pod; 409 means it exists), then patches and the
   companions created once (MPI's ServiceAccount, Role, RoleBinding; a kind the API server
   does not serve, as discovery tells, is skipped with one log line). Each pod and Service
   call has upstream's event and metric.
4. The status, written once to ``/status`` (a compare-and-swap on the resourceVersion read)
   and only if it changed; then the events, the job metrics, and the TTL deletion. A lost
   compare-and-swap ends the pass quietly only when the cache already holds a newer job (its
   event has queued the next pass); otherwise the 409 is raised, to be retried with back-off.
   A 409 promises no event: a proxy or a webhook may answer one with nothing newer behind
   it, and a job left waiting for an event that never comes would wait for good.
5. A failed call raises after the rest was done, to be retried with back-off; otherwise the
   job is looked at again when the plan says (deadline, TTL) or on the next event.

Also here, both in memory only: the events of pods' containers exiting (from informer
events, emitted by the next pass of their job); the host ports in use are the process's one
:class:`~kubetrain.operator.hostports.Book`, shared with the TrainJob controller.

Must not: decide anything the plan decides, or write to the job anything but its status.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any, Final

from kubetrain import _aio, frameworks, kube
from kubetrain.errors import KubetrainError
from kubetrain.kube import cache
from kubetrain.operator import hostports
from kubetrain.operator.jobs import children, companions, conditions, gang, plan, reasons
from kubetrain.operator.jobs import settings as settings_
from kubetrain.operator.runtime import controller, expectations, manager

log = logging.getLogger(__name__)

CONCURRENT_CALLS: Final = 16  # create/delete calls in flight for one job

Key = controller.Key
Result = controller.Result


class JobProblem(KubetrainError):
    """Something keeps a job from progressing for now; the reconcile is retried."""


class JobReconciler:
    """Reconciles the jobs of one framework (see the module docstring)."""

    def __init__(
        self,
        mgr: manager.Manager,
        framework: frameworks.Framework,
        settings: settings_.Settings,
        book: hostports.Book | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        expected: expectations.Expectations | None = None,
    ) -> None:
        self.client = mgr.client
        self.metrics = mgr.metrics
        self.framework = framework
        self.settings = settings
        self.kind = framework.kind
        self.resource = children.job_resource(framework.job_class)
        self.book = book or hostports.book(mgr, children.SERVICES)
        self.clock = clock
        self.expectations = expected or expectations.Expectations()
        self.recorder = mgr.recorder(framework.controller)
        self.jobs = mgr.store(self.resource)
        self.pods = mgr.store(children.PODS)
        self.services = mgr.store(children.SERVICES)
        group = gang.resource(settings)
        self.pod_groups = mgr.store(group) if group is not None else None
        self.cached = {r.plural: mgr.store(r) for r in companions.watched(framework)}
        self.pods.subscribe(self._on_pod)
        self.services.subscribe(self._on_service)
        self._exits: dict[Key, list[plan.Event]] = {}
        self._ensured: dict[Key, set[tuple[str, str, str]]] = {}
        self._unserved_logged: set[str] = set()

    @property
    def owns(self) -> tuple[kube.Resource, ...]:
        """The resources whose events reconcile their controller job."""
        extra = [] if self.pod_groups is None else [self.pod_groups.resource]
        cached = [store.resource for store in self.cached.values()]
        return (children.PODS, children.SERVICES, *cached, *extra)

    # -- informer handlers ---------------------------------------------------------------------

    def _owner(self, obj: Mapping[str, Any]) -> Key | None:
        ref = children.controller_of(obj)
        if ref is None or ref.get("kind") != self.kind:
            return None
        if kube.split_api_version(str(ref.get("apiVersion") or ""))[0] != self.resource.group:
            return None
        namespace = children.metadata(obj).get("namespace")
        return Key(str(namespace or ""), str(ref.get("name") or ""))

    def _on_pod(self, type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        owner = self._owner(obj)
        if owner is None:
            return
        name = children.name_of(obj)
        if type == cache.ADDED:
            self.expectations.creation_observed(_pods_key(owner), name)
        elif type == cache.DELETED:
            self.expectations.deletion_observed(_pods_key(owner), name)
        elif old is not None:
            self._note_exits(owner, obj, old)

    def _on_service(self, type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        owner = self._owner(obj)
        if owner is not None and type == cache.ADDED:
            self.expectations.creation_observed(_services_key(owner), children.name_of(obj))

    def _note_exits(self, owner: Key, pod: Mapping[str, Any], old: Mapping[str, Any]) -> None:
        """Upstream's ExitedWithCode (the default container) and abnormal-pod events, once per
        container termination seen, for the job's next pass to emit."""
        namespace, name = owner.namespace, children.name_of(pod)
        default = self.framework.job_class.DEFAULT_CONTAINER
        found = self._exits.setdefault(owner, [])
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            container = status.get("name")
            ended = children.terminated(pod, container)
            if ended is None or children.terminated(old, container) is not None:
                continue
            code = ended.get("exitCode")
            if container == default:
                message = reasons.EXITED_WITH_CODE_MESSAGE.format(
                    namespace=namespace, pod=name, code=code
                )
                found.append(plan.Event("Normal", reasons.EXITED_WITH_CODE, message))
            if code:
                message = reasons.ABNORMAL_POD_MESSAGE.format(
                    pod=name, container=container, code=code, message=ended.get("message", "")
                )
                found.append(plan.Event("Warning", str(ended.get("reason") or "Error"), message))

    # -- reconcile -----------------------------------------------------------------------------

    async def reconcile(self, key: Key) -> Result:
        raw = self.jobs.get(key.namespace, key.name)
        if raw is None:
            self.expectations.forget(_pods_key(key))
            self.expectations.forget(_services_key(key))
            self._exits.pop(key, None)
            self._ensured.pop(key, None)
            return Result()
        for expectation in (_pods_key(key), _services_key(key)):
            if not self.expectations.satisfied(expectation):
                log.debug("%s %s: waiting for the cache to show %s", self.kind, key, expectation)
                return Result(requeue_after=self.expectations.ttl)
        priorities = await self._priorities(raw)
        # From here to the port reservation nothing awaits, so no other reconcile can hand
        # out the same host port in between.
        raw = self.jobs.get(key.namespace, key.name) or raw
        uid = children.uid_of(raw)
        observed = plan.Observed(
            job=raw,
            pods=self.pods.owned_by(uid),
            services=self.services.owned_by(uid),
            pod_group=self._pod_group(key),
            cached={
                (plural, children.name_of(obj)): obj
                for plural, store in self.cached.items()
                for obj in store.list(key.namespace)
            },
            taken_ports=self.book.taken(),
            priorities=priorities,
        )
        decided = plan.plan(self.framework, self.settings, observed, self.clock())
        self._reserve_ports(decided.creates)
        if decided.skip is not None:
            log.debug("%s %s: left alone: %s", self.kind, key, decided.skip)
            return Result()
        if decided.invalid is not None:
            if decided.status is not None and decided.status_changed:
                try:
                    await self._write_status(raw, decided.status)
                except kube.Conflict:
                    if not self._cache_moved_on(key, raw):
                        raise
                    return Result()  # the newer job is queued; its pass decides anew
                _log_state(self.kind, key, raw.get("status"), decided.status)
            await self._emit(raw, decided.events)
            raise controller.TerminalError(f"{self.kind} {key}: {decided.invalid}")
        failures: list[Exception] = []
        await self._bounded(self._delete(raw, key, d, failures) for d in decided.deletes)
        if decided.status is not None and decided.status_changed:
            # The status was decided before any create; how the creates fare shows in the
            # next pass. So it is written beside them, a round trip less per pass.
            made, written = await asyncio.gather(
                self._make(raw, key, decided, failures),
                self._write_status(raw, decided.status),
                return_exceptions=True,
            )
            if isinstance(made, BaseException):
                raise made
            if isinstance(written, kube.Conflict):
                # This pass's condition events and counts come from the next pass instead.
                if failures:
                    raise failures[0] from None
                if self._cache_moved_on(key, raw):
                    # The newer job's event came during this pass and queued the job again.
                    log.debug("%s %s: status written meanwhile; reconciling again", self.kind, key)
                    return Result()
                # Nothing newer in the cache: its event may be on its way, or there is none
                # (a 409 no newer version caused). No event is certain, so retry.
            if isinstance(written, BaseException):
                raise written
            _log_state(self.kind, key, raw.get("status"), decided.status)
        else:
            await self._make(raw, key, decided, failures)
        exits = self._exits.pop(key, [])
        if conditions.is_finished(raw.get("status") or {}):
            # Upstream reports exits while the job runs, not those of the pods its end stops
            # (cleanPodPolicy): their SIGTERM is no error of the job's.
            exits = []
        await self._emit(raw, [*exits, *decided.events])
        for metric in decided.metrics:
            self._count(key.namespace, metric)
        if decided.delete_job:
            await self._delete_job(raw, key, failures)
        if failures:
            raise failures[0]
        if decided.problem is not None:
            raise JobProblem(f"{self.kind} {key}: {decided.problem}")
        return Result(requeue_after=decided.requeue_after)

    async def _make(
        self, raw: Mapping[str, Any], key: Key, decided: plan.Plan, failures: list[Exception]
    ) -> None:
        """The pass's creates, patches and companions; what fails is put in ``failures``."""
        await self._bounded(self._create(raw, key, c, failures) for c in decided.creates)
        for patch in decided.patches:
            await self._patch(key, patch, failures)
        await self._ensure(raw, key, decided.ensure, failures)

    def _cache_moved_on(self, key: Key, raw: Mapping[str, Any]) -> bool:
        """Whether the cache holds another version of the job than ``raw`` (or none now): the
        event that brought it has queued the job again."""
        cached = self.jobs.get(key.namespace, key.name)
        if cached is None:
            return True
        return children.metadata(cached).get("resourceVersion") != children.metadata(raw).get(
            "resourceVersion"
        )

    def _pod_group(self, key: Key) -> dict[str, Any] | None:
        if self.pod_groups is None:
            return None
        return self.pod_groups.get(key.namespace, key.name)

    async def _priorities(self, raw: Mapping[str, Any]) -> dict[str, int]:
        """PriorityClass values the PodGroup's minResources are ordered by (gang only)."""
        if self.pod_groups is None:
            return {}
        spec = raw.get("spec") or {}
        policy = ((spec.get("runPolicy") or {}).get("schedulingPolicy")) or {}
        if policy.get("minResources") is not None:
            return {}
        names = set()
        for replica in (spec.get(self.framework.job_class.REPLICA_FIELD) or {}).values():
            template = (replica or {}).get("template") or {}
            name = (template.get("spec") or {}).get("priorityClassName")
            if isinstance(name, str) and name:
                names.add(name)
        values: dict[str, int] = {}
        for name in sorted(names):
            try:
                found = await self.client.get(children.PRIORITY_CLASSES, name)
            except kube.NotFound:
                continue
            if isinstance(found.get("value"), int):
                values[name] = found["value"]
        return values

    async def _bounded(self, calls: Iterable[Any]) -> None:
        limit = asyncio.Semaphore(CONCURRENT_CALLS)

        async def one(call: Any) -> None:
            async with limit:
                await call

        async with _aio.TaskGroup() as group:
            for call in calls:
                group.create_task(one(call))

    def _reserve_ports(self, creates: Iterable[plan.Create]) -> None:
        taken = []
        for create in creates:
            if create.resource == children.SERVICES:
                port = hostports.recorded(create.body)
                if port is not None:
                    taken.append(port)
        self.book.reserve(taken)

    # -- calls ---------------------------------------------------------------------------------

    async def _delete(
        self, raw: Mapping[str, Any], key: Key, delete: plan.Delete, failures: list[Exception]
    ) -> None:
        noun = delete.resource.kind
        if delete.before is not None:
            try:
                await self.client.patch(
                    delete.before.resource,
                    delete.before.name,
                    delete.before.patch,
                    namespace=key.namespace,
                )
            except kube.ApiError as exc:
                failures.append(exc)
                return
        if delete.restart:
            self.expectations.expect_deletions(_pods_key(key), [delete.name])
        preconditions = {"uid": delete.uid} if delete.uid else None
        try:
            await self.client.delete(
                delete.resource, delete.name, namespace=key.namespace, preconditions=preconditions
            )
        except (kube.NotFound, kube.Conflict):
            if delete.restart:  # gone already, or another object by now: nothing to wait for
                self.expectations.lower(_pods_key(key), delete.name)
            return
        except kube.ApiError as exc:
            if delete.restart:
                self.expectations.lower(_pods_key(key), delete.name)
            failures.append(exc)
            if noun in ("Pod", "Service"):
                await self._event(
                    raw,
                    "Warning",
                    reasons.FAILED_DELETE.format(kind=noun),
                    reasons.DELETE_ERROR_MESSAGE.format(error=exc),
                )
            elif noun == "PodGroup":
                await self._event(raw, "Warning", reasons.FAILED_DELETE_POD_GROUP, str(exc))
            return
        log.info("%s %s: deleted %s %s", self.kind, key, noun, delete.name)
        if noun == "Pod":
            self.metrics.pods_deleted.inc()
            if delete.restart:
                self.metrics.pods_failed.inc()
        if delete.announce is not None:
            announce = delete.announce
            await self._event(raw, announce.type, announce.reason, announce.message)
            self._count(key.namespace, plan.RESTARTED_METRIC)
        if noun in ("Pod", "Service"):
            message = reasons.DELETED_OBJECT_MESSAGE.format(noun=noun.lower(), name=delete.name)
            await self._event(raw, "Normal", reasons.SUCCESSFUL_DELETE.format(kind=noun), message)
        elif noun == "PodGroup":
            self.metrics.pod_groups_deleted.inc()
            message = reasons.DELETED_POD_GROUP_MESSAGE.format(name=delete.name)
            await self._event(raw, "Normal", reasons.SUCCESSFUL_DELETE_POD_GROUP, message)

    async def _create(
        self, raw: Mapping[str, Any], key: Key, create: plan.Create, failures: list[Exception]
    ) -> None:
        chain: list[plan.Create] = []
        step: plan.Create | None = create
        while step is not None:
            chain.append(step)
            step = step.then
        for item in chain:
            self._expect(key, item)
        for position, item in enumerate(chain):
            if not await self._create_one(raw, key, item, failures):
                for rest in chain[position + 1 :]:
                    self._lower(key, rest)
                return

    def _expect(self, key: Key, create: plan.Create) -> None:
        if create.resource == children.PODS:
            self.expectations.expect_creations(_pods_key(key), [create.name])
        elif create.resource == children.SERVICES:
            self.expectations.expect_creations(_services_key(key), [create.name])

    def _lower(self, key: Key, create: plan.Create) -> None:
        if create.resource == children.PODS:
            self.expectations.lower(_pods_key(key), create.name)
        elif create.resource == children.SERVICES:
            self.expectations.lower(_services_key(key), create.name)

    async def _create_one(
        self, raw: Mapping[str, Any], key: Key, create: plan.Create, failures: list[Exception]
    ) -> bool:
        """Create one object; True when it exists now (created, or there already)."""
        noun = create.resource.kind
        try:
            await self.client.create(create.resource, create.body, namespace=key.namespace)
        except kube.AlreadyExists:
            # it exists: either the cache will show it, or it is not ours and waiting is moot
            self._lower(key, create)
            return True
        except kube.ApiError as exc:
            self._lower(key, create)
            failures.append(exc)
            if noun == "Service":
                self.metrics.services_failed.inc()
            if noun in ("Pod", "Service"):
                await self._event(
                    raw,
                    "Warning",
                    reasons.FAILED_CREATE.format(kind=noun),
                    reasons.CREATE_ERROR_MESSAGE.format(error=exc),
                )
            return False
        log.info("%s %s: created %s %s", self.kind, key, noun, create.name)
        if noun == "Pod":
            self.metrics.pods_created.inc()
        elif noun == "Service":
            self.metrics.services_created.inc()
        elif noun == "PodGroup":
            self.metrics.pod_groups_created.inc()
        if noun in ("Pod", "Service"):
            message = reasons.CREATED_OBJECT_MESSAGE.format(noun=noun.lower(), name=create.name)
            await self._event(raw, "Normal", reasons.SUCCESSFUL_CREATE.format(kind=noun), message)
        return True

    async def _patch(self, key: Key, patch: plan.Patch, failures: list[Exception]) -> None:
        try:
            await self.client.patch(
                patch.resource, patch.name, patch.patch, namespace=key.namespace
            )
        except kube.NotFound:
            return  # gone since the cache saw it; the next pass recreates what is missing
        except kube.ApiError as exc:
            failures.append(exc)

    async def _ensure(
        self,
        raw: Mapping[str, Any],
        key: Key,
        wanted: Iterable[companions.Companion],
        failures: list[Exception],
    ) -> None:
        """Create once what the cache does not watch; an object someone else owns is reported."""
        uid = children.uid_of(raw)
        ensured = self._ensured.setdefault(key, set())
        for companion in wanted:
            marker = (uid, companion.resource.plural, companion.name)
            if marker in ensured or not await self._served(companion.resource):
                continue
            try:
                await self.client.create(
                    companion.resource, companion.body, namespace=key.namespace
                )
            except kube.AlreadyExists:
                try:
                    found = await self.client.get(
                        companion.resource, companion.name, namespace=key.namespace
                    )
                except kube.ApiError as exc:
                    failures.append(exc)
                    continue
                if not children.is_controlled_by(found, uid):
                    message = reasons.RESOURCE_EXISTS_MESSAGE.format(
                        name=companion.name, kind=companion.resource.kind
                    )
                    await self._event(raw, "Warning", reasons.ERR_RESOURCE_EXISTS, message)
                    failures.append(JobProblem(f"{self.kind} {key}: {message}"))
                    continue
            except kube.ApiError as exc:
                failures.append(exc)
                continue
            ensured.add(marker)

    async def _served(self, resource: kube.Resource) -> bool:
        found = (await self.client.discover()).find(
            resource.group, resource.plural, resource.version
        )
        if found is None and resource.group_resource not in self._unserved_logged:
            self._unserved_logged.add(resource.group_resource)
            log.info(
                "the API server serves no %s; %s jobs get none",
                resource.group_resource,
                self.kind,
            )
        return found is not None

    async def _write_status(self, raw: Mapping[str, Any], status: dict[str, Any]) -> None:
        body = {**raw, "status": status}
        await self.client.replace(self.resource, body, subresource="status")

    async def _delete_job(
        self, raw: Mapping[str, Any], key: Key, failures: list[Exception]
    ) -> None:
        try:
            await self.client.delete(
                self.resource,
                key.name,
                namespace=key.namespace,
                propagation_policy="Background",
                preconditions={"uid": children.uid_of(raw)},
            )
        except (kube.NotFound, kube.Conflict):
            return
        except kube.ApiError as exc:
            failures.append(exc)
            await self._event(raw, "Warning", reasons.FAILED_DELETE_JOB, str(exc))
            return
        log.info("%s %s: deleted after its TTL", self.kind, key)
        self._count(key.namespace, plan.DELETED_METRIC)
        message = reasons.DELETED_JOB_MESSAGE.format(name=key.name)
        await self._event(raw, "Normal", reasons.SUCCESSFUL_DELETE_JOB, message)

    # -- events and metrics --------------------------------------------------------------------

    async def _event(self, raw: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        await self.recorder.event(
            raw, "Warning" if type == "Warning" else "Normal", reason, message
        )

    async def _emit(self, raw: Mapping[str, Any], events: Iterable[plan.Event]) -> None:
        for event in events:
            await self.recorder.event(raw, event.type, event.reason, event.message)

    def _count(self, namespace: str, metric: str) -> None:
        family = getattr(self.metrics, f"jobs_{metric}")
        family.labels(job_namespace=namespace, framework=self.framework.name).inc()


def _log_state(kind: str, key: Key, old: Any, new: Mapping[str, Any]) -> None:
    """INFO when the job's latest condition (its State) changed."""

    def latest(status: Any) -> tuple[Any, ...]:
        found = (status or {}).get("conditions") or [{}] if isinstance(status, dict) else [{}]
        last = found[-1] if isinstance(found[-1], dict) else {}
        return last.get("type"), last.get("status"), last.get("reason")

    before, after = latest(old), latest(new)
    if before != after:
        log.info("%s %s: %s=%s (%s)", kind, key, *after)


def _pods_key(key: Key) -> str:
    return f"{key.namespace}/{key.name}/pods"


def _services_key(key: Key) -> str:
    return f"{key.namespace}/{key.name}/services"
