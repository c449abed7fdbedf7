"""Reading jobs and what belongs to them from the API server: find a job by what the user
typed, list jobs of every kind, a job's pods and events, and follow one job's changes.

Owns: those reads, and the user-facing errors when a job cannot be found (each says what to
do). Must not: print, or decide what a job's state is (:mod:`kubetrain.cli.jobstate`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from kubetrain import accessors, kube
from kubetrain.cli import jobkinds
from kubetrain.cli.errors import UserError
from kubetrain.kube import resource, watch

Job = dict[str, Any]
EVENTS = kube.Resource("", "v1", "events", kind="Event")
NODES = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")


name_of = accessors.name_of  # one home: kubetrain.accessors


namespace_of = accessors.namespace_of


def ref_of(job: Mapping[str, Any]) -> str:
    """``pytorchjob/NAME``, how messages name a job."""
    return jobkinds.of(job).ref(name_of(job))


def not_found(what: str, namespace: str) -> UserError:
    return UserError(
        f"no such job {what} in namespace {namespace}; "
        "`kubetrain list -A` shows jobs in all namespaces"
    )


async def get(client: kube.Client, kind: jobkinds.JobKind, namespace: str, name: str) -> Job | None:
    """The job, or None if there is none of that kind and name (or the kind is not served)."""
    try:
        job: Job = await client.get(kind.resource, name, namespace=namespace)
    except kube.NotFound:
        return None
    job.setdefault("apiVersion", kind.resource.api_version)
    job.setdefault("kind", kind.kind)
    return job


async def find(client: kube.Client, ref: jobkinds.JobRef, namespace: str) -> Job:
    """The one job ``ref`` names in ``namespace``; a :class:`UserError` saying what to do when
    there is none, or when a bare name is a job of several kinds."""
    if ref.kind is not None:
        job = await get(client, ref.kind, namespace, ref.name)
        if job is None:
            raise not_found(str(ref), namespace)
        return job
    found = await asyncio.gather(
        *(get(client, kind, namespace, ref.name) for kind in jobkinds.KINDS)
    )
    jobs = [job for job in found if job is not None]
    if not jobs:
        raise not_found(ref.name, namespace)
    if len(jobs) > 1:
        names = ", ".join(ref_of(job) for job in jobs)
        raise UserError(
            f"job name {ref.name} is ambiguous in namespace {namespace}: {names}; "
            "name one as KIND/NAME"
        )
    return jobs[0]


async def find_all(client: kube.Client, texts: Sequence[str], namespace: str) -> list[Job]:
    """The jobs several references name, in order; the first unknown one is the error."""
    refs = [jobkinds.parse_ref(text) for text in texts]
    return list(await asyncio.gather(*(find(client, ref, namespace) for ref in refs)))


async def list_jobs(
    client: kube.Client,
    namespace: str | None,
    kinds: Sequence[jobkinds.JobKind] = jobkinds.KINDS,
    *,
    label_selector: str | None = None,
) -> list[Job]:
    """Every job of ``kinds`` (in every namespace when ``namespace`` is None), ordered by
    namespace, kind and name. Kinds the server does not serve are left out; when it serves
    none of them, a :class:`UserError` says to install the CRDs."""

    async def one(kind: jobkinds.JobKind) -> list[Job] | None:
        try:
            listed = await client.list_all(
                kind.resource, namespace=namespace, label_selector=label_selector
            )
        except kube.NotFound:
            return None
        return list(listed.get("items") or [])

    results = await asyncio.gather(*(one(kind) for kind in kinds))
    if all(r is None for r in results):
        served = ", ".join(k.resource.group_resource for k in kinds)
        raise UserError(
            f"the API server at {client.host} serves none of {served}; install the CRDs "
            "(`kubetrain crds | kubectl apply -f -`)"
        )
    jobs = [job for listed in results for job in listed or []]
    order = {k.kind: i for i, k in enumerate(jobkinds.KINDS)}
    jobs.sort(key=lambda j: (namespace_of(j), order.get(str(j.get("kind")), 99), name_of(j)))
    return jobs


async def pods(client: kube.Client, job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The job's pods, found by the labels its controller puts on them."""
    kind = jobkinds.of(job)
    listed = await client.list_all(
        resource.PODS,
        namespace=namespace_of(job),
        label_selector=kind.pod_selector(name_of(job)),
    )
    return list(listed.get("items") or [])


async def trainjob_pods(
    client: kube.Client, namespaces: Iterable[str]
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The TrainJob pods of each namespace, by (namespace, job name): one list per namespace
    for every job in it, where :func:`pods` would take one per job."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for namespace in sorted(set(namespaces)):
        listed = await client.list_all(
            resource.PODS, namespace=namespace, label_selector=jobkinds.JOBSET_NAME_LABEL
        )
        for pod in listed.get("items") or []:
            labels = (pod.get("metadata") or {}).get("labels") or {}
            found.setdefault((namespace, labels[jobkinds.JOBSET_NAME_LABEL]), []).append(pod)
    return found


RuntimeNodes = dict[tuple[str, str, str], int | None]


def runtime_ref(job: Mapping[str, Any]) -> tuple[kube.Resource, str | None, str] | None:
    """Where a TrainJob's runtime lives: (resource, namespace or None, name); None for other
    kinds and a TrainJob that names no runtime."""
    if jobkinds.of(job) is not jobkinds.TRAINJOB:
        return None
    spec = job.get("spec") if isinstance(job.get("spec"), Mapping) else {}
    ref = spec.get("runtimeRef") if isinstance(spec.get("runtimeRef"), Mapping) else {}
    name = ref.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespaced = ref.get("kind") == "TrainingRuntime"
    plural = "trainingruntimes" if namespaced else "clustertrainingruntimes"
    runtimes = kube.Resource(
        jobkinds.TRAINER_GROUP, jobkinds.TRAINER_VERSION, plural, namespaced=namespaced
    )
    return runtimes, namespace_of(job) if namespaced else None, name


def nodes_of_runtime(runtime: Mapping[str, Any]) -> int | None:
    """The nodes a runtime gives its TrainJobs: ``mlPolicy.numNodes``, 1 when the policy
    leaves it out (Trainer's default)."""
    policy = (runtime.get("spec") or {}).get("mlPolicy") or {}
    nodes = policy.get("numNodes", 1) if isinstance(policy, Mapping) else 1
    return nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None


async def runtime_nodes(
    client: kube.Client, job: Mapping[str, Any], known: RuntimeNodes | None = None
) -> int | None:
    """How many nodes a TrainJob's runtime gives it (:func:`nodes_of_runtime`); None for
    other kinds or a runtime that cannot be read. ``known`` keeps the answers by runtime, so
    jobs sharing one read it once."""
    where = runtime_ref(job)
    if where is None:
        return None
    runtimes, namespace, name = where
    key = (runtimes.plural, namespace or "", name)
    if known is not None and key in known:
        return known[key]
    try:
        runtime = await client.get(runtimes, name, namespace=namespace)
    except kube.ApiError:
        found = None
    else:
        found = nodes_of_runtime(runtime)
    if known is not None:
        known[key] = found
    return found


async def events(
    client: kube.Client, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Events about the job and its pods (and the services named like them), oldest first."""
    listed = await client.list_all(EVENTS, namespace=namespace_of(job))
    return about(job, pods, listed.get("items") or [])


def about(
    job: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    events: Iterable[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Those of ``events`` (of the job's namespace) that are about the job, its pods or the
    services named like them, oldest first."""
    kind = str(job.get("kind"))
    mine = {(kind, name_of(job))}
    for pod in pods:
        mine |= {("Pod", name_of(pod)), ("Service", name_of(pod))}
    found = []
    for event in events:
        involved = event.get("involvedObject") or {}
        if (involved.get("kind"), involved.get("name")) in mine:
            found.append(event)
    found.sort(key=event_time)
    return found


def event_time(event: Mapping[str, Any]) -> str:
    """When an event last happened, as an RFC 3339 string (sortable)."""
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    return str((event.get("metadata") or {}).get("creationTimestamp") or "")


async def follow(
    client: kube.Client, job: Mapping[str, Any], *, settings: watch.Settings | None = None
) -> AsyncIterator[Job | None]:
    """The job now and after every change, until the caller stops; None once it is gone
    (a new job of the same name is not the one followed)."""
    kind = jobkinds.of(job)
    uid = (job.get("metadata") or {}).get("uid")

    def same(obj: dict[str, Any]) -> Job | None:
        found = (obj.get("metadata") or {}).get("uid")
        return _with_kind(obj, kind) if uid is None or found == uid else None

    stream = client.watch(
        kind.resource,
        namespace=namespace_of(job),
        field_selector=f"metadata.name={name_of(job)}",
        settings=settings,
    )
    async with contextlib.aclosing(aiter(stream)) as events:
        async for event in events:
            if event.type == watch.SYNC:
                items = event.object.get("items") or []
                yield same(items[0]) if items else None
            elif event.type == watch.DELETED:
                yield None
            else:
                yield same(event.object)


def _with_kind(obj: dict[str, Any], kind: jobkinds.JobKind) -> Job:
    obj.setdefault("apiVersion", kind.resource.api_version)
    obj.setdefault("kind", kind.kind)
    return obj
