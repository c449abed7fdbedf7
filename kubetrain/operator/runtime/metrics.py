"""The operator's Prometheus metrics, on ``prometheus_client``, and the text served on /metrics.

The names are upstream's, so existing dashboards and alerts keep working: the Training
Operator's job counters (``training_operator_jobs_*_total{job_namespace, framework}`` and its
unlabelled pod, service and PodGroup counters, kubeflow-operator.md §6.1), controller-runtime's
``controller_runtime_reconcile_*`` with its buckets, client-go's ``workqueue_*`` with its
buckets (python-operator-stack.md §9), and ``leader_election_master_status``. Informer restarts
and relists, and events the recorder dropped, are kubetrain's own.

Each :class:`Metrics` has a registry of its own, never ``prometheus_client``'s process-wide
one. The ``*_created`` timestamps that ``prometheus_client`` adds by default are switched off:
upstream's Go client serves none, so the exposition is the series upstream's is.

Owns: metric families, their values and the exposition text. Must not: serve HTTP (the
server module does) or decide when anything is counted (the components that count do).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import prometheus_client

prometheus_client.disable_created_metrics()

# The text exposition format of client_golang's default (prometheus_client writes it).
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"

# controller-runtime's buckets for controller_runtime_reconcile_time_seconds
RECONCILE_BUCKETS: Final = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    *(0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0),
    *(6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0),
)
# client-go's workqueue duration buckets: 10 ns to 1000 s, by factors of ten
QUEUE_BUCKETS: Final = tuple(10.0**e for e in range(-8, 4))


class Registry(prometheus_client.CollectorRegistry):
    """A registry of its own (never the process-wide one), and its exposition text."""

    def exposition(self) -> str:
        """Every family in the text format of :data:`CONTENT_TYPE`, in registration order."""
        return prometheus_client.generate_latest(self).decode()


class _ReadBack:
    """What was counted, read back: reconcilers' and queues' tests assert it. The library
    keeps a family's children and a child's value in attributes it does not document (stable
    since its first releases); these properties are the one place that reads them."""

    _name: str
    _labelnames: tuple[str, ...]
    _metrics: dict[tuple[str, ...], Any]
    _value: Any

    @property
    def label_names(self) -> tuple[str, ...]:
        return tuple(self._labelnames)

    @property
    def children(self) -> dict[tuple[str, ...], Any]:
        """The children made so far, by label values (none for an unlabelled family)."""
        return dict(getattr(self, "_metrics", {}))

    @property
    def value(self) -> float:
        """A child's value, or an unlabelled family's; a labelled family has none."""
        if self._labelnames and not hasattr(self, "_value"):
            raise ValueError(
                f"{self._name} has labels {', '.join(self._labelnames)}: use .labels()"
            )
        return float(self._value.get())


class Counter(_ReadBack, prometheus_client.Counter):
    """``prometheus_client``'s counter, whose value reads back."""


class Gauge(_ReadBack, prometheus_client.Gauge):
    """``prometheus_client``'s gauge, whose value reads back."""


Histogram = prometheus_client.Histogram


class _Families:
    """Makes families on one registry."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def counter(self, name: str, help: str, labels: Sequence[str] = ()) -> Counter:
        return Counter(name, help, labels, registry=self.registry)

    def gauge(self, name: str, help: str, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(name, help, labels, registry=self.registry)

    def histogram(
        self, name: str, help: str, labels: Sequence[str] = (), *, buckets: Sequence[float]
    ) -> Histogram:
        return Histogram(name, help, labels, registry=self.registry, buckets=buckets)


class Metrics:
    """Every metric the operator exposes, on one registry: a manager's own, so two operators
    in one process (tests run several) count apart."""

    def __init__(self, registry: Registry | None = None) -> None:
        self.registry = registry if registry is not None else Registry()
        r = _Families(self.registry)
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
        # kubetrain's own: events the recorder did not write (see kube.record)
        self.events_dropped = r.counter(
            "kubetrain_events_dropped_total",
            "Events not written per reason: full (the queue was full), rejected (the API "
            "server refused it), failed (every try failed), stopped (still queued at stop)",
            ("reason",),
        )


METRICS = Metrics()
"""The metrics of a controller or recorder made outside a manager; each manager has its own."""
