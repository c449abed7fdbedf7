"""The TrainJob reconciler: from a TrainJob and its runtime snapshot to pods, a Service, the
plugins' objects and the status, level-triggered.

One reconcile, for a TrainJob this controller manages (``spec.managedBy`` unset or
``trainer.kubeflow.org/trainjob-controller``; others are skipped, as upstream):

0. a job that fails admission (created while no webhook ran, or edited since), judged once as
   written and once more against its runtime, as the webhook judges it, or whose field errors
   the plugins find in pre-build, is refused: ``Failed`` with reason
   ``TrainJobFailedValidation`` and every problem in the admission's words, written and
   announced by a Warning event of the same reason and message when it changes, and a
   terminal error; nothing else is done. The next pass that finds the spec valid removes it
   (:mod:`.status`), and the job proceeds;
1. resolve the runtime: from the snapshot ConfigMap (:mod:`.snapshot`), or, the first time,
   the namespaced TrainingRuntime or the ClusterTrainingRuntime it names, then freeze it there;
2. with host networking forced, find the job's port (:mod:`.hostport`): the one its Service
   records, else a free one from the range, not recorded by any Service nor just handed out
   by any controller of the process (the one :class:`~kubetrain.operator.hostports.Book`,
   shared with the v1 controllers); the Service records it once created;
3. run the plugin phases (:mod:`.framework`): the JobSet the job becomes, and the Secrets,
   ConfigMaps and PodGroups it needs;
4. observe the pods it controls (:mod:`.workload`) and compute the whole status
   (:mod:`.status`);
5. a job that just finished (Complete, Failed, DeadlineExceeded) gets its status written first,
   then its active pods deleted (all pods for a passed deadline), so that no later reconcile,
   even on a stale cache, can bring it back to life: a failed TrainJob stays failed;
6. otherwise, unless the cache still misses its own last creations or deletions
   (:class:`~kubetrain.operator.runtime.expectations.Expectations`), it creates what is missing
   (409 means it exists: the plugins' objects, the claims of the JobSet's
   ``volumeClaimPolicies`` and the Service), records a restart on the Service before deleting
   the pods of the failed attempt, deletes what must go and creates the pods that are due,
   then writes the status if it changed, then sends events. ``status.trainerStatus`` is never
   written here: the training process reports it (:mod:`kubetrain.progress`).

Steps 0 to 3 fetch (and, for a refusal, stop); steps 4 to 6 are decided by :mod:`.plan`, a
pure function of the job, what was built and what was observed, and carried out here in the
order it gives.

Pod names are deterministic (``<job>-<replicatedJob>-<jobIndex>-<podIndex>``), so the API
server itself refuses a second pod for an index. A change of ``trainer.numNodes`` (an elastic
job resized, which admission allows) changes the pod count of the trainer job: the pods of new
indexes are created and those past the new count deleted, the others kept.

What the reconciler remembers in memory per TrainJob (the snapshot it just wrote, restart
counts it just recorded, that it just finished the job, the host port it handed out) only
bridges the time until the cache shows its own writes, like expectations; after a restart of
the operator the API server has all of it.

Must not: write anything but through ``kube.Client``, read anything but the caches (and the
API for a snapshot or PodGroup it just found taken), or swallow cancellation.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

from kubetrain import api, kube
from kubetrain.errors import KubetrainError
from kubetrain.frameworks.trainjob import node
from kubetrain.kube import cache, record
from kubetrain.operator import hostports
from kubetrain.operator.runtime import controller, expectations, handler
from kubetrain.operator.trainjob import (
    framework,
    hostport,
    kinds,
    messages,
    observation,
    phases,
    snapshot,
    sshkeys,
    status,
    workload,
)
from kubetrain.operator.trainjob import plan as trainjob_plan

log = logging.getLogger(__name__)

TRAINJOB_CONTROLLER: Final = "trainer.kubeflow.org/trainjob-controller"
RUNTIME_KINDS: Final = ("TrainingRuntime", "ClusterTrainingRuntime")
EXPECTATIONS_RECHECK: Final = 2.0  # seconds: look again while the cache misses our writes
PARALLEL_WRITES: Final = 50  # pod creates/deletes in flight per reconcile (JobSet's)
FIELD_MANAGER: Final = "trainer"


class RuntimeMissing(KubetrainError):
    """The runtime a TrainJob names does not exist (yet); retried with back-off."""


class NoFreePort(KubetrainError):
    """Every port of the host port range is taken; retried with back-off."""


@dataclass
class Stores:
    """The caches the reconciler reads (shared informer stores)."""

    trainjobs: cache.Store
    training_runtimes: cache.Store
    cluster_training_runtimes: cache.Store
    pods: cache.Store
    services: cache.Store
    configmaps: cache.Store
    secrets: cache.Store
    pod_groups: Mapping[str, cache.Store] = field(default_factory=dict)  # by apiVersion


@dataclass
class _Memory:
    """What this process wrote for one TrainJob and the cache may not show yet."""

    uid: str
    snapshot: dict[str, Any] | None = None
    restarts: tuple[int, int] = (0, 0)
    finished: bool = False
    secret_created: bool = False
    service_created: bool = False
    pod_groups: set[str] = field(default_factory=set)
    claims: set[str] = field(default_factory=set)
    host_port: int | None = None


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class TrainJobReconciler:
    def __init__(
        self,
        client: kube.Client,
        stores: Stores,
        recorder: record.Recorder,
        expectations_: expectations.Expectations,
        *,
        clock: Callable[[], datetime.datetime] = utcnow,
        new_key_pair: Callable[[], tuple[bytes, bytes]] = sshkeys.new_key_pair,
        host_ports: tuple[int, int] | None = None,
        book: hostports.Book | None = None,
    ) -> None:
        """``host_ports``: the range each TrainJob is given a port from when its pods are put
        on the host's network; None: pods keep their own network and rank 0 listens on 29500.
        ``book``: the host ports in use, shared with every other controller of the process
        (by default, one of this controller's own)."""
        self.client = client
        self.stores = stores
        self.recorder = recorder
        self.expectations = expectations_
        self.clock = clock
        self.new_key_pair = new_key_pair
        self.host_ports = host_ports
        self.book = book or hostports.following(stores.services)
        self._memory: dict[str, _Memory] = {}

    # -- informer hooks ----------------------------------------------------------------------

    def observe_pod(self, type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Tick off expected creations and deletions (a Store subscriber)."""
        ref = handler.controller_ref(obj)
        if ref is None or ref.get("kind") != "TrainJob":
            return
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{ref.get('name')}"
        if type == cache.ADDED:
            self.expectations.creation_observed(key, str(meta.get("name")))
        elif type == cache.DELETED:
            self.expectations.deletion_observed(key, str(meta.get("name")))

    def jobs_using_runtime(self, runtime: dict[str, Any]) -> list[controller.Key]:
        """TrainJobs that name ``runtime`` (a mapper: a runtime that appears may unblock them)."""
        kind = runtime.get("kind")
        meta = runtime.get("metadata") or {}
        namespace = meta.get("namespace") if kind == "TrainingRuntime" else None
        keys = []
        for job in self.stores.trainjobs.list(namespace):
            ref = (job.get("spec") or {}).get("runtimeRef") or {}
            if (
                ref.get("name") == meta.get("name")
                and (ref.get("kind") or RUNTIME_KINDS[1]) == kind
            ):
                job_meta = job.get("metadata") or {}
                keys.append(
                    controller.Key(str(job_meta.get("namespace")), str(job_meta.get("name")))
                )
        return keys

    # -- reconcile -------------------------------------------------------------------------------

    async def reconcile(self, key: controller.Key) -> controller.Result:
        """Fetch (caches, snapshot, host port, build), :func:`.plan.plan`, then carry it out."""
        raw = self.stores.trainjobs.get(key.namespace, key.name)
        exp_key = str(key)
        if raw is None:
            self.expectations.forget(exp_key)
            self._memory.pop(exp_key, None)
            return controller.Result()
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        if meta.get("deletionTimestamp"):
            return controller.Result()
        managed_by = spec.get("managedBy")
        if managed_by not in (None, TRAINJOB_CONTROLLER):
            log.debug("skipping TrainJob %s managed by %s", key, managed_by)
            return controller.Result()
        memory = self._memory_for(exp_key, str(meta.get("uid") or ""))
        old_status = raw.get("status") or {}
        finished = status.finished(status.conditions_of(old_status))
        if memory.finished and not finished:
            return controller.Result()  # the cache has not caught up with our verdict yet
        now = self.clock()
        refused = trainjob_plan.unsupported_runtime(raw, now)
        if refused is not None:
            await self._write_status(raw, old_status, refused)
            return controller.Result()
        pods = self.stores.pods.owned_by(str(meta.get("uid")))
        if finished and not self._has_snapshot(raw, memory):
            # Finished, and nothing left to build from: only make sure nothing still runs.
            await self._delete_pods(
                exp_key, key.namespace, [p for p in pods if observation.active(p)]
            )
            return controller.Result()
        job = await self._typed(raw)
        runtime = await self._runtime(raw, memory)
        await self._check_against(raw, runtime)
        host_port = await self._host_port(raw, job, runtime, pods, memory)
        built = await self._build(raw, job, runtime, memory, host_port)
        jobset = trainjob_plan.jobset_of(built)
        service = self.stores.services.get(key.namespace, workload.subdomain(jobset))
        observed = trainjob_plan.Observed(pods, service, memory.restarts)
        plan = trainjob_plan.plan(raw, built, observed, now)
        return await self._execute(key, raw, plan, service, memory)

    async def _execute(
        self,
        key: controller.Key,
        raw: dict[str, Any],
        plan: trainjob_plan.Plan,
        service: dict[str, Any] | None,
        memory: _Memory,
    ) -> controller.Result:
        """Carry ``plan`` out, in the order :mod:`.plan` gives."""
        exp_key = str(key)
        old_status = raw.get("status") or {}
        if plan.finished:
            if plan.verdict is not None:
                log.info("TrainJob %s finished: %s", key, plan.verdict)
            await self._write_status(raw, old_status, plan.status)
            memory.finished = True
            await self._delete_pods(exp_key, key.namespace, plan.delete)
            return controller.Result()
        if not self.expectations.satisfied(exp_key):
            return controller.Result(requeue_after=EXPECTATIONS_RECHECK)
        try:
            await self._ensure_extras(key.namespace, plan.extras, plan.suspend, memory)
            await self._ensure_claims(key.namespace, plan.claims, memory)
            await self._ensure_service(plan.jobset, service, plan.restarts, memory)
            if plan.restart is not None:
                await self._record_restart(plan.jobset, plan.restart, memory)
            await self._delete_pods(exp_key, key.namespace, plan.delete)
            await self._create_pods(exp_key, key.namespace, plan.create)
        except kube.Invalid as exc:  # the API server refuses what was built: retrying won't help
            await self._failed_event(raw, str(exc))
            raise controller.TerminalError(str(exc)) from exc
        except kube.ApiError as exc:
            await self._failed_event(raw, str(exc))
            raise
        await self._write_status(raw, old_status, plan.status)
        for type_, reason, message in plan.events:
            await self.recorder.event(raw, _event_type(type_), reason, message)
        return controller.Result(requeue_after=plan.requeue_after)

    def _memory_for(self, key: str, uid: str) -> _Memory:
        memory = self._memory.get(key)
        if memory is None or memory.uid != uid:
            memory = self._memory[key] = _Memory(uid)
        return memory

    async def _typed(self, raw: dict[str, Any]) -> api.TrainJob:
        verdict = api.review(_as_written(raw))
        if not verdict.ok or not isinstance(verdict.obj, api.TrainJob):
            await self._refuse(raw, verdict.errors)
        assert isinstance(verdict.obj, api.TrainJob)
        return verdict.obj

    async def _check_against(self, raw: dict[str, Any], runtime: api.Runtime) -> None:
        """The admission's checks that need the runtime, against the one the job is frozen to
        (the webhook looks up the runtime as it is then; this is the runtime it will run on)."""
        verdict = api.review(_as_written(raw), find_runtime=lambda *_: runtime)
        if not verdict.ok:
            await self._refuse(raw, verdict.errors)

    async def _refuse(self, raw: dict[str, Any], errors: Iterable[object]) -> NoReturn:
        """Refuse the job (see the module docstring), then raise the terminal error."""
        text = "; ".join(str(error) for error in errors)
        old_status = raw.get("status") or {}
        conditions = status.conditions_of(old_status)
        changed = status.refuse(conditions, text, status.timestamp(self.clock()))
        if changed:
            await self._write_status(raw, old_status, status.merged(old_status, conditions, None))
        if changed or status.finished(conditions):
            message = messages.FAILED_VALIDATION_MESSAGE.format(errors=text)
            await self.recorder.event(
                raw, record.WARNING, messages.FAILED_VALIDATION_REASON, message
            )
        meta = raw.get("metadata") or {}
        raise controller.TerminalError(
            f"TrainJob {meta.get('namespace')}/{meta.get('name')}: "
            + messages.FAILED_VALIDATION_MESSAGE.format(errors=text)
        )

    # -- the runtime snapshot --------------------------------------------------------------------

    def _has_snapshot(self, raw: dict[str, Any], memory: _Memory) -> bool:
        meta = raw.get("metadata") or {}
        name = snapshot.name(str(meta.get("name")))
        stored = self.stores.configmaps.get(str(meta.get("namespace")), name)
        return stored is not None or memory.snapshot is not None

    async def _runtime(self, raw: dict[str, Any], memory: _Memory) -> api.Runtime:
        meta = raw.get("metadata") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        try:
            frozen = await self._snapshot(raw, memory, namespace, name)
            return snapshot.typed(frozen)
        except snapshot.InvalidSnapshot as exc:
            await self._failed_event(raw, str(exc))
            raise controller.TerminalError(str(exc)) from exc
        except RuntimeMissing as exc:
            await self._failed_event(raw, str(exc))
            raise

    async def _snapshot(
        self, raw: dict[str, Any], memory: _Memory, namespace: str, name: str
    ) -> dict[str, Any]:
        stored = self.stores.configmaps.get(namespace, snapshot.name(name))
        if stored is not None:
            return snapshot.read(raw, stored)
        if memory.snapshot is not None:
            return memory.snapshot
        ref = (raw.get("spec") or {}).get("runtimeRef") or {}
        if ref.get("kind") == "TrainingRuntime":
            runtime = self.stores.training_runtimes.get(namespace, str(ref.get("name")))
            missing = f'trainingruntimes.trainer.kubeflow.org "{ref.get("name")}" not found'
        else:
            runtime = self.stores.cluster_training_runtimes.get("", str(ref.get("name")))
            missing = f'clustertrainingruntimes.trainer.kubeflow.org "{ref.get("name")}" not found'
        if runtime is None:
            raise RuntimeMissing(missing)
        body = snapshot.config_map(raw, runtime)
        try:
            await self.client.create(kinds.CONFIGMAPS, body, namespace=namespace)
        except kube.AlreadyExists:
            existing = await self.client.get(
                kinds.CONFIGMAPS, body["metadata"]["name"], namespace=namespace
            )
            return snapshot.read(raw, existing)
        log.info(
            "TrainJob %s/%s: runtime %s %s frozen",
            namespace,
            name,
            runtime.get("kind"),
            ref.get("name"),
        )
        memory.snapshot = snapshot.read(raw, body)
        return memory.snapshot

    # -- the host port ---------------------------------------------------------------------------

    async def _host_port(
        self,
        raw: dict[str, Any],
        job: api.TrainJob,
        runtime: api.Runtime,
        pods: Sequence[Mapping[str, Any]],
        memory: _Memory,
    ) -> int | None:
        """The job's port on the host network (see :mod:`.hostport`); None when not forced."""
        if self.host_ports is None:
            return None
        namespace = job.metadata.namespace or ""
        low, high = self.host_ports
        service = self.stores.services.get(namespace, node.subdomain(job, runtime))
        # From here to the reservation nothing awaits, so no other controller of the process
        # can hand out the same port in between.
        port = hostport.port_for(
            namespace,
            job.name,
            service=service,
            remembered=memory.host_port,
            pods=pods,
            taken=self.book.taken,
            low=low,
            high=high,
        )
        if port is None:
            error = (
                f"TrainJob {namespace}/{job.name}: no free host port in {low}-{high}; "
                "accepted: a larger host port range"
            )
            await self._failed_event(raw, error)
            raise NoFreePort(error)
        if hostports.recorded(service) != port:
            self.book.reserve([port])  # held until the job's Service shows it
        if port != memory.host_port:
            log.info("TrainJob %s/%s: host port %d", namespace, job.name, port)
        memory.host_port = port
        return port

    # -- building ----------------------------------------------------------------------------------

    async def _build(
        self,
        raw: dict[str, Any],
        job: api.TrainJob,
        runtime: api.Runtime,
        memory: _Memory,
        host_port: int | None = None,
    ) -> framework.Built:
        key_pair = None
        policy = runtime.spec.ml_policy if runtime.spec is not None else None
        if policy is not None and policy.mpi is not None and not memory.secret_created:
            meta = raw.get("metadata") or {}
            secret_name = f"{meta.get('name')}-mpi-ssh-auth"
            if self.stores.secrets.get(str(meta.get("namespace")), secret_name) is None:
                key_pair = await asyncio.to_thread(self.new_key_pair)
        try:
            context = phases.BuildContext(ssh_key_pair=key_pair, host_port=host_port)
            built = framework.run(job, runtime, context)
        except phases.PluginError as exc:
            await self._refuse(raw, [exc])
        if built.errors:
            await self._refuse(raw, built.errors)
        return built

    async def _failed_event(self, raw: dict[str, Any], error: str) -> None:
        limit = messages.EVENT_ERROR_LIMIT
        text = error if len(error) <= limit else error[:limit] + " ..."
        await self.recorder.event(
            raw,
            record.WARNING,
            messages.RESOURCES_CREATION_FAILED_REASON,
            messages.RESOURCES_CREATION_FAILED_MESSAGE.format(error=text),
        )

    # -- children ----------------------------------------------------------------------------------

    async def _ensure_extras(
        self, namespace: str, objects: Iterable[dict[str, Any]], suspend: bool, memory: _Memory
    ) -> None:
        for obj in objects:
            kind, name = obj.get("kind"), workload.name_of(obj)
            if kind == "Secret":
                if self.stores.secrets.get(namespace, name) is None:
                    await self._create(kinds.SECRETS, obj, namespace)
                memory.secret_created = True
            elif kind == "ConfigMap":
                await self._ensure_config_map(namespace, obj)
            elif kind == "PodGroup":
                await self._ensure_pod_group(namespace, obj, suspend, memory)

    async def _create(self, resource: kube.Resource, obj: dict[str, Any], namespace: str) -> bool:
        """Create ``obj``; False when it exists already (409 = exists)."""
        try:
            await self.client.create(resource, obj, namespace=namespace)
        except kube.AlreadyExists:
            return False
        return True

    async def _ensure_claims(
        self, namespace: str, claims: Iterable[dict[str, Any]], memory: _Memory
    ) -> None:
        """Create each claim once (JobSet never changes one it made; 409 = exists)."""
        for claim in claims:
            name = workload.name_of(claim)
            if name in memory.claims:
                continue
            if await self._create(kinds.PERSISTENT_VOLUME_CLAIMS, claim, namespace):
                log.info("PersistentVolumeClaim %s/%s created", namespace, name)
            memory.claims.add(name)

    async def _ensure_config_map(self, namespace: str, obj: dict[str, Any]) -> None:
        name = workload.name_of(obj)
        current = self.stores.configmaps.get(namespace, name)
        if current is None:
            if not await self._create(kinds.CONFIGMAPS, obj, namespace):
                await self.client.patch(
                    kinds.CONFIGMAPS, name, {"data": obj["data"]}, namespace=namespace
                )
        elif current.get("data") != obj.get("data"):
            await self.client.patch(
                kinds.CONFIGMAPS, name, {"data": obj["data"]}, namespace=namespace
            )

    async def _ensure_pod_group(
        self, namespace: str, obj: dict[str, Any], suspend: bool, memory: _Memory
    ) -> None:
        """Create the PodGroup once; change it only while suspended, as upstream."""
        api_version = str(obj.get("apiVersion"))
        resource = kinds.BY_API_VERSION_KIND[(api_version, "PodGroup")]
        store = self.stores.pod_groups.get(api_version)
        name = workload.name_of(obj)
        exists = api_version in memory.pod_groups or (
            store is not None and store.get(namespace, name) is not None
        )
        if not exists:
            created = await self._create(resource, obj, namespace)
            memory.pod_groups.add(api_version)
            if created:
                return
        if suspend:
            await self.client.apply(
                resource, obj, namespace=namespace, field_manager=FIELD_MANAGER, force=True
            )

    async def _ensure_service(
        self,
        jobset: dict[str, Any],
        service: dict[str, Any] | None,
        restarts: tuple[int, int],
        memory: _Memory,
    ) -> None:
        port = hostports.recorded(jobset)
        if service is not None and port is not None and hostports.recorded(service) != port:
            # A Service from before host networking was forced: it records the port from now on.
            annotations = {hostports.HOST_PORT_ANNOTATION: str(port)}
            await self.client.patch(
                kinds.SERVICES,
                workload.name_of(service),
                {"metadata": {"annotations": annotations}},
                namespace=str((service.get("metadata") or {}).get("namespace")),
            )
            return
        if service is not None or memory.service_created:
            return
        body = workload.desired_service(jobset, *restarts)
        await self._create(kinds.SERVICES, body, str(body["metadata"]["namespace"]))
        memory.service_created = True

    async def _record_restart(
        self, jobset: dict[str, Any], restart: observation.Restart, memory: _Memory
    ) -> None:
        """Write the new restart counts to the Service before any pod of the attempt goes."""
        annotations = workload.restart_annotations(restart.restarts, restart.towards_max)
        namespace = str((jobset.get("metadata") or {}).get("namespace"))
        await self.client.patch(
            kinds.SERVICES,
            workload.subdomain(jobset),
            {"metadata": {"annotations": annotations}},
            namespace=namespace,
        )
        memory.restarts = (restart.restarts, restart.towards_max)
        log.info(
            "TrainJob %s/%s: restart %d (%s)",
            namespace,
            workload.name_of(jobset),
            restart.restarts,
            restart.message,
        )

    async def _create_pods(self, key: str, namespace: str, pods: Sequence[dict[str, Any]]) -> None:
        if not pods:
            return
        self.expectations.expect_creations(key, [workload.name_of(p) for p in pods])

        async def create(pod: dict[str, Any]) -> None:
            name = workload.name_of(pod)
            try:
                await self.client.create(kinds.PODS, pod, namespace=namespace)
            except kube.AlreadyExists:
                self.expectations.lower(key, name)
            except BaseException:
                self.expectations.lower(key, name)
                raise

        await _in_batches(create, pods)

    async def _delete_pods(
        self, key: str, namespace: str, pods: Sequence[Mapping[str, Any]]
    ) -> None:
        doomed = [p for p in pods if not observation.terminating(p)]
        if not doomed:
            return
        self.expectations.expect_deletions(key, [workload.name_of(p) for p in doomed])

        async def delete(pod: Mapping[str, Any]) -> None:
            name = workload.name_of(pod)
            uid = str((pod.get("metadata") or {}).get("uid") or "")
            try:
                await self.client.delete(
                    kinds.PODS,
                    name,
                    namespace=namespace,
                    preconditions={"uid": uid} if uid else None,
                )
            except (kube.NotFound, kube.Conflict):
                self.expectations.deletion_observed(key, name)
            except BaseException:
                self.expectations.lower(key, name)
                raise

        await _in_batches(delete, doomed)

    async def _write_status(
        self, raw: dict[str, Any], old: Mapping[str, Any], new: Mapping[str, Any]
    ) -> None:
        if not status.changed(old, new):
            return
        meta = raw.get("metadata") or {}
        body = {"status": {k: new[k] for k in ("conditions", "jobsStatus") if k in new}}
        try:
            await self.client.patch(
                kinds.TRAINJOBS,
                str(meta.get("name")),
                body,
                namespace=str(meta.get("namespace")),
                subresource="status",
            )
        except kube.NotFound:
            log.debug(
                "TrainJob %s/%s is gone; status not written",
                meta.get("namespace"),
                meta.get("name"),
            )


async def _in_batches(action: Callable[[Any], Any], items: Sequence[Any]) -> None:
    """Run ``action`` over ``items``, at most :data:`PARALLEL_WRITES` at a time; the first
    failure is raised once every call of its batch ended."""
    for start in range(0, len(items), PARALLEL_WRITES):
        batch = items[start : start + PARALLEL_WRITES]
        results = await asyncio.gather(*(action(item) for item in batch), return_exceptions=True)
        for result in results:
            if isinstance(result, asyncio.CancelledError):
                raise result
        for result in results:
            if isinstance(result, BaseException):
                raise result


def _as_written(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The job without its status: the operator's own writing is never part of validation."""
    return {key: value for key, value in raw.items() if key != "status"}


def _event_type(value: str) -> record.EventType:
    return record.WARNING if value == record.WARNING else record.NORMAL
