"""One pod's life on this node: a task that syncs it, level-triggered, until it is gone.

Each sync reads what is (the latest Pod from the agent's watch, the containers the runtime has
on disk) and acts towards what should be, the kubelet's way: prepare the sandbox, run the init
containers one after another (each to success), then the app containers; restart exited ones
as ``restartPolicy`` says, with the kubelet's crash back-off (none for the first restart, then
``backoff_initial`` doubling to ``backoff_max``, counted afresh after a run of
``backoff_reset``); keep a container that cannot be created from its spec (no ``command``:
images are not pulled here) waiting as ``CreateContainerError``, tried again with the same
doubling back-off, the pod Pending, as the kubelet does, so no controller sees a failed pod
to replace; enforce ``activeDeadlineSeconds``; hold running containers to their
``resources.limits.cpu`` (:mod:`.cpulimit`, one task per limited container); write the status
when it changed, then the events. A deleted pod's containers are stopped within its grace
period, the Pod is deleted for good (grace 0, uid precondition, as the kubelet finishes a
graceful delete), and its directory removed. A pod that vanished from the API has its
processes stopped and removed.

Nothing needed after a restart lives only here: attempts, exit codes and times are the
runtime's, on disk; the back-off is computed from them. A sync after a restart therefore
adopts running containers (it waits on them, it never starts a second copy).

Must not: write any Pod field but ``status`` (and the final delete), or run processes other
than through the runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Final, Protocol

from kubetrain import _aio, kube, timefmt
from kubetrain.kube import record, resource
from kubetrain.local.node import cpulimit, podspec, portclash, runtime, status
from kubetrain.local.node import settings as node_settings

log = logging.getLogger(__name__)

PODS: Final = resource.PODS
NORMAL: Final = "Normal"
WARNING: Final = "Warning"
CANNOT_RUN: Final = "ContainerCannotRun"
SANDBOX_FAILED: Final = "FailedCreatePodSandBox"
START_FAILED_EXIT: Final = 128  # what containerd reports for a container that could not start

ContainerStates = dict[str, list[runtime.ContainerState]]


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()``: ``200ms``, ``10s``, ``1m20s``, ``5m0s``."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        millis = seconds * 1000
        return f"{millis:g}ms" if millis >= 1 else f"{seconds * 1e6:g}µs"
    whole_minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(whole_minutes), 60)
    text = f"{rest:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    if minutes:
        return f"{minutes}m{text}"
    return text


def backoff_delay(
    attempts: Sequence[runtime.ContainerState], initial: float, maximum: float, reset: float
) -> float:
    """Seconds to wait after the latest (exited) attempt before the next one: the kubelet's
    back-off, rebuilt from the attempts themselves. The first restart is immediate; each
    further crash doubles the wait from ``initial``; a run of ``reset`` or more starts over."""
    crashes = 0
    for state in reversed(attempts):
        if state.running:
            break
        ran = (
            (state.finished_at - state.started_at).total_seconds()
            if state.finished_at and state.started_at
            else 0.0
        )
        if ran >= reset:
            break
        crashes += 1
    if crashes <= 1:
        return 0.0
    return min(maximum, initial * 2 ** (crashes - 2))


def create_backoff(failures: int, initial: float, maximum: float) -> float:
    """Seconds before creating a container again after ``failures`` (>= 1) failed tries in a
    row: ``initial``, doubling up to ``maximum``. A spec that cannot work is not retried in a
    tight loop, and one that may (the node learns an image's entrypoint) is, eventually."""
    return min(maximum, initial * 2 ** max(0, failures - 1))


@dataclasses.dataclass(frozen=True)
class CreateFailure:
    """A container that could not be created: what it waits with, when it is tried again
    (monotonic seconds), and how many tries in a row failed."""

    waiting: status.Waiting
    retry_at: float
    failures: int


def _utc(when: datetime | None) -> datetime | None:
    if when is None:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def parse_time(text: Any) -> datetime | None:
    return timefmt.parse(text)


class Devices(Protocol):
    def assign(self, uid: str, pod: Mapping[str, Any], name: str) -> tuple[str, ...]: ...

    def release(self, uid: str) -> None: ...


class Node(Protocol):
    """What a pod's worker needs of its node agent (:class:`~.agent.Agent` is one). A
    protocol, so that this module does not import the agent that starts its workers."""

    client: kube.Client
    settings: node_settings.Settings
    runtime: runtime.Runtime
    devices: Devices
    host: podspec.Host
    recorder: record.Recorder

    def now(self) -> datetime: ...

    def pod(self, uid: str) -> dict[str, Any] | None: ...

    def hosts_text(self, pod: Mapping[str, Any]) -> str: ...

    async def fetch_sources(self, namespace: str, needs: podspec.Needs) -> podspec.Sources: ...


@dataclasses.dataclass
class Event:
    type: str
    reason: str
    message: str
    field_path: str = ""


class Worker:
    """Syncs one pod (by uid) until it is gone; :meth:`poke` asks for a sync now."""

    def __init__(self, agent: Node, uid: str) -> None:
        self.agent = agent
        self.uid = uid
        self.started = agent.now()
        self._wake = asyncio.Event()
        self._next: float | None = None  # monotonic time of the next timed sync
        self._prepared: runtime.Sandbox | None = None
        self._hosts: str | None = None  # the hosts text the runtime has
        self._sources: podspec.Sources | None = None
        self._sources_at = 0.0
        self._failed: ContainerStates = {}  # starts that failed before the runtime kept a state
        self._config_errors: dict[str, tuple[status.Waiting, float]] = {}
        self._create_errors: dict[str, CreateFailure] = {}
        self._waiting: dict[str, status.Waiting] = {}
        self._failure: status.Waiting | None = None
        self._final = False  # nothing runs again: deadline, deletion, Never
        self._waiters: dict[runtime.ContainerId, asyncio.Task[None]] = {}
        self._limits: dict[runtime.ContainerId, asyncio.Task[None]] = {}  # CPU limits held
        self._written: dict[str, Any] | None = None  # the status fields last written
        self._events: list[Event] = []
        self._reported: set[tuple[str, str, str]] = set()  # one-off events already sent
        self._mount_error = ""
        self._group: _aio.TaskGroup | None = None

    # -- the loop ---------------------------------------------------------------------------

    def poke(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        settings = self.agent.settings
        failures = 0
        try:
            async with _aio.TaskGroup() as group:
                self._group = group
                while True:
                    self._wake.clear()
                    try:
                        if await self.sync():
                            break
                        failures = 0
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:  # the worker loop: log, back off, sync again
                        delay = min(settings.retry_max, settings.retry_initial * 2**failures)
                        failures += 1
                        if isinstance(exc, kube.ApiError):
                            log.warning(
                                "pod %s: sync failed: %s; retrying in %.1fs", self.uid, exc, delay
                            )
                        else:
                            log.exception("pod %s: sync failed; retrying in %.1fs", self.uid, delay)
                        self._at(time.monotonic() + delay)
                    finally:
                        await self._flush_events()
                    await self._sleep()
                for task in [*self._waiters.values(), *self._limits.values()]:
                    task.cancel()
        finally:
            self._group = None

    async def _sleep(self) -> None:
        timeout = self.agent.settings.resync
        if self._next is not None:
            timeout = min(timeout, max(0.0, self._next - time.monotonic()))
        self._next = None
        with contextlib.suppress(TimeoutError):
            async with _aio.timeout(timeout):
                await self._wake.wait()

    def _at(self, when: float) -> None:
        """Sync again no later than ``when`` (monotonic seconds)."""
        self._next = when if self._next is None else min(self._next, when)

    # -- one sync ---------------------------------------------------------------------------

    async def sync(self) -> bool:
        """One pass; True once the pod is gone and its processes with it."""
        pod = self.agent.pod(self.uid)
        if pod is None:
            await self._vanished()
            return True
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            await self._terminate(pod)
            return True
        attempts = await self._attempts()
        self._watch(attempts)
        old_phase = self.current_status(pod).get("phase")
        if old_phase in status.TERMINAL:
            self._final = True
        self._waiting = {}
        if not self._final:
            await self._deadline(pod, attempts)
        if not self._final:
            await self._advance(pod, attempts)
            attempts = await self._attempts()
            self._watch(attempts)
        if self._final:
            running = [t[-1] for t in attempts.values() if t and t[-1].running]
            if running:
                await self._stop(pod, running, _termination_grace(pod))
                attempts = await self._attempts()
        if old_phase in status.TERMINAL and not attempts:
            return False  # finished before this node kept anything: nothing new to say
        await self._write_status(pod, attempts)
        return False

    async def _attempts(self) -> ContainerStates:
        states = await asyncio.to_thread(self.agent.runtime.containers, self.uid)
        out: ContainerStates = {}
        for state in states:
            out.setdefault(state.id.name, []).append(state)
        for name, failed in self._failed.items():
            known = {s.id.attempt for s in out.get(name, [])}
            out.setdefault(name, []).extend(s for s in failed if s.id.attempt not in known)
        for tries in out.values():
            tries.sort(key=lambda s: s.id.attempt)
        return out

    def _watch(self, attempts: ContainerStates) -> None:
        """A waiter for every running container (adopted ones too): its exit wakes us."""
        assert self._group is not None
        for tries in attempts.values():
            latest = tries[-1] if tries else None
            if latest is not None and latest.running and latest.id not in self._waiters:
                self._waiters[latest.id] = self._group.create_task(
                    self._wait(latest.id), name=f"wait {latest.id.pod_uid}/{latest.id.name}"
                )
                self._limit_cpu(latest.id)

    async def _wait(self, cid: runtime.ContainerId) -> None:
        try:
            await self.agent.runtime.wait(cid)
        except asyncio.CancelledError:
            raise
        except Exception:  # a guarded task: the sync that follows looks at the disk anyway
            log.exception("waiting for %s/%s failed", cid.pod_uid, cid.name)
            await asyncio.sleep(self.agent.settings.retry_max)  # not a busy loop
        finally:
            self._waiters.pop(cid, None)
            self.poke()

    def _limit_cpu(self, cid: runtime.ContainerId) -> None:
        """Hold a running container to its ``resources.limits.cpu``, best effort (see
        :mod:`.cpulimit`), until it ends or is stopped."""
        mode = self.agent.settings.cpu_limits
        pod = self.agent.pod(self.uid)
        limit = cpulimit.limit_of(pod, cid.name) if pod is not None else None
        if mode == "off" or limit is None or cid in self._limits:
            return
        assert self._group is not None
        self._limits[cid] = self._group.create_task(
            self._hold(cid, limit), name=f"cpu limit {cid.pod_uid}/{cid.name}"
        )

    async def _hold(self, cid: runtime.ContainerId, limit: float) -> None:
        settings = self.agent.settings
        try:
            await cpulimit.enforce(
                self.agent.runtime,
                cid,
                limit,
                mode=settings.cpu_limits,
                period=settings.cpu_limit_period,
            )
        except asyncio.CancelledError:
            raise
        except Exception:  # a guarded task: the pod runs on, unlimited, and says so in the log
            log.exception("pod %s: container %s: its CPU limit is not enforced", self.uid, cid.name)
        finally:
            self._limits.pop(cid, None)

    def _release_cpu(self, cids: Sequence[runtime.ContainerId]) -> None:
        """Stop holding these containers (what the throttler stopped, it continues)."""
        for cid in cids:
            task = self._limits.get(cid)
            if task is not None:
                task.cancel()

    # -- what should run --------------------------------------------------------------------

    async def _advance(self, pod: Mapping[str, Any], attempts: ContainerStates) -> None:
        sandbox = await self._sandbox(pod)
        if sandbox is None:
            return
        restart = podspec.spec_of(pod).get("restartPolicy") or "Always"
        for c in podspec.init_containers(pod):
            name = str(c.get("name") or "")
            tries = attempts.get(name, [])
            latest = tries[-1] if tries else None
            if latest is not None and latest.running:
                return
            if latest is not None and latest.exit_code == 0:
                continue
            if latest is not None:
                if restart == "Never":
                    self._final = True
                    return
                if not self._backoff_over(pod, name, tries):
                    return
            await self._start(pod, c, sandbox, tries, init=True)
            return
        for c in podspec.app_containers(pod):
            name = str(c.get("name") or "")
            tries = attempts.get(name, [])
            latest = tries[-1] if tries else None
            if latest is None:
                await self._start(pod, c, sandbox, tries, init=False)
            elif not latest.running:
                again = restart == "Always" or (restart == "OnFailure" and latest.exit_code != 0)
                if again and self._backoff_over(pod, name, tries):
                    await self._start(pod, c, sandbox, tries, init=False)
            if self._final:
                return

    def _backoff_over(
        self, pod: Mapping[str, Any], name: str, tries: Sequence[runtime.ContainerState]
    ) -> bool:
        settings = self.agent.settings
        delay = backoff_delay(
            tries, settings.backoff_initial, settings.backoff_max, settings.backoff_reset
        )
        latest = tries[-1]
        finished = _utc(latest.finished_at) or self.agent.now()
        remaining = (finished + timedelta(seconds=delay) - self.agent.now()).total_seconds()
        if remaining <= 0:
            return True
        meta = pod.get("metadata") or {}
        where = f"{meta.get('name')}_{meta.get('namespace')}({self.uid})"
        self._waiting[name] = status.Waiting(
            status.CRASH_LOOP_BACK_OFF,
            f"back-off {go_duration(delay)} restarting failed container={name} pod={where}",
        )
        self._at(time.monotonic() + remaining)
        self._once(
            (name, "BackOff", str(latest.id.attempt)),
            Event(
                WARNING,
                "BackOff",
                f"Back-off restarting failed container {name} in pod {where}",
                _field_path(pod, name),
            ),
        )
        return False

    async def _sandbox(self, pod: Mapping[str, Any]) -> runtime.Sandbox | None:
        """The pod's sandbox, prepared (or its hosts file brought up to date); None when it
        cannot be yet (the reason is an event, and a sync comes back)."""
        settings = self.agent.settings
        try:
            sources = await self._fetch(pod)
            sandbox = podspec.sandbox(pod, sources, self.agent.host, self.agent.hosts_text(pod))
            if (
                self._prepared is None
                or dataclasses.replace(self._prepared, hosts=sandbox.hosts) != sandbox
            ):
                await self.agent.runtime.prepare(sandbox)
                self._prepared = sandbox
                self._hosts = sandbox.hosts
            elif sandbox.hosts != self._hosts:
                await self.agent.runtime.update_hosts(self.uid, sandbox.hosts)
                self._hosts = sandbox.hosts
        except (podspec.SpecError, runtime.StartError) as exc:
            message = exc.message
            reason = podspec.FAILED_MOUNT if isinstance(exc, podspec.SpecError) else SANDBOX_FAILED
            if message != self._mount_error:
                self._mount_error = message
                self._events.append(Event(WARNING, reason, message))
            self._at(time.monotonic() + settings.retry_max)
            return None
        self._mount_error = ""
        return sandbox

    async def _fetch(self, pod: Mapping[str, Any]) -> podspec.Sources:
        """The objects the pod refers to; fetched again after ``resync`` seconds (volumes
        follow their ConfigMaps and Secrets) or when a container waits for one."""
        needs = podspec.needs(pod)
        if not (needs.configmaps or needs.secrets or needs.claims or needs.tokens):
            return podspec.Sources()
        fresh = time.monotonic() - self._sources_at < self.agent.settings.resync
        if self._sources is not None and fresh and not self._config_errors:
            return self._sources
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        self._sources = await self.agent.fetch_sources(namespace, needs)
        self._sources_at = time.monotonic()
        return self._sources

    async def _start(
        self,
        pod: Mapping[str, Any],
        container: Mapping[str, Any],
        sandbox: runtime.Sandbox,
        tries: Sequence[runtime.ContainerState],
        *,
        init: bool,
    ) -> None:
        name = str(container.get("name") or "")
        attempt = tries[-1].id.attempt + 1 if tries else 0
        field_path = _field_path(pod, name)
        waiting = self._config_errors.get(name)
        if waiting is not None and time.monotonic() < waiting[1]:
            self._waiting[name] = waiting[0]
            self._at(waiting[1])
            return
        failed = self._create_errors.get(name)
        if failed is not None and time.monotonic() < failed.retry_at:
            self._waiting[name] = failed.waiting
            if failed.waiting.reason == runtime.ERR_IMAGE_PULL:  # the kubelet's wait after it
                image = str(container.get("image") or "")
                self._waiting[name] = status.Waiting(
                    runtime.IMAGE_PULL_BACK_OFF, f'Back-off pulling image "{image}"'
                )
            self._at(failed.retry_at)
            return
        try:
            sources = await self._fetch(pod)
            gpus = self.agent.devices.assign(self.uid, pod, name)
            spec, environ = podspec.container_spec(
                pod, container, sources, self.agent.host, init=init, gpus=gpus
            )
        except podspec.NoCommand as exc:
            self._cannot_create(name, exc.message, field_path)
            return
        except podspec.SpecError as exc:
            retry = time.monotonic() + self.agent.settings.retry_max
            self._config_errors[name] = (status.Waiting(exc.reason, exc.message), retry)
            self._waiting[name] = self._config_errors[name][0]
            self._at(retry)
            self._once(
                (name, "Failed", exc.message),
                Event(WARNING, "Failed", f"Error: {exc.message}", field_path),
            )
            return
        self._config_errors.pop(name, None)
        self._create_errors.pop(name, None)
        if environ.skipped:
            self._once(
                (name, "InvalidEnvironmentVariableNames", ",".join(environ.skipped)),
                Event(
                    WARNING,
                    "InvalidEnvironmentVariableNames",
                    f"Keys [{', '.join(environ.skipped)}] from the EnvFrom of container {name} "
                    "were skipped since they are considered invalid environment variable names.",
                    field_path,
                ),
            )
        try:
            await self.agent.runtime.start(sandbox, spec, attempt)
        except runtime.StartError as exc:
            if exc.reason in (runtime.ERR_IMAGE_PULL, runtime.ERR_IMAGE_NEVER_PULL):
                self._cannot_create(name, exc.message, field_path, reason=exc.reason)
                return
            cid = runtime.ContainerId(self.uid, name, attempt)
            if await asyncio.to_thread(self.agent.runtime.state, cid) is None:
                self._cannot_run(name, attempt, str(exc), field_path, reason=exc.reason)
            else:
                self._events.append(Event(WARNING, "Failed", f"Error: {exc}", field_path))
            return
        self._events.append(Event(NORMAL, "Created", f"Created container: {name}", field_path))
        self._events.append(Event(NORMAL, "Started", f"Started container {name}", field_path))

    def _cannot_create(self, name: str, message: str, field_path: str, *, reason: str = "") -> None:
        """The kubelet's ``CreateContainerError``: the container waits with the reason (the
        pod stays Pending, nothing terminated for a controller to replace) and is tried again
        after :func:`create_backoff`; each failed try is a Warning ``Failed`` event (a repeat
        bumps the event's count)."""
        settings = self.agent.settings
        before = self._create_errors.get(name)
        failures = before.failures + 1 if before is not None else 1
        retry = time.monotonic() + create_backoff(
            failures, settings.backoff_initial, settings.backoff_max
        )
        waiting = status.Waiting(reason or status.CREATE_CONTAINER_ERROR, message)
        self._create_errors[name] = CreateFailure(waiting, retry, failures)
        self._waiting[name] = waiting
        self._at(retry)
        self._events.append(Event(WARNING, "Failed", f"Error: {message}", field_path))

    def _cannot_run(
        self, name: str, attempt: int, message: str, field_path: str, *, reason: str = ""
    ) -> None:
        """Record a start that failed before any process ran, as a terminated attempt."""
        now = self.agent.now()
        state = runtime.ContainerState(
            id=runtime.ContainerId(self.uid, name, attempt),
            pid=None,
            started_at=now,
            finished_at=now,
            exit_code=START_FAILED_EXIT,
            reason=reason if reason in (CANNOT_RUN, "StartError") else CANNOT_RUN,
            message=message,
        )
        self._failed.setdefault(name, []).append(state)
        self._events.append(Event(WARNING, "Failed", f"Error: {message}", field_path))

    # -- stopping ---------------------------------------------------------------------------

    async def _deadline(self, pod: Mapping[str, Any], attempts: ContainerStates) -> None:
        seconds = podspec.spec_of(pod).get("activeDeadlineSeconds")
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            return
        start = self.started  # to the microsecond; the stored startTime is to the second
        stored = parse_time(self.current_status(pod).get("startTime"))
        if stored is not None and stored < self.started - timedelta(seconds=1):
            start = stored  # started before this agent did
        remaining = (start + timedelta(seconds=seconds) - self.agent.now()).total_seconds()
        if remaining > 0:
            self._at(time.monotonic() + remaining)
            return
        self._final = True
        self._failure = status.Waiting(status.DEADLINE_EXCEEDED, status.DEADLINE_MESSAGE)
        self._events.append(Event(NORMAL, status.DEADLINE_EXCEEDED, status.DEADLINE_MESSAGE))

    async def _stop(
        self, pod: Mapping[str, Any], running: Sequence[runtime.ContainerState], grace: float
    ) -> None:
        for state in running:
            self._events.append(
                Event(
                    NORMAL,
                    "Killing",
                    f"Stopping container {state.id.name}",
                    _field_path(pod, state.id.name),
                )
            )
        await self._flush_events()
        self._release_cpu([s.id for s in running])
        await asyncio.gather(*(self.agent.runtime.stop(s.id, grace) for s in running))

    async def _terminate(self, pod: Mapping[str, Any]) -> None:
        """A graceful delete: stop within the pod's grace period, report the final states,
        then delete the Pod for good and remove its directory."""
        meta = pod.get("metadata") or {}
        grace = meta.get("deletionGracePeriodSeconds")
        if not isinstance(grace, int) or isinstance(grace, bool):
            grace = _termination_grace(pod)
        attempts = await self._attempts()
        running = [t[-1] for t in attempts.values() if t and t[-1].running]
        if running:
            await self._stop(pod, running, float(grace))
            attempts = await self._attempts()
        self._final = True
        await self._write_status(pod, attempts)
        with contextlib.suppress(kube.NotFound, kube.Conflict):
            await self.agent.client.delete(
                PODS,
                str(meta.get("name") or ""),
                namespace=str(meta.get("namespace") or ""),
                grace_period_seconds=0,
                preconditions={"uid": self.uid},
            )
        await self._remove(0.0)

    async def _vanished(self) -> None:
        """Deleted with no grace (or never seen again after a restart): stop and remove."""
        log.info("pod %s is gone from the API; stopping its processes", self.uid)
        await self._remove(self.agent.settings.orphan_grace)

    async def _remove(self, grace: float) -> None:
        for task in self._waiters.values():
            task.cancel()
        self._release_cpu(list(self._limits))
        await self.agent.runtime.remove(self.uid, grace)
        self.agent.devices.release(self.uid)

    # -- status -----------------------------------------------------------------------------

    def current_status(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        """The stored status with what this worker wrote last laid over it: the watch may not
        have brought our own write back yet."""
        current = dict(pod.get("status") or {})
        if self._written is not None:
            current.update(self._written)
        return current

    async def _write_status(self, pod: Mapping[str, Any], attempts: ContainerStates) -> None:
        if portclash.worth_a_look(attempts):  # "Address already in use": say why, and the fix
            attempts = await asyncio.to_thread(
                portclash.explain, pod, attempts, self.agent.runtime, self.agent.pod
            )
        observed = status.Observed(
            address=self.agent.settings.address,
            containers=attempts,
            waiting=self._waiting,
            sandbox_ready=self._prepared is not None,
            failure=self._failure,
            terminal=self._final,
            start_time=self.started,
        )
        current = self.current_status(pod)
        new = status.pod_status({**pod, "status": current}, observed, self.agent.now())
        if new.get("phase") in status.TERMINAL and not any(
            tries and tries[-1].running for tries in attempts.values()
        ):
            # as the kubelet's device manager does: a finished pod's GPUs go back before the
            # API says it finished, so that a pod queued for them may start while this one's
            # record stays (a job's cleanPodPolicy None, a Job's history)
            self.agent.devices.release(self.uid)
        change = status.patch(current, new, uid=self.uid)  # never lands on a newer pod of that name
        if change is None:
            return
        meta = pod.get("metadata") or {}
        try:
            await self.agent.client.patch(
                PODS,
                str(meta.get("name") or ""),
                change,
                namespace=str(meta.get("namespace") or ""),
                subresource="status",
            )
        except kube.NotFound:
            return  # deleted meanwhile: the watch brings that next
        self._written = {k: new.get(k) for k in status.OWNED_FIELDS}
        if new.get("phase") != current.get("phase"):
            log.info("pod %s/%s: %s", meta.get("namespace"), meta.get("name"), new.get("phase"))

    # -- events -----------------------------------------------------------------------------

    def _once(self, key: tuple[str, str, str], event: Event) -> None:
        if key not in self._reported:
            self._reported.add(key)
            self._events.append(event)

    async def _flush_events(self) -> None:
        if not self._events:
            return
        events, self._events = self._events, []
        pod = self.agent.pod(self.uid)
        if pod is None:
            return
        for event in events:
            self.agent.recorder.emit(
                pod, event.type, event.reason, event.message, field_path=event.field_path
            )


def _field_path(pod: Mapping[str, Any], name: str) -> str:
    section = (
        "initContainers"
        if any(c.get("name") == name for c in podspec.init_containers(pod))
        else "containers"
    )
    return f"spec.{section}{{{name}}}"


def _termination_grace(pod: Mapping[str, Any]) -> float:
    grace = podspec.spec_of(pod).get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and not isinstance(grace, bool) and grace >= 0:
        return float(grace)
    return 30.0
