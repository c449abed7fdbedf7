"""The metric families the controller machinery of this layer counts into, as protocols.

The work queue, the informer and the event recorder count what client-go's count
(``workqueue_*``, watch restarts and relists, events dropped), but the registry that exposes
them belongs to the process that runs them: the operator hands in its own, and the local
control plane's components count nothing. Any family with Prometheus' ``labels(...)`` fits.

Must not: create or register metrics.
"""

from __future__ import annotations

from typing import Any, Protocol


class Family(Protocol):
    """A labelled metric family: ``labels(*values)`` is the child to ``inc``, ``set`` or
    ``observe``."""

    def labels(self, *values: str) -> Any: ...


class QueueMetrics(Protocol):
    """client-go's ``workqueue_*`` families, labelled by the queue's name."""

    @property
    def queue_depth(self) -> Family: ...

    @property
    def queue_adds(self) -> Family: ...

    @property
    def queue_retries(self) -> Family: ...

    @property
    def queue_latency(self) -> Family: ...

    @property
    def work_duration(self) -> Family: ...


class InformerMetrics(Protocol):
    """Watch restarts and relists, labelled by the resource."""

    @property
    def watch_restarts(self) -> Family: ...

    @property
    def relists(self) -> Family: ...


class _Uncounted:
    """A family that counts nothing, for a component whose process exposes no metrics."""

    def labels(self, *values: str) -> _Uncounted:
        return self

    def inc(self, amount: float = 1.0) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


UNCOUNTED: Family = _Uncounted()
