"""``kubetrain.report``: a training process tells its TrainJob how far it got.

    import kubetrain
    for epoch in range(epochs):
        ...
        kubetrain.report(progress=100 * (epoch + 1) / epochs, metrics={"loss": loss})

What it writes is the TrainJob's ``status.trainerStatus`` (upstream's field):
``progressPercentage`` (0..100), ``estimatedRemainingSeconds``, ``metrics`` (name/value
strings, at most 256) and ``lastUpdatedTime``. ``kubectl get trainjob`` prints the progress
and the ETA next to the state.

**The estimate.** Without ``eta_seconds``, the remaining time is projected from the progress
made since the first report of this process: ``elapsed / (progress - first progress) *
(100 - progress)``. A report without ``progress`` keeps the last one (and its estimate), so
metrics can be sent on their own.

**The transport, and why.** The process patches its TrainJob's ``status`` subresource itself
(a JSON merge patch of ``status.trainerStatus``, every field written, so that each report
replaces the last as upstream's status server does), through the pod's in-cluster
credentials: ``KUBERNETES_SERVICE_HOST``/``PORT`` and the ServiceAccount token and CA under
``/var/run/secrets/kubernetes.io/serviceaccount``. The TrainJob controller writes only
``conditions`` and ``jobsStatus``, so the two writers never overwrite each other. The
controller tells the trainer which TrainJob it belongs to: ``KUBETRAIN_TRAINJOB_NAME`` and
``KUBETRAIN_TRAINJOB_NAMESPACE`` on the trainer's ``node`` container.

- On kubetrain's local node every pod gets those credentials, so this works as is.
- On a cluster the pod's ServiceAccount needs ``patch`` on ``trainjobs/status`` in its
  namespace (a Role and RoleBinding); without it a report is refused (403), which is logged
  once and otherwise ignored. Upstream's alternative, a status server in the controller that
  takes a per-job token, exists so that no pod needs that permission; kubetrain keeps no
  server in the operator and says what the permission is instead.

Reports are sent from a background thread, at most one every :data:`MIN_INTERVAL` seconds
(later reports replace one not yet sent, and the last one is sent when the process exits), so
calling ``report`` every step costs nothing. Call it from one process per job (rank 0): every
caller writes the same field. It never raises for a failed write, and outside a TrainJob
(no ``KUBETRAIN_TRAINJOB_NAME``) it does nothing but warn once.

Owns: the report, the estimate and the sender thread. Must not: be imported by
``import kubetrain`` (``kubetrain.report`` loads it on first use), or import the client layer
before the first report (a training script that never reports pays nothing; the first report
pays for the import, in the caller's thread).
"""

from __future__ import annotations

import atexit
import datetime
import logging
import math
import os
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import timefmt

log = logging.getLogger(__name__)

NAME_ENV: Final = "KUBETRAIN_TRAINJOB_NAME"
NAMESPACE_ENV: Final = "KUBETRAIN_TRAINJOB_NAMESPACE"
MIN_INTERVAL: Final = 2.0  # seconds between two writes
EXIT_FLUSH_TIMEOUT: Final = 10.0  # seconds the last report may take at interpreter exit
MAX_METRICS: Final = 256  # the TrainJob CRD's maxItems
WRITE_TIMEOUT: Final = 10.0  # seconds for one write to the API server
NOT_IN_TRAINJOB: Final = (
    "kubetrain.report: not running in a TrainJob ({env} is not set); progress is not reported"
)


@dataclass(frozen=True)
class Target:
    """The TrainJob a process reports to."""

    namespace: str
    name: str


def target_from(environ: Mapping[str, str]) -> Target | None:
    name = environ.get(NAME_ENV, "")
    if not name:
        return None
    return Target(environ.get(NAMESPACE_ENV) or "default", name)


class Estimator:
    """The remaining time, projected from the progress made since the first sample."""

    def __init__(self) -> None:
        self._first: tuple[float, float] | None = None  # (time, progress)

    def estimate(self, now: float, progress: float) -> int | None:
        if progress >= 100:
            return 0
        if self._first is None or progress < self._first[1]:
            self._first = (now, progress)  # a restarted count starts a new projection
            return None
        start, first = self._first
        rate = (progress - first) / (now - start) if now > start else 0.0
        if rate <= 0:
            return None
        return max(0, math.ceil((100 - progress) / rate))


def _timestamp(when: datetime.datetime) -> str:
    return timefmt.seconds(when)


def _metric_value(value: Any) -> str:
    if isinstance(value, float):
        return format(value, ".6g")
    return str(value)


def trainer_status(
    progress: float | None,
    eta_seconds: float | None,
    metrics: Mapping[str, Any] | None,
    now: datetime.datetime,
) -> dict[str, Any]:
    """``status.trainerStatus`` as the CRD takes it; every field present (None: cleared)."""
    percentage = None if progress is None else int(min(100.0, max(0.0, float(progress))))
    eta = None if eta_seconds is None else max(0, math.ceil(float(eta_seconds)))
    items = [{"name": str(k), "value": _metric_value(v)} for k, v in (metrics or {}).items()]
    return {
        "progressPercentage": percentage,
        "estimatedRemainingSeconds": eta,
        "metrics": items[:MAX_METRICS] or None,
        "lastUpdatedTime": _timestamp(now),
    }


Send = Callable[[Target, dict[str, Any]], None]


class Reporter:
    """Turns reports into status patches and hands them to ``send`` from one thread, at most
    one every ``interval`` seconds; the latest report wins over one not yet sent."""

    def __init__(
        self,
        target: Target,
        send: Send,
        *,
        interval: float = MIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(
            datetime.timezone.utc
        ),
    ) -> None:
        self.target = target
        self._send = send
        self._interval = interval
        self._clock = clock
        self._wall_clock = wall_clock
        self._estimator = Estimator()
        self._progress: float | None = None
        self._eta: float | None = None
        self._pending: dict[str, Any] | None = None
        self._sending = False
        self._last_sent = -math.inf
        self._closed = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def report(
        self,
        progress: float | None = None,
        metrics: Mapping[str, Any] | None = None,
        eta_seconds: float | None = None,
    ) -> dict[str, Any]:
        """Queue a report; returns the ``trainerStatus`` it will write."""
        now = self._clock()
        if progress is not None:
            self._progress = float(progress)
            estimated = self._estimator.estimate(now, self._progress)
            self._eta = eta_seconds if eta_seconds is not None else estimated
        elif eta_seconds is not None:
            self._eta = eta_seconds
        status = trainer_status(self._progress, self._eta, metrics, self._wall_clock())
        with self._changed:
            self._pending = status
            self._changed.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="kubetrain-report", daemon=True
                )
                self._thread.start()
        return status

    def close(self, timeout: float = EXIT_FLUSH_TIMEOUT) -> None:
        """Send what is pending (without waiting for the interval) and stop the thread."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def flushed(self) -> bool:
        with self._changed:
            return self._pending is None and not self._sending

    def _run(self) -> None:
        while True:
            with self._changed:
                while self._pending is None and not self._closed:
                    self._changed.wait()
                if self._pending is None:
                    break
                wait = self._last_sent + self._interval - self._clock()
                if wait > 0 and not self._closed:
                    self._changed.wait(wait)
                    continue  # look again: closed, or a newer report, or time is up
                status, self._pending = self._pending, None
                self._sending = True
            try:
                self._send(self.target, status)
            except Exception:  # a report must never break training
                log.warning("kubetrain.report: could not write the TrainJob status", exc_info=True)
            with self._changed:
                self._sending = False
                self._last_sent = self._clock()
                self._changed.notify_all()
        close = getattr(self._send, "close", None)
        if close is not None:
            close()


class _ApiSender:
    """Patches ``trainjobs/<name>/status`` through ``kubetrain.kube`` with the pod's
    in-cluster credentials, on an event loop of the sender thread's own."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        # Imported here, in the caller's thread at its first report: imported by the sender
        # thread, it could still be loading when a short script's interpreter shuts down, and
        # a module that registers an exit hook then fails, losing the last report.
        import asyncio
        import concurrent.futures.thread  # noqa: F401  (its exit hook: see _at_exit)

        from kubetrain import kube

        self._asyncio = asyncio
        self._kube = kube
        self._environ = dict(environ)
        self._loop: Any = None
        self._client: Any = None
        self._failure_logged = False

    def __call__(self, target: Target, status: dict[str, Any]) -> None:
        if self._loop is None:
            self._loop = self._asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._patch(target, status))
        except Exception as exc:
            if not self._failure_logged:  # once: a missing permission would repeat forever
                self._failure_logged = True
                log.warning(
                    "kubetrain.report: cannot write TrainJob %s/%s status: %s",
                    target.namespace,
                    target.name,
                    exc,
                )

    def close(self) -> None:
        if self._loop is None:
            return
        try:
            if self._client is not None:
                self._loop.run_until_complete(self._client.close())
        finally:
            self._loop.close()

    async def _patch(self, target: Target, status: dict[str, Any]) -> None:
        kube = self._kube
        if self._client is None:
            cluster = await kube.config.from_incluster(self._environ)
            self._client = kube.Client(
                cluster, timeout=WRITE_TIMEOUT, user_agent="kubetrain-report"
            )
        resource = kube.Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", kind="TrainJob")
        await self._client.patch(
            resource,
            target.name,
            {"status": {"trainerStatus": status}},
            namespace=target.namespace,
            subresource="status",
        )


_lock = threading.Lock()
_reporter: Reporter | None = None
_warned = False


def _default_reporter() -> Reporter | None:
    global _reporter, _warned
    with _lock:
        if _reporter is not None:
            return _reporter
        target = target_from(os.environ)
        if target is None:
            if not _warned:
                _warned = True
                warnings.warn(NOT_IN_TRAINJOB.format(env=NAME_ENV), RuntimeWarning, stacklevel=3)
            return None
        _reporter = Reporter(target, _ApiSender(os.environ))
        _at_exit(_reporter.close)
        return _reporter


def _at_exit(flush: Callable[[], None]) -> None:
    """Run ``flush`` when the interpreter exits, while threads and executors still work.

    ``atexit`` hooks run after the threading module's own exit hooks, which shut down every
    executor (so the client's worker-thread calls fail); ``threading._register_atexit`` hooks
    run before them, in reverse order of registration: registered after the executors' own
    (imported with the sender), this one runs first.
    """
    register = getattr(threading, "_register_atexit", None)
    if register is None:  # not CPython: the plain hook, best effort
        atexit.register(flush)
    else:
        register(flush)


def report(
    progress: float | None = None,
    metrics: Mapping[str, Any] | None = None,
    eta_seconds: float | None = None,
) -> None:
    """Report training progress to this process' TrainJob (``status.trainerStatus``).

    ``progress``: percent done, 0..100 (clamped, truncated to an integer). ``metrics``: names
    and values, written as strings. ``eta_seconds``: the seconds left, if the caller knows
    better than the projection from progress over time. Returns at once; see the module
    docstring for where it goes and what it needs.
    """
    reporter = _default_reporter()
    if reporter is not None:
        reporter.report(progress, metrics, eta_seconds)
