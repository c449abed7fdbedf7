"""The operator's Prometheus metrics: a small registry and the text it serves on /metrics.

The names are upstream's, so existing dashboards and alerts keep working: the Training
Operator's job counters (``training_operator_jobs_*_total{job_namespace, framework}`` and its
unlabelled pod, service and PodGroup counters, kubeflow-operator.md §6.1), controller-runtime's
``controller_runtime_reconcile_*`` and client-go's ``workqueue_*`` (python-operator-stack.md §9),
and ``leader_election_master_status``. Informer restarts and relists, and events the recorder
dropped, are kubetrain's own.

A registry is a few dozen lines here, which is why there is no dependency for it: counters,
gauges and histograms with labels, written in the text exposition format 0.0.4.

Owns: metric families, their values and the exposition text. Must not: serve HTTP (the
server module does) or decide when anything is counted (the components that count do).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Final, Generic, TypeVar

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"

# controller-runtime's buckets for controller_runtime_reconcile_time_seconds
RECONCILE_BUCKETS: Final = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    *(0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0),
    *(6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0),
)
# client-go's workqueue duration buckets: 10 ns to 1000 s, by factors of ten
QUEUE_BUCKETS: Final = tuple(10.0**e for e in range(-8, 4))


class _Counter:
    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        self.value += amount


class _Gauge:
    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = float(value)

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount


class _Histogram:
    def __init__(self, buckets: Sequence[float]) -> None:
        self.bounds = tuple(buckets)
        self.counts = [0] * len(self.bounds)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.sum += value
        self.count += 1
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                self.counts[i] += 1


C = TypeVar("C", _Counter, _Gauge, _Histogram)


class _Family(Generic[C]):
    """A metric and its children, one per combination of label values. A family without
    labels has its one child from the start, so it is exposed (as 0) before first use."""

    type: str = ""

    def __init__(self, name: str, help: str, labels: Sequence[str] = ()) -> None:
        self.name = name
        self.help = help
        self.label_names = tuple(labels)
        self.children: dict[tuple[str, ...], C] = {}
        if not self.label_names:
            self.children[()] = self._new()

    def _new(self) -> C:
        raise NotImplementedError

    def labels(self, *values: str, **named: str) -> C:
        """The child for these label values, given in order or by name."""
        if values and named:
            raise ValueError("give label values in order or by name, not both")
        if named:
            if set(named) != set(self.label_names):
                raise ValueError(f"{self.name} has labels {', '.join(self.label_names)}")
            values = tuple(named[n] for n in self.label_names)
        if len(values) != len(self.label_names):
            raise ValueError(f"{self.name} has labels {', '.join(self.label_names)}")
        key = tuple(str(v) for v in values)
        child = self.children.get(key)
        if child is None:
            child = self.children[key] = self._new()
        return child

    def _only(self) -> C:
        if self.label_names:
            raise ValueError(f"{self.name} has labels: use .labels(...)")
        return self.children[()]

    def samples(self) -> Iterator[tuple[str, dict[str, str], float]]:
        raise NotImplementedError


class _Valued(_Family[C]):
    """A family whose children each hold one number: counters and gauges."""

    @property
    def value(self) -> float:
        return self._only().value

    def samples(self) -> Iterator[tuple[str, dict[str, str], float]]:
        for values, child in sorted(self.children.items()):
            yield self.name, dict(zip(self.label_names, values, strict=True)), child.value


class Counter(_Valued[_Counter]):
    type = "counter"

    def _new(self) -> _Counter:
        return _Counter()

    def inc(self, amount: float = 1.0) -> None:
        self._only().inc(amount)


class Gauge(_Valued[_Gauge]):
    type = "gauge"

    def _new(self) -> _Gauge:
        return _Gauge()

    def set(self, value: float) -> None:
        self._only().set(value)


class Histogram(_Family[_Histogram]):
    type = "histogram"

    def __init__(
        self, name: str, help: str, labels: Sequence[str] = (), *, buckets: Sequence[float]
    ) -> None:
        if list(buckets) != sorted(buckets) or not buckets:
            raise ValueError(f"{name}: buckets must be given in increasing order")
        self.buckets = tuple(float(b) for b in buckets if not math.isinf(b))
        super().__init__(name, help, labels)

    def _new(self) -> _Histogram:
        return _Histogram(self.buckets)

    def observe(self, value: float) -> None:
        self._only().observe(value)

    def samples(self) -> Iterator[tuple[str, dict[str, str], float]]:
        for values, child in sorted(self.children.items()):
            labels = dict(zip(self.label_names, values, strict=True))
            for bound, count in zip(child.bounds, child.counts, strict=True):
                yield f"{self.name}_bucket", {**labels, "le": _number(bound)}, count
            yield f"{self.name}_bucket", {**labels, "le": "+Inf"}, child.count
            yield f"{self.name}_sum", labels, child.sum
            yield f"{self.name}_count", labels, child.count


class Registry:
    """Metric families by name; :meth:`exposition` writes them all."""

    def __init__(self) -> None:
        self.families: dict[str, _Family[Any]] = {}

    def _add(self, family: _Family[Any]) -> None:
        if family.name in self.families:
            raise ValueError(f"metric {family.name} is already registered")
        self.families[family.name] = family

    def counter(self, name: str, help: str, labels: Sequence[str] = ()) -> Counter:
        family = Counter(name, help, labels)
        self._add(family)
        return family

    def gauge(self, name: str, help: str, labels: Sequence[str] = ()) -> Gauge:
        family = Gauge(name, help, labels)
        self._add(family)
        return family

    def histogram(
        self, name: str, help: str, labels: Sequence[str] = (), *, buckets: Sequence[float]
    ) -> Histogram:
        family = Histogram(name, help, labels, buckets=buckets)
        self._add(family)
        return family

    def exposition(self) -> str:
        """Every family, sorted by name, in the Prometheus text format (version 0.0.4)."""
        lines: list[str] = []
        for name in sorted(self.families):
            family = self.families[name]
            lines.append(f"# HELP {name} {_escape_help(family.help)}")
            lines.append(f"# TYPE {name} {family.type}")
            for sample, labels, value in family.samples():
                lines.append(f"{sample}{_labels(labels)} {_number(value)}")
        return "\n".join(lines) + "\n"


class Metrics:
    """Every metric the operator exposes, on one registry."""

    def __init__(self, registry: Registry | None = None) -> None:
        self.registry = registry or Registry()
        r = self.registry
        job = ("job_namespace", "framework")
        # the Training Operator's (pkg/common/metrics.go, controller.v1/common/*.go)
        self.jobs_created = r.counter(
            "training_operator_jobs_created_total", "Counts number of jobs created", job
        )
        self.jobs_deleted = r.counter(
            "training_operator_jobs_deleted_total", "Counts number of jobs deleted", job
        )
        self.jobs_successful = r.counter(
            "training_operator_jobs_successful_total", "Counts number of jobs successful", job
        )
        self.jobs_failed = r.counter(
            "training_operator_jobs_failed_total", "Counts number of jobs failed", job
        )
        self.jobs_restarted = r.counter(
            "training_operator_jobs_restarted_total", "Counts number of jobs restarted", job
        )
        self.pods_created = r.counter("created_pods_total", "The number of created pods")
        self.pods_deleted = r.counter("deleted_pods_total", "The number of deleted pods")
        self.pods_failed = r.counter("failed_pods_total", "The number of failed pods")
        self.services_created = r.counter(
            "succeeded_service_creation_total", "The total number of succeeded service creation"
        )
        self.services_failed = r.counter(
            "failed_service_creation_total", "The total number of failed service creation"
        )
        self.pod_groups_created = r.counter(
            "created_pod_groups_total", "The total number of created pod groups"
        )
        self.pod_groups_deleted = r.counter(
            "deleted_pod_groups_total", "The total number of deleted pod groups"
        )
        # controller-runtime's (pkg/internal/controller/metrics)
        self.reconcile_total = r.counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ("controller", "result"),
        )
        self.reconcile_errors = r.counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ("controller",),
        )
        self.terminal_reconcile_errors = r.counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ("controller",),
        )
        self.reconcile_time = r.histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ("controller",),
            buckets=RECONCILE_BUCKETS,
        )
        self.max_concurrent_reconciles = r.gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ("controller",),
        )
        self.active_workers = r.gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ("controller",),
        )
        # client-go's workqueue metrics, as controller-runtime registers them
        self.queue_depth = r.gauge("workqueue_depth", "Current depth of workqueue", ("name",))
        self.queue_adds = r.counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", ("name",)
        )
        self.queue_retries = r.counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", ("name",)
        )
        self.queue_latency = r.histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ("name",),
            buckets=QUEUE_BUCKETS,
        )
        self.work_duration = r.histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            ("name",),
            buckets=QUEUE_BUCKETS,
        )
        self.leader = r.gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, "
            "0 indicates backup, 1 indicates master. 'name' is the string used to "
            "identify the lease. Please make sure to group by name.",
            ("name",),
        )
        # kubetrain's own: how often the informers had to reconnect or list again
        self.watch_restarts = r.counter(
            "kubetrain_informer_watch_restarts_total",
            "Watches re-opened or started over per resource (timeouts, stalls, errors)",
            ("resource",),
        )
        self.relists = r.counter(
            "kubetrain_informer_relists_total",
            "Lists after the first of a watch per resource (410 Gone)",
            ("resource",),
        )
        # kubetrain's own: events the recorder did not write (see operator.runtime.events)
        self.events_dropped = r.counter(
            "kubetrain_events_dropped_total",
            "Events not written per reason: full (the queue was full), rejected (the API "
            "server refused it), failed (every try failed), stopped (still queued at stop)",
            ("reason",),
        )


METRICS = Metrics()
"""The process's metrics: what the Manager serves, and what reconcilers count on."""


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape_value(v)}"' for k, v in labels.items()) + "}"
