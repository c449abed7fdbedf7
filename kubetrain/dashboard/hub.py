"""The dashboard's one view of the cluster: one watch per kind, shared by every browser tab.

Each kind the pages show (the eight job kinds, Pods, Nodes, Events, the two TrainJob runtime
kinds, and the ConfigMaps that keep training curves) is listed and watched once, through
:class:`kubetrain.kube.Watch` (which survives timeouts, stalls and 410s), into a store of
plain objects. A page's stream registers a :class:`Listener` and is told which *topics*
changed (a job, a node, a namespace's events, ...), so it recomputes only what it shows and
pushes the difference. Usage (``metrics.k8s.io``) cannot be watched: it is read every
:data:`METRICS_INTERVAL` seconds, once for all tabs.

Everything is read with the user's own credentials. A user who may not list a kind across
namespaces sees it in the fallback namespace (the context's), and a kind that is not served
or not allowed at all is empty, with a note that says why (:attr:`Hub.notes`).

Owns: the watches, the stores, which pod belongs to which job (by the labels
:meth:`kubetrain.cli.jobkinds.JobKind.pod_selector` names), the pods of a job that were
deleted (for the Gantt chart), and telling listeners what changed. Must not: decide what a
page shows (:mod:`kubetrain.dashboard.views`) or write to the API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Final

from kubetrain import _aio, kube, timefmt
from kubetrain.cli import jobkinds, jobs, replicas, top
from kubetrain.cli import usage as amounts
from kubetrain.dashboard import curves
from kubetrain.kube import resource, watch

log = logging.getLogger(__name__)

METRICS_INTERVAL: Final = 10.0  # seconds between two reads of the metrics API
COALESCE: Final = 0.05  # seconds a listener waits after a change for the ones that follow
GONE_PER_JOB: Final = 64  # deleted pods kept per job, newest last
GONE_JOBS: Final = 2048  # jobs whose deleted pods are kept, least recently changed dropped

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
JobKey = tuple[str, str, str]  # (kind, namespace, name)
Topic = tuple[str, Any]

# Topics a listener is told about.
JOB: Final = "job"  # key: JobKey; the job, or one of its pods, changed
NODE: Final = "node"  # key: node name; the node, or a pod bound to it, changed
EVENTS: Final = "events"  # key: namespace
RUNTIMES: Final = "runtimes"  # key: None; a TrainJob runtime changed
CURVES: Final = "curves"  # key: (namespace, TrainJob name); its stored training curves
USAGE: Final = "usage"  # key: None; a new read of the metrics API
NOTES: Final = "notes"  # key: None; what the dashboard cannot show changed

POD: Final = "Pod"
NODE_KIND: Final = "Node"
EVENT: Final = "Event"
TRAINING_RUNTIME: Final = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME: Final = "ClusterTrainingRuntime"
CURVES_CONFIGMAP: Final = "ConfigMap"


@dataclass(frozen=True)
class Source:
    """One watched kind: its name in the stores, where it lives, and which objects."""

    name: str
    resource: kube.Resource
    label_selector: str | None = None

    @property
    def cluster_scoped(self) -> bool:
        return not self.resource.namespaced


def sources() -> tuple[Source, ...]:
    trainer = (jobkinds.TRAINER_GROUP, jobkinds.TRAINER_VERSION)
    return (
        *(Source(kind.kind, kind.resource) for kind in jobkinds.KINDS),
        Source(POD, resource.PODS),
        Source(NODE_KIND, jobs.NODES),
        Source(EVENT, jobs.EVENTS),
        Source(TRAINING_RUNTIME, kube.Resource(*trainer, "trainingruntimes")),
        Source(
            CLUSTER_TRAINING_RUNTIME,
            kube.Resource(*trainer, "clustertrainingruntimes", namespaced=False),
        ),
        Source(CURVES_CONFIGMAP, resource.CONFIGMAPS, label_selector=curves.LABEL),
    )


@dataclass(frozen=True)
class _PodLabels:
    """How the pods of one kind's jobs are labelled: the label holding the job's name, and
    the labels every such pod has (read off the kind's own pod selector)."""

    kind: str
    name_label: str
    fixed: tuple[tuple[str, str], ...]


def _pod_labels(kind: jobkinds.JobKind) -> _PodLabels:
    marker = "\x00"
    name_label, fixed = "", []
    for part in kind.pod_selector(marker).split(","):
        label, _, value = part.partition("=")
        if value == marker:
            name_label = label
        else:
            fixed.append((label, value))
    return _PodLabels(kind.kind, name_label, tuple(fixed))


_POD_LABELS: Final = tuple(_pod_labels(kind) for kind in jobkinds.KINDS)


def job_of_pod(pod: Mapping[str, Any]) -> JobKey | None:
    """The job a pod belongs to, by its labels; None for a pod of no job."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for known in _POD_LABELS:
        name = labels.get(known.name_label)
        if name and all(labels.get(k) == v for k, v in known.fixed):
            return known.kind, jobs.namespace_of(pod), str(name)
    return None


def job_key(job: Mapping[str, Any]) -> JobKey:
    return str(job.get("kind")), jobs.namespace_of(job), jobs.name_of(job)


class Listener:
    """What changed since the listener last looked; :meth:`next` waits for something."""

    def __init__(self, coalesce: float = COALESCE) -> None:
        self._changed: set[Topic] = set()
        self._event = asyncio.Event()
        self._coalesce = coalesce

    def tell(self, topics: Iterable[Topic]) -> None:
        before = len(self._changed)
        self._changed.update(topics)
        if len(self._changed) != before:
            self._event.set()

    async def next(self) -> set[Topic]:
        """The topics that changed, once some did (a burst arrives as one set)."""
        await self._event.wait()
        if self._coalesce:
            await asyncio.sleep(self._coalesce)
        self._event.clear()
        changed, self._changed = self._changed, set()
        return changed


@dataclass
class Usage:
    """The last read of the metrics API: by pod (namespace, name) and by node name."""

    pods: dict[Key, amounts.Amounts] = field(default_factory=dict)
    nodes: dict[str, amounts.Amounts] = field(default_factory=dict)
    read: bool = False


class Hub:
    """The stores, kept current by one watch per kind. ``namespace``: only that namespace
    (None: every namespace the user may list, else ``fallback_namespace``)."""

    def __init__(
        self,
        client: kube.Client,
        *,
        namespace: str | None = None,
        fallback_namespace: str = "default",
        settings: watch.Settings | None = None,
        metrics_interval: float = METRICS_INTERVAL,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.fallback_namespace = fallback_namespace
        self.settings = settings
        self.metrics_interval = metrics_interval
        self.sources = sources()
        self.stores: dict[str, dict[Key, dict[str, Any]]] = {s.name: {} for s in self.sources}
        self.notes: dict[str, str] = {}
        self.usage = Usage()
        self._synced = {s.name: asyncio.Event() for s in self.sources}
        self._listeners: set[Listener] = set()
        self._pods_of: dict[JobKey, dict[str, dict[str, Any]]] = {}
        self._gone: OrderedDict[JobKey, list[dict[str, Any]]] = OrderedDict()

    # -- reading --------------------------------------------------------------------------

    async def ready(self, *names: str, timeout: float | None = None) -> None:
        """Wait until the named kinds (default: all) have been listed once."""
        wanted = [self._synced[n] for n in names or self._synced]
        async with _aio.timeout(timeout):
            for event in wanted:
                await event.wait()

    def jobs(self) -> list[dict[str, Any]]:
        return [job for kind in jobkinds.KINDS for job in self.stores[kind.kind].values()]

    def job(self, key: JobKey) -> dict[str, Any] | None:
        kind, namespace, name = key
        store = self.stores.get(kind)
        return None if store is None else store.get((namespace, name))

    def pods_of(self, key: JobKey) -> list[dict[str, Any]]:
        return list(self._pods_of.get(key, {}).values())

    def gone_pods_of(self, key: JobKey) -> list[dict[str, Any]]:
        """The job's pods deleted while the dashboard watched, oldest first."""
        return list(self._gone.get(key, ()))

    def pods(self) -> Iterable[dict[str, Any]]:
        return self.stores[POD].values()

    def nodes(self) -> list[dict[str, Any]]:
        return sorted(self.stores[NODE_KIND].values(), key=jobs.name_of)

    def events_in(self, namespace: str) -> list[dict[str, Any]]:
        return [e for (ns, _), e in self.stores[EVENT].items() if ns == namespace]

    def runtime_of(self, job: Mapping[str, Any]) -> dict[str, Any] | None:
        """The TrainingRuntime or ClusterTrainingRuntime a TrainJob refers to, if seen."""
        where = jobs.runtime_ref(job)
        if where is None:
            return None
        runtimes, namespace, name = where
        store = TRAINING_RUNTIME if runtimes.namespaced else CLUSTER_TRAINING_RUNTIME
        return self.stores[store].get((namespace or "", name))

    def curves_of(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ConfigMap holding a TrainJob's training curves, if there is one."""
        for (ns, _), configmap in self.stores[CURVES_CONFIGMAP].items():
            labels = (configmap.get("metadata") or {}).get("labels") or {}
            if ns == namespace and labels.get(curves.LABEL) == name:
                return configmap
        return None

    # -- listening ------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def listen(self, coalesce: float = COALESCE) -> AsyncIterator[Listener]:
        listener = Listener(coalesce)
        self._listeners.add(listener)
        try:
            yield listener
        finally:
            self._listeners.discard(listener)

    def tell(self, topics: Iterable[Topic]) -> None:
        """Tell every listener that ``topics`` changed."""
        found = set(topics)
        if not found:
            return
        for listener in list(self._listeners):
            listener.tell(found)

    # -- watching -------------------------------------------------------------------------

    async def run(self) -> None:
        """Watch every kind and read usage, until cancelled."""
        async with _aio.TaskGroup() as group:
            for source in self.sources:
                group.create_task(
                    self._guarded(source.name, self._watch(source)),
                    name=f"dashboard: watch {source.name}",
                )
            group.create_task(
                self._guarded("metrics", self._read_usage()), name="dashboard: metrics"
            )

    async def _guarded(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work``; should it fail, say so in a note and go on without it: a kind that
        cannot be shown must not stop the others."""
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("dashboard: %s failed", name)
            self._note(name, f"{name} cannot be shown: {exc}")
        finally:
            if name in self._synced:
                self._synced[name].set()

    async def _watch(self, source: Source) -> None:
        namespace = None if source.cluster_scoped else self.namespace
        while True:
            stream = self.client.watch(
                source.resource,
                namespace=namespace,
                label_selector=source.label_selector,
                settings=self.settings,
            )
            try:
                async with contextlib.aclosing(aiter(stream)) as events:
                    async for event in events:
                        self._apply(source.name, event)
            except kube.NotFound:
                self._note(
                    source.name,
                    f"the API server does not serve {source.resource.group_resource}",
                )
                return
            except kube.Forbidden as exc:
                if namespace is None and not source.cluster_scoped:
                    namespace = self.fallback_namespace
                    self._note(
                        source.name,
                        f"{source.resource.group_resource}: only namespace {namespace} is "
                        f"shown: {exc.message}",
                    )
                    continue
                self._note(source.name, f"{source.resource.group_resource}: {exc.message}")
                return

    def _note(self, name: str, text: str) -> None:
        log.info("dashboard: %s", text)
        self.notes[name] = text
        self.tell([(NOTES, None)])

    def _apply(self, name: str, event: watch.Event) -> None:
        store = self.stores[name]
        topics: list[Topic] = []
        if event.type == watch.SYNC:
            fresh = {_key(obj): _with_kind(obj, name) for obj in event.object.get("items") or []}
            for key in store.keys() - fresh.keys():
                topics += self._remove(name, key)
            for key, obj in fresh.items():
                if store.get(key) != obj:
                    topics += self._put(name, key, obj)
            self._synced[name].set()
        elif event.type == watch.DELETED:
            topics += self._remove(name, _key(event.object))
        else:
            obj = _with_kind(event.object, name)
            topics += self._put(name, _key(obj), obj)
        self.tell(topics)

    def _put(self, name: str, key: Key, obj: dict[str, Any]) -> list[Topic]:
        before = self.stores[name].get(key)
        self.stores[name][key] = obj
        return self._topics(name, key, obj, before, deleted=False)

    def _remove(self, name: str, key: Key) -> list[Topic]:
        before = self.stores[name].pop(key, None)
        if before is None:
            return []
        return self._topics(name, key, before, before, deleted=True)

    def _topics(
        self,
        name: str,
        key: Key,
        obj: dict[str, Any],
        before: dict[str, Any] | None,
        *,
        deleted: bool,
    ) -> list[Topic]:
        namespace, object_name = key
        if name == POD:
            return self._pod_changed(obj, before, deleted=deleted)
        if name == NODE_KIND:
            return [(NODE, object_name)]
        if name == EVENT:
            return [(EVENTS, namespace)]
        if name in (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME):
            return [(RUNTIMES, None)]
        if name == CURVES_CONFIGMAP:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            return [(CURVES, (namespace, str(labels.get(curves.LABEL) or "")))]
        job = (name, namespace, object_name)
        if deleted:
            self._gone.pop(job, None)
        return [(JOB, job)]

    def _pod_changed(
        self, pod: dict[str, Any], before: dict[str, Any] | None, *, deleted: bool
    ) -> list[Topic]:
        topics: list[Topic] = []
        owner = job_of_pod(pod)
        name = jobs.name_of(pod)
        if owner is not None:
            if deleted:
                self._pods_of.get(owner, {}).pop(name, None)
                gone = self._gone.setdefault(owner, [])
                gone.append(_deleted(pod))
                del gone[:-GONE_PER_JOB]
                self._gone.move_to_end(owner)
                while len(self._gone) > GONE_JOBS:
                    self._gone.popitem(last=False)
            else:
                self._pods_of.setdefault(owner, {})[name] = pod
            topics.append((JOB, owner))
        for bound in {replicas.node(pod), replicas.node(before)} - {None}:
            topics.append((NODE, bound))
        return topics

    # -- usage ----------------------------------------------------------------------------

    async def _read_usage(self) -> None:
        while True:
            pods, pod_note = await _metrics(self.client, top.POD_METRICS, self.namespace)
            nodes, node_note = await _metrics(self.client, top.NODE_METRICS)
            self.usage = Usage(
                pods=top.by_pod(pods) if pods is not None else {},
                nodes={
                    jobs.name_of(item): top.metrics_usage(item)
                    for item in (nodes or {}).get("items") or []
                },
                read=pods is not None or nodes is not None,
            )
            note = pod_note or node_note
            if note and self.notes.get("metrics") != note:
                self._note("metrics", note)
            self.tell([(USAGE, None)])
            await asyncio.sleep(self.metrics_interval)


async def _metrics(
    client: kube.Client, r: kube.Resource, namespace: str | None = None
) -> tuple[dict[str, Any] | None, str]:
    """A metrics list, or None and why there is none (not served, not allowed, down). Unlike
    ``kubetrain top``, which fails on an unexpected answer, the dashboard goes on without
    usage and says so."""
    try:
        return await client.list(r, namespace=namespace), ""
    except kube.NotFound:
        return None, top.USAGE_NOTE
    except kube.ApiError as exc:
        return None, f"requests only: the metrics API did not answer: {exc.message}"


def _key(obj: Mapping[str, Any]) -> Key:
    return jobs.namespace_of(obj), jobs.name_of(obj)


def _with_kind(obj: dict[str, Any], name: str) -> dict[str, Any]:
    if name in {k.kind for k in jobkinds.KINDS}:
        kind = jobkinds.find(name)
        obj.setdefault("apiVersion", kind.resource.api_version)
        obj.setdefault("kind", kind.kind)
    return obj


def _deleted(pod: dict[str, Any]) -> dict[str, Any]:
    """A deleted pod as the Gantt chart keeps it: its deletion time set when it had none."""
    meta = dict(pod.get("metadata") or {})
    meta.setdefault("deletionTimestamp", timefmt.seconds(datetime.now(timezone.utc)))
    return {**pod, "metadata": meta}
