"""``TrainerClient``: Kubeflow Trainer v2 jobs (TrainJob) with the Kubeflow SDK's names and
semantics, on the local control plane or a cluster.

Synchronous for its callers, like the Kubeflow SDK (a notebook calls ``client.train(...)``);
underneath, every call is a coroutine on the client's private event loop
(:mod:`kubetrain.sdk._loop`). Where it differs from ``kubeflow.trainer`` 0.5, on purpose:

- the default backend is kubetrain's local control plane, started when not running; jobs are
  TrainJobs there too, so a new client (or the command line) sees them, and nodes are real
  processes, several per node under torchrun;
- ``func_args`` always arrive as keyword arguments, and the function is checked before
  anything is submitted (:mod:`kubetrain.sdk._functions`);
- ``get_job_logs(follow=True)`` is a real stream: it waits for the step to start and yields
  each line as it is written;
- ``wait_for_job_status`` watches instead of polling (``polling_interval`` bounds how long
  it goes without looking), and fails at once, with the step, its exit code and its last log
  lines, when the job fails or a step exits non-zero, unless ``Failed`` is awaited.

Must not: print, or import the command line.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from kubetrain import kube
from kubetrain.sdk import _builtin, _functions, _logs, _status, _trainjobs, _types
from kubetrain.sdk._connection import Changes, Connected, Connection
from kubetrain.sdk._errors import InvalidTrainer, NotFoundError, WaitTimeout

log = logging.getLogger(__name__)

GROUP: Final = _trainjobs.GROUP
TRAINJOBS: Final = kube.Resource(GROUP, "v1alpha1", "trainjobs", kind="TrainJob")
TRAINING_RUNTIMES: Final = kube.Resource(
    GROUP, "v1alpha1", "trainingruntimes", kind="TrainingRuntime"
)
CLUSTER_TRAINING_RUNTIMES: Final = kube.Resource(
    GROUP, "v1alpha1", "clustertrainingruntimes", namespaced=False, kind="ClusterTrainingRuntime"
)
PODS: Final = kube.resource.PODS
EVENTS: Final = kube.Resource("", "v1", "events", kind="Event")
LOG_TAIL: Final = 10  # lines of a failed step's log in a failure message
FOLLOW_INTERVAL: Final = 1.0  # seconds between looks while a follower waits for its step
MISSING_CRDS: Final = (
    "the API server does not serve {what}: install Kubeflow Trainer's CRDs "
    "(`kubetrain crds | kubectl apply -f -`)"
)


class TrainerClient(Connected):
    """TrainJobs, runtimes, logs and events, on the local control plane (default) or a
    cluster (``KubernetesBackendConfig``). Use it as a context manager, or :meth:`close` it,
    to end its connection early; otherwise that happens when it is garbage-collected."""

    def __init__(self, backend_config: _types.BackendConfig | None = None) -> None:
        self._conn = Connection(backend_config, name="kubetrain-trainer-client")
        self._rng = random.Random()

    def __repr__(self) -> str:
        where = self._where()
        return f"TrainerClient({where}, namespace={self.namespace!r})"

    def _run(self, coro: Any) -> Any:
        return self._conn.loop.run(coro)

    # -- runtimes ---------------------------------------------------------------------------

    def list_runtimes(self) -> list[_types.Runtime]:
        """The runtimes a TrainJob of the namespace can name: its TrainingRuntimes and every
        ClusterTrainingRuntime (a TrainingRuntime hides a cluster one of the same name)."""
        return self._run(self._list_runtimes())

    def get_runtime(self, name: str) -> _types.Runtime:
        return _status.runtime_of(self._run(self._runtime_object(name)))

    async def _list_runtimes(self) -> list[_types.Runtime]:
        namespaced = await self._list(TRAINING_RUNTIMES, namespace=self.namespace)
        cluster = await self._list(CLUSTER_TRAINING_RUNTIMES)
        return _status.merge_runtimes(namespaced, cluster)

    async def _list(self, resource: kube.Resource, **options: Any) -> list[dict[str, Any]]:
        try:
            listed = await self._conn.client.list_all(resource, **options)
        except kube.NotFound as exc:
            if exc.details.get("name"):
                raise
            raise NotFoundError(MISSING_CRDS.format(what=resource.group_resource)) from exc
        return list(listed.get("items") or [])

    async def _runtime_object(self, name: str, kind: str | None = None) -> dict[str, Any]:
        """The runtime a TrainJob naming ``name`` (of ``kind``, default either) gets."""
        client = self._conn.client
        if kind in (None, _types.RuntimeKind.TRAINING_RUNTIME.value):
            with contextlib.suppress(kube.NotFound):
                found = await client.get(TRAINING_RUNTIMES, name, namespace=self.namespace)
                found.setdefault("kind", TRAINING_RUNTIMES.kind)
                return found
        if kind in (None, _types.RuntimeKind.CLUSTER_TRAINING_RUNTIME.value):
            with contextlib.suppress(kube.NotFound):
                found = await client.get(CLUSTER_TRAINING_RUNTIMES, name)
                found.setdefault("kind", CLUSTER_TRAINING_RUNTIMES.kind)
                return found
        known = ", ".join(r.name for r in await self._list_runtimes()) or "none"
        raise NotFoundError(
            f"runtime {name!r} not found in namespace {self.namespace} or the cluster; "
            f"accepted: {known} (kubectl apply -k deploy/runtimes installs the built-in ones)"
        )

    # -- submitting -------------------------------------------------------------------------

    def train(
        self,
        runtime: str | _types.Runtime | None = None,
        initializer: _types.Initializer | None = None,
        trainer: _types.Trainer | _builtin.BuiltinTrainer | None = None,
        options: _types.Options | None = None,
    ) -> str:
        """Submit a TrainJob; returns its name. ``runtime`` defaults to torch-distributed.
        A ``CustomTrainer``'s function is checked first: InvalidTrainer (a ValueError) says
        why it cannot run on its own."""
        if trainer is not None and not isinstance(
            trainer, _types.CustomTrainer | _types.CommandTrainer | _builtin.BuiltinTrainer
        ):
            raise InvalidTrainer(
                f"trainer: {trainer!r}; accepted: CustomTrainer, CommandTrainer, BuiltinTrainer"
            )
        if initializer is not None and not isinstance(initializer, _types.Initializer):
            raise InvalidTrainer(f"initializer: {initializer!r}; accepted: an Initializer")
        options = _trainjobs.check_options(options)
        if isinstance(trainer, _types.CustomTrainer):  # fail before any server round trip
            _functions.prepare(trainer.func, trainer.func_args)
        if runtime is None:
            name, kind = _trainjobs.DEFAULT_RUNTIME, None
        elif isinstance(runtime, _types.Runtime):
            name, kind = runtime.name, _types.RuntimeKind(runtime.kind).value
        elif isinstance(runtime, str):
            name, kind = runtime, None
        else:
            raise InvalidTrainer(
                f"runtime: {runtime!r}; accepted: a runtime name or a Runtime from list_runtimes()"
            )
        return self._run(self._train(name, kind, initializer, trainer, options))

    async def _train(
        self,
        runtime_name: str,
        runtime_kind: str | None,
        initializer: _types.Initializer | None,
        trainer: _types.Trainer | _builtin.BuiltinTrainer | None,
        options: list[_types.Option],
    ) -> str:
        runtime = await self._runtime_object(runtime_name, runtime_kind)
        job = _trainjobs.build(
            name=_trainjobs.generate_name(self._rng),
            namespace=self.namespace,
            runtime=runtime,
            trainer=trainer,
            initializer=initializer,
            options=options,
        )
        created = await self._conn.client.create(TRAINJOBS, job, namespace=self.namespace)
        name = _status.name_of(created)
        log.info("TrainJob %s/%s created on runtime %s", self.namespace, name, runtime_name)
        return name

    # -- jobs -------------------------------------------------------------------------------

    def list_jobs(self, runtime: _types.Runtime | str | None = None) -> list[_types.TrainJob]:
        """The namespace's TrainJobs (those on ``runtime`` when given), oldest first."""
        if runtime is not None and not isinstance(runtime, str | _types.Runtime):
            raise InvalidTrainer(f"runtime: {runtime!r}; accepted: a runtime name or a Runtime")
        wanted = runtime.name if isinstance(runtime, _types.Runtime) else runtime
        return self._run(self._list_jobs(wanted))

    async def _list_jobs(self, runtime: str | None) -> list[_types.TrainJob]:
        objects = await self._list(TRAINJOBS, namespace=self.namespace)
        if runtime is not None:
            objects = [
                o for o in objects if _status.dig(o, "spec", "runtimeRef", "name") == runtime
            ]
        if not objects:
            return []
        pods = await self._conn.client.list_all(
            PODS, namespace=self.namespace, label_selector=_status.JOBSET_NAME
        )
        by_job = _status.pods_by_job(pods.get("items") or [])
        runtimes: dict[tuple[str, str], _types.Runtime] = {}
        jobs = []
        for obj in objects:
            ref = _status.dig(obj, "spec", "runtimeRef") or {}
            key = (str(ref.get("kind") or ""), str(ref.get("name") or ""))
            if key not in runtimes:
                runtimes[key] = await self._runtime_for(obj)
            jobs.append(
                _status.trainjob_of(obj, runtimes[key], by_job.get(_status.name_of(obj), []))
            )
        jobs.sort(key=lambda j: (j.creation_timestamp is None, j.creation_timestamp, j.name))
        return jobs

    async def _runtime_for(self, obj: Mapping[str, Any]) -> _types.Runtime:
        ref = _status.dig(obj, "spec", "runtimeRef") or {}
        name, kind = str(ref.get("name") or ""), ref.get("kind")
        try:
            return _status.runtime_of(await self._runtime_object(name, kind))
        except NotFoundError:
            return _status.missing_runtime(name, kind)

    def get_job(self, name: str) -> _types.TrainJob:
        """The TrainJob with its steps (one per pod: status, node, device, exit code)."""
        return self._run(self._job(name))

    async def _object(self, name: str) -> dict[str, Any]:
        try:
            return await self._conn.client.get(TRAINJOBS, name, namespace=self.namespace)
        except kube.NotFound as exc:
            raise NotFoundError(
                f"TrainJob {self.namespace}/{name} not found; list_jobs() shows the jobs of "
                f"namespace {self.namespace}"
            ) from exc

    async def _pods(self, name: str) -> list[dict[str, Any]]:
        listed = await self._conn.client.list_all(
            PODS, namespace=self.namespace, label_selector=f"{_status.JOBSET_NAME}={name}"
        )
        return list(listed.get("items") or [])

    async def _job(self, name: str) -> _types.TrainJob:
        obj = await self._object(name)
        pods = await self._pods(name)
        return _status.trainjob_of(obj, await self._runtime_for(obj), pods)

    def delete_job(self, name: str) -> None:
        """Delete the TrainJob; its pods and other objects go with it."""
        self._run(self._delete(name))

    async def _delete(self, name: str) -> None:
        try:
            await self._conn.client.delete(
                TRAINJOBS, name, namespace=self.namespace, propagation_policy="Background"
            )
        except kube.NotFound as exc:
            raise NotFoundError(f"TrainJob {self.namespace}/{name} not found") from exc

    # -- logs and events --------------------------------------------------------------------

    def get_job_logs(self, name: str, step: str = "node-0", follow: bool = False) -> Iterator[str]:
        """The log of one step (``node-0``, ``node-1``, ..., ``dataset-initializer``) of the
        job, a line at a time. With ``follow``, waits for the step to start and yields lines
        as they are written until it ends (or the job finishes without it)."""
        self._run(self._object(name))  # a missing job fails here, not at the first next()
        return self._conn.loop.iterate(self._step_log(name, step, follow))

    async def _step_log(self, name: str, step: str, follow: bool) -> AsyncIterator[str]:
        if follow:
            pod = await self._wait_started(name, step)
        else:
            pod = self._pod_of(step, await self._job(name), await self._pods(name))
        if pod is None:
            return
        container = str(_status.main_container(pod).get("name") or _status.NODE)
        if not _logs.started(pod, container):
            return
        async for line in _logs.lines(
            self._conn.client, self.namespace, _status.name_of(pod), container, follow=follow
        ):
            yield line

    @staticmethod
    def _pod_of(
        step: str, job: _types.TrainJob, pods: Iterable[Mapping[str, Any]]
    ) -> Mapping[str, Any] | None:
        found = next((s for s in job.steps if s.name == step), None)
        if found is None:
            return None
        return next((p for p in pods if _status.name_of(p) == found.pod_name), None)

    async def _wait_started(self, name: str, step: str) -> Mapping[str, Any] | None:
        """The step's pod once its container started; None if the job ends (or goes) first."""
        sources = self._sources(name)
        async with Changes(self._conn, sources, interval=FOLLOW_INTERVAL) as changes:
            while True:
                try:
                    obj = await self._object(name)
                except NotFoundError:
                    return None
                pods = await self._pods(name)
                job = _status.trainjob_of(obj, await self._runtime_for(obj), pods)
                pod = self._pod_of(step, job, pods)
                if pod is not None:
                    container = str(_status.main_container(pod).get("name") or _status.NODE)
                    if _logs.started(pod, container):
                        return pod
                if job.status in (_status.COMPLETE, _status.FAILED):
                    return None
                await changes.wait()

    def _sources(self, name: str) -> list[tuple[kube.Resource, dict[str, Any]]]:
        """The watches that see a job change: its pods and the TrainJob itself."""
        pods = {"namespace": self.namespace, "label_selector": f"{_status.JOBSET_NAME}={name}"}
        job = {"namespace": self.namespace, "field_selector": f"metadata.name={name}"}
        return [(PODS, pods), (TRAINJOBS, job)]

    def get_job_events(self, name: str) -> list[_types.Event]:
        """Events of the TrainJob and its pods (and Service), oldest first."""
        return self._run(self._events(name))

    async def _events(self, name: str) -> list[_types.Event]:
        await self._object(name)
        pods = {_status.name_of(p) for p in await self._pods(name)}
        pattern = _status.job_pod_name(name)
        listed = await self._conn.client.list_all(EVENTS, namespace=self.namespace)
        found = []
        for obj in listed.get("items") or []:
            event = _status.event_of(obj)
            kind, involved = event.involved_object_kind, event.involved_object_name
            if (
                (kind == "TrainJob" and involved == name)
                or (kind == "Pod" and (involved in pods or pattern.match(involved)))
                or (kind == "Service" and involved == name)
            ):
                found.append(event)
        return _status.sorted_events(found)

    # -- waiting ----------------------------------------------------------------------------

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] | frozenset[str] | None = None,
        timeout: float = 600,
        polling_interval: float = 2,
        callbacks: list[Callable[[_types.TrainJob], None]] | None = None,
    ) -> _types.TrainJob:
        """Wait until the job's status is one of ``status`` (default ``{"Complete"}``);
        returns the job. ``callbacks`` get the job each time it changes (from this thread).

        Raises JobFailedError (a RuntimeError) as soon as the job fails, or one of its
        steps exits non-zero, unless ``"Failed"`` is in ``status``; WaitTimeout (a
        TimeoutError) after ``timeout`` seconds.
        """
        wanted = {"Complete"} if status is None else set(status)
        unknown = wanted - set(_status.STATUSES)
        if unknown or not wanted:
            raise InvalidTrainer(
                f"status: {sorted(unknown) or 'empty'}; accepted: {', '.join(_status.STATUSES)}"
            )
        if not timeout > 0:
            raise InvalidTrainer(f"timeout: {timeout!r}; accepted: more than 0 seconds")
        if not 0 < polling_interval < timeout:
            raise InvalidTrainer(
                f"polling_interval: {polling_interval!r}; accepted: more than 0 and less than "
                f"timeout ({timeout})"
            )
        self._run(self._object(name))
        deadline = time.monotonic() + timeout
        updates = self._updates(name, polling_interval)
        loop = self._conn.loop
        try:
            while True:
                remaining = deadline - time.monotonic()
                try:
                    job = loop.next(updates, timeout=max(remaining, 0.001))
                except TimeoutError as exc:
                    raise WaitTimeout(
                        f"TrainJob {self.namespace}/{name} did not reach "
                        f"{' or '.join(sorted(wanted))} within {timeout}s"
                    ) from exc
                for callback in callbacks or ():
                    callback(job)
                if job.status in wanted:
                    return job
                if _status.FAILED not in wanted:
                    self._raise_if_failed(job)
        finally:
            loop.close_iterator(updates)

    async def _updates(self, name: str, interval: float) -> AsyncIterator[_types.TrainJob]:
        sources = self._sources(name)
        async with Changes(self._conn, sources, interval=interval) as changes:
            while True:
                yield await self._job(name)
                await changes.wait()

    def _raise_if_failed(self, job: _types.TrainJob) -> None:
        failure = _status.failure_of(job)
        if failure is None:
            return
        raise self._run(
            _logs.failed(
                self._conn.client, job, failure, self.namespace, _status.NODE, tail=LOG_TAIL
            )
        )
