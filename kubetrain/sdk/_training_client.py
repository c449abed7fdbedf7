"""``TrainingClient``: the ``kubeflow.org/v1`` jobs (PyTorchJob, TFJob, XGBoostJob, MPIJob,
PaddleJob, JAXJob, MXJob) with kubeflow-training 1.9's method names, on the local control
plane or a cluster.

Jobs, conditions and pods come back as the server's JSON (plain dicts), not as generated
model classes. ``create_job`` accepts the job as a dict, a ``kubetrain.api`` model or a
``kubernetes`` client model, or builds one from ``train_func`` or ``base_image``
(:mod:`kubetrain.sdk._v1jobs`). Differences from 1.9, on purpose:

- no printing: ``get_job_logs(follow=True)`` waits for the selected pods to start and returns
  once their containers ended, with the whole logs;
- ``wait_for_job_conditions`` watches instead of polling (``polling_interval`` bounds how long
  it goes without looking) and fails at once, naming the replica and its exit code, when the
  job fails or a replica's container exits non-zero, unless ``Failed`` is expected.

Must not: print, or import the command line.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

from pydantic import BaseModel

from kubetrain import api, kube
from kubetrain.sdk import _logs, _status, _types, _v1jobs
from kubetrain.sdk._connection import Changes, Connected, Connection, merged
from kubetrain.sdk._errors import InvalidTrainer, NotFoundError, WaitTimeout

PODS: Final = kube.resource.PODS
EVENTS: Final = kube.Resource("", "v1", "events", kind="Event")
FOLLOW_INTERVAL: Final = 1.0
FINISHED: Final = frozenset({"Succeeded", "Failed"})
LOG_TAIL: Final = 10  # lines of a failed replica's log in a failure message

Job = dict[str, Any]


class TrainingClient(Connected):
    """v1 jobs on the local control plane (no ``config_file`` or ``context``, and no
    ``KUBETRAIN_KUBECONFIG``) or on the cluster they name."""

    def __init__(
        self,
        config_file: str | None = None,
        context: str | None = None,
        namespace: str | None = None,
        job_kind: str = "PyTorchJob",
        *,
        home: str | None = None,
    ) -> None:
        self.job_kind = _v1jobs.kind_of(job_kind).KIND
        backend: _types.BackendConfig | None
        if config_file is not None or context is not None:
            backend = _types.KubernetesBackendConfig(namespace, config_file, context)
        elif home is not None:
            backend = _types.LocalBackendConfig(home=home, namespace=namespace)
        else:
            backend = None
        self._conn = Connection(backend, namespace=namespace, name="kubetrain-training-client")

    def __repr__(self) -> str:
        where = self._where()
        return f"TrainingClient({where}, namespace={self.namespace!r}, job_kind={self.job_kind})"

    def _run(self, coro: Any, timeout: float | None = None) -> Any:
        return self._conn.loop.run(coro, timeout)

    def _kind(self, job_kind: str | None) -> type[api.JobKind]:
        return _v1jobs.kind_of(job_kind or self.job_kind)

    def _ns(self, namespace: str | None) -> str:
        if namespace is not None and not isinstance(namespace, str):
            _v1jobs.check_name(namespace, "namespace")  # raises: not a string
        return namespace or self.namespace

    # -- jobs -------------------------------------------------------------------------------

    def create_job(
        self,
        job: Any = None,
        name: str | None = None,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        job_kind: str | None = None,
        base_image: str | None = None,
        train_func: Callable[..., Any] | None = None,
        parameters: Mapping[str, Any] | None = None,
        num_workers: int = 1,
        num_procs_per_worker: int | str | None = None,
        resources_per_worker: Mapping[str, Any] | None = None,
        num_chief_replicas: int | None = None,
        num_ps_replicas: int | None = None,
        packages_to_install: list[str] | None = None,
        pip_index_url: str | None = None,
        env_vars: Mapping[str, str] | list[Mapping[str, Any]] | None = None,
    ) -> str:
        """Create a job: ``job`` as given, or one built from ``train_func`` (called with
        ``parameters`` as one dict) or ``base_image``. Returns the job's name."""
        if job is not None:
            if train_func is not None or base_image is not None:
                raise InvalidTrainer("create_job: give job, or train_func/base_image, not both")
            body = _plain(job)
            kind = self._kind(str(body.get("kind") or job_kind or ""))
            metadata = body.setdefault("metadata", {})
            if name is not None:
                _v1jobs.check_name(name, "name")
                metadata["name"] = name
            ns = self._ns(namespace or metadata.get("namespace"))
            metadata["namespace"] = ns
            for field, extra in (("labels", labels), ("annotations", annotations)):
                _v1jobs.check_strings_map(extra, field)
                if extra:
                    metadata.setdefault(field, {}).update(extra)
        else:
            if not name:
                raise InvalidTrainer("create_job: name is required with train_func or base_image")
            kind = self._kind(job_kind)
            ns = self._ns(namespace)
            body = _v1jobs.build(
                kind=kind,
                name=name,
                namespace=ns,
                train_func=train_func,
                parameters=parameters,
                base_image=base_image,
                num_workers=num_workers,
                num_procs_per_worker=num_procs_per_worker,
                resources_per_worker=resources_per_worker,
                num_chief_replicas=num_chief_replicas,
                num_ps_replicas=num_ps_replicas,
                packages_to_install=packages_to_install,
                pip_index_url=pip_index_url,
                env_vars=env_vars,
                labels=labels,
                annotations=annotations,
            )
        created = self._run(self._conn.client.create(_v1jobs.resource_of(kind), body, namespace=ns))
        return _status.name_of(created)

    def get_job(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        timeout: float | None = None,
    ) -> Job:
        return self._run(self._get(name, self._ns(namespace), self._kind(job_kind)), timeout)

    async def _get(self, name: str, namespace: str, kind: type[api.JobKind]) -> Job:
        try:
            return await self._conn.client.get(_v1jobs.resource_of(kind), name, namespace=namespace)
        except kube.NotFound as exc:
            raise NotFoundError(
                f"{kind.KIND} {namespace}/{name} not found; list_jobs() shows the "
                f"{kind.PLURAL} of namespace {namespace}"
            ) from exc

    def list_jobs(
        self,
        namespace: str | None = None,
        job_kind: str | None = None,
        timeout: float | None = None,
    ) -> list[Job]:
        resource = _v1jobs.resource_of(self._kind(job_kind))
        listed = self._run(
            self._conn.client.list_all(resource, namespace=self._ns(namespace)), timeout
        )
        return list(listed.get("items") or [])

    def delete_job(
        self, name: str, namespace: str | None = None, job_kind: str | None = None
    ) -> None:
        kind, ns = self._kind(job_kind), self._ns(namespace)
        try:
            self._run(
                self._conn.client.delete(
                    _v1jobs.resource_of(kind), name, namespace=ns, propagation_policy="Background"
                )
            )
        except kube.NotFound as exc:
            raise NotFoundError(f"{kind.KIND} {ns}/{name} not found") from exc

    # -- conditions -------------------------------------------------------------------------

    def _job_or(
        self,
        name: str | None,
        namespace: str | None,
        job_kind: str | None,
        job: Job | None,
        timeout: float | None,
    ) -> Job:
        if job is not None:
            return _plain(job)
        if name is None:
            raise InvalidTrainer("give name or job")
        return self.get_job(name, namespace, job_kind, timeout)

    def get_job_conditions(
        self,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Job | None = None,
        timeout: float | None = None,
    ) -> list[dict[str, Any]]:
        return _v1jobs.conditions(self._job_or(name, namespace, job_kind, job, timeout))

    def _is(self, type_: str, *args: Any, **kwargs: Any) -> bool:
        return type_ in _v1jobs.true_conditions(self._job_or(*_args(args, kwargs)))

    def is_job_created(self, *args: Any, **kwargs: Any) -> bool:
        return self._is("Created", *args, **kwargs)

    def is_job_running(self, *args: Any, **kwargs: Any) -> bool:
        return self._is("Running", *args, **kwargs)

    def is_job_restarting(self, *args: Any, **kwargs: Any) -> bool:
        return self._is("Restarting", *args, **kwargs)

    def is_job_succeeded(self, *args: Any, **kwargs: Any) -> bool:
        return self._is("Succeeded", *args, **kwargs)

    def is_job_failed(self, *args: Any, **kwargs: Any) -> bool:
        return self._is("Failed", *args, **kwargs)

    def wait_for_job_conditions(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        expected_conditions: set[str] | frozenset[str] | None = None,
        wait_timeout: float = 600,
        polling_interval: float = 15,
        callback: Callable[[Job], None] | None = None,
        timeout: float | None = None,
    ) -> Job:
        """Wait until one of ``expected_conditions`` (default ``{"Succeeded"}``) is True;
        returns the job. Raises JobFailedError (a RuntimeError) once the job fails, or a
        replica's container exits non-zero, unless ``Failed`` is expected; WaitTimeout (a
        TimeoutError) after ``wait_timeout`` seconds."""
        del timeout  # per-call limit of kubeflow-training; watches need none
        wanted = {"Succeeded"} if expected_conditions is None else set(expected_conditions)
        unknown = wanted - set(_v1jobs.CONDITION_TYPES)
        if unknown or not wanted:
            raise InvalidTrainer(
                f"expected_conditions: {sorted(unknown) or 'empty'}; accepted: "
                f"{', '.join(_v1jobs.CONDITION_TYPES)}"
            )
        if not wait_timeout > 0 or not polling_interval > 0:
            raise InvalidTrainer("wait_timeout and polling_interval: accepted: more than 0 seconds")
        kind, ns = self._kind(job_kind), self._ns(namespace)
        self._run(self._get(name, ns, kind))
        deadline = time.monotonic() + wait_timeout
        updates = self._updates(name, ns, kind, min(polling_interval, wait_timeout))
        loop = self._conn.loop
        try:
            while True:
                remaining = deadline - time.monotonic()
                try:
                    job, pods = loop.next(updates, timeout=max(remaining, 0.001))
                except TimeoutError as exc:
                    raise WaitTimeout(
                        f"{kind.KIND} {ns}/{name} did not reach {' or '.join(sorted(wanted))} "
                        f"within {wait_timeout}s"
                    ) from exc
                if callback is not None:
                    callback(job)
                if wanted & _v1jobs.true_conditions(job):
                    return job
                if "Failed" not in wanted:
                    self._raise_if_failed(job, pods, kind)
        finally:
            loop.close_iterator(updates)

    async def _updates(
        self, name: str, namespace: str, kind: type[api.JobKind], interval: float
    ) -> AsyncIterator[tuple[Job, list[dict[str, Any]]]]:
        sources = [
            (
                _v1jobs.resource_of(kind),
                {"namespace": namespace, "field_selector": f"metadata.name={name}"},
            ),
            (PODS, {"namespace": namespace, "label_selector": _v1jobs.pod_selector(name)}),
        ]
        async with Changes(self._conn, sources, interval=interval) as changes:
            while True:
                job = await self._get(name, namespace, kind)
                pods = await self._pods(name, namespace)
                yield job, [*pods, *changes.gone(pods)]
                await changes.wait()

    def _raise_if_failed(
        self, job: Job, pods: list[dict[str, Any]], kind: type[api.JobKind]
    ) -> None:
        failure = _v1jobs.failure_of(job, pods, kind.DEFAULT_CONTAINER)
        if failure is None:
            for pod in sorted(pods, key=_v1jobs.replica_of):
                code = _v1jobs.exit_code(pod, kind.DEFAULT_CONTAINER)
                if code not in (None, 0):
                    ref = f"{kind.KIND} {_status.dig(job, 'metadata', 'namespace')}/"
                    ref += _status.name_of(job)
                    replica = _v1jobs.replica_of(pod)
                    failure = _status.Failure(
                        f"{ref}: replica {replica} (pod {_status.name_of(pod)}) exited with "
                        f"code {code}",
                        replica,
                        _status.name_of(pod),
                        code,
                    )
                    break
        if failure is None:
            # The failed pod may be gone already (replaced before this wait could read it); the
            # operator's ExitedWithCode event on the job still says who exited with what.
            failure = self._run(self._exited(job, kind))
        if failure is None:
            return
        namespace = str(_status.dig(job, "metadata", "namespace"))
        raise self._run(
            _logs.failed(
                self._conn.client, job, failure, namespace, kind.DEFAULT_CONTAINER, tail=LOG_TAIL
            )
        )

    # -- pods and logs ----------------------------------------------------------------------

    def get_job_pods(
        self,
        name: str,
        namespace: str | None = None,
        is_master: bool = False,
        replica_type: str | None = None,
        replica_index: int | None = None,
        timeout: float | None = None,
    ) -> list[dict[str, Any]]:
        selector = _v1jobs.pod_selector(
            name, is_master=is_master, replica_type=replica_type, replica_index=replica_index
        )
        return self._run(self._pods(name, self._ns(namespace), selector), timeout)

    def get_job_pod_names(self, *args: Any, **kwargs: Any) -> list[str]:
        return [_status.name_of(p) for p in self.get_job_pods(*args, **kwargs)]

    async def _pods(
        self, name: str, namespace: str, selector: str | None = None
    ) -> list[dict[str, Any]]:
        listed = await self._conn.client.list_all(
            PODS, namespace=namespace, label_selector=selector or _v1jobs.pod_selector(name)
        )
        return sorted(listed.get("items") or [], key=_v1jobs.replica_of)

    def get_job_logs(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        is_master: bool = True,
        replica_type: str | None = None,
        replica_index: int | None = None,
        follow: bool = False,
        timeout: float | None = None,
        verbose: bool = False,
    ) -> tuple[dict[str, str], dict[str, list[str]]]:
        """``({pod: log}, {"Kind/name": ["YYYY-mm-dd HH:MM:SS message", ...]})``: the logs of
        the selected pods (by default the master) and, with ``verbose``, the events of the
        job and its pods. With ``follow``, waits for the pods to start and for their
        containers to end."""
        del timeout
        kind, ns = self._kind(job_kind), self._ns(namespace)
        selector = _v1jobs.pod_selector(
            name, is_master=is_master, replica_type=replica_type, replica_index=replica_index
        )
        logs = self._run(self._logs(name, ns, kind, selector, follow))
        events = self._run(self._events(name, ns, kind)) if verbose else {}
        return logs, events

    async def _logs(
        self, name: str, namespace: str, kind: type[api.JobKind], selector: str, follow: bool
    ) -> dict[str, str]:
        await self._get(name, namespace, kind)
        container = kind.DEFAULT_CONTAINER
        if follow:
            pods = await self._wait_started(name, namespace, kind, selector)
        else:
            pods = await self._pods(name, namespace, selector)
        readable = [p for p in pods if _logs.started(p, container)]
        client = self._conn.client

        def opener(pod: str) -> Callable[[], AsyncIterator[str]]:
            return lambda: _logs.lines(client, namespace, pod, container, follow=follow)

        collected: dict[str, list[str]] = {_status.name_of(p): [] for p in readable}
        streams = {pod: opener(pod) for pod in collected}
        async for pod, line in merged(self._conn, streams):
            collected[pod].append(line)
        return {pod: "".join(f"{line}\n" for line in lines) for pod, lines in collected.items()}

    async def _wait_started(
        self, name: str, namespace: str, kind: type[api.JobKind], selector: str
    ) -> list[dict[str, Any]]:
        """The selected pods once each has started (or the job finished)."""
        sources = [
            (
                _v1jobs.resource_of(kind),
                {"namespace": namespace, "field_selector": f"metadata.name={name}"},
            ),
            (PODS, {"namespace": namespace, "label_selector": selector}),
        ]
        async with Changes(self._conn, sources, interval=FOLLOW_INTERVAL) as changes:
            while True:
                job = await self._get(name, namespace, kind)
                pods = await self._pods(name, namespace, selector)
                if pods and all(_logs.started(p, kind.DEFAULT_CONTAINER) for p in pods):
                    return pods
                if FINISHED & _v1jobs.true_conditions(job):
                    return pods
                await changes.wait()

    async def _exited(self, job: Job, kind: type[api.JobKind]) -> _status.Failure | None:
        """The latest ``ExitedWithCode`` event on ``job`` as a failure (upstream's message:
        ``Pod: <namespace>.<pod> exited with code <n>``)."""
        name, namespace = _status.name_of(job), str(_status.dig(job, "metadata", "namespace"))
        listed = await self._conn.client.list_all(
            EVENTS,
            namespace=namespace,
            field_selector=f"involvedObject.name={name},reason=ExitedWithCode",
        )
        events = [_status.event_of(o) for o in listed.get("items") or []]
        for event in reversed(_status.sorted_events(events)):
            found = _EXITED.fullmatch(event.message.strip())
            if event.involved_object_kind != kind.KIND or found is None:
                continue
            pod, code = found["pod"], int(found["code"])
            if code == 0:
                continue
            replica = pod[len(name) + 1 :] if pod.startswith(f"{name}-") else pod
            return _status.Failure(
                f"{kind.KIND} {namespace}/{name}: replica {replica} (pod {pod}) exited with "
                f"code {code}",
                replica,
                pod,
                code,
            )
        return None

    async def _events(
        self, name: str, namespace: str, kind: type[api.JobKind]
    ) -> dict[str, list[str]]:
        pods = {_status.name_of(p) for p in await self._pods(name, namespace)}
        listed = await self._conn.client.list_all(EVENTS, namespace=namespace)
        found: dict[str, list[str]] = {}
        events = [_status.event_of(o) for o in listed.get("items") or []]
        for event in _status.sorted_events(events):
            involved = (event.involved_object_kind, event.involved_object_name)
            if involved == (kind.KIND, name) or (involved[0] == "Pod" and involved[1] in pods):
                when = event.event_time.strftime("%Y-%m-%d %H:%M:%S") if event.event_time else ""
                found.setdefault(f"{involved[0]}/{involved[1]}", []).append(
                    f"{when} {event.message}".strip()
                )
        return found


_EXITED: Final = re.compile(r"Pod: [^.]+\.(?P<pod>\S+) exited with code (?P<code>-?\d+)")


def _args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``(name, namespace, job_kind, job, timeout)`` from the ``is_job_*`` arguments."""
    names = ("name", "namespace", "job_kind", "job", "timeout")
    values = dict(zip(names, args, strict=False))
    unknown = set(kwargs) - set(names)
    if unknown:
        raise TypeError(f"unexpected arguments: {', '.join(sorted(unknown))}")
    values.update(kwargs)
    return tuple(values.get(n) for n in names)


def _plain(job: Any) -> dict[str, Any]:
    """A job as a JSON dict: a dict, a kubetrain.api model, or a kubernetes client model."""
    if isinstance(job, Mapping):
        metadata = job.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise InvalidTrainer(f"job.metadata: {metadata!r}; accepted: a dict")
        return {**job, "metadata": dict(metadata)}
    if isinstance(job, BaseModel):
        return job.model_dump(mode="json", by_alias=True, exclude_none=True)
    if hasattr(job, "openapi_types"):
        from kubernetes.client import ApiClient  # only for kubernetes client models

        return dict(ApiClient().sanitize_for_serialization(job))
    raise InvalidTrainer(
        f"job: {type(job).__name__}; accepted: a dict, a kubetrain.api job, or a kubernetes "
        "client model"
    )
