"""The operator's metrics on prometheus_client: the exposition text a Prometheus server parses,
upstream's names, labels and buckets (kubeflow-operator.md §6.1, controller-runtime), and a
registry per set of metrics."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubetrain.operator.runtime import metrics


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Each sample of an exposition, by name and sorted labels, as Prometheus reads it."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def families(text: str) -> dict[str, str]:
    """Each family's type, by the name its TYPE line gives."""
    types: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
    return types


def test_a_counter_gauge_and_histogram_as_prometheus_reads_them() -> None:
    m = metrics.Metrics()
    m.jobs_created.labels(job_namespace="ns", framework="pytorch").inc()
    m.jobs_created.labels("ns", "pytorch").inc(2)
    m.jobs_created.labels("a", "tensorflow").inc()
    m.queue_depth.labels("q").set(3)
    for took in (0.004, 0.5, 0.5, 75.0):
        m.reconcile_time.labels("c").observe(took)
    text = m.registry.exposition()
    got = samples(text)
    job = "training_operator_jobs_created_total"
    assert got[(job, (("framework", "pytorch"), ("job_namespace", "ns")))] == 3
    assert got[(job, (("framework", "tensorflow"), ("job_namespace", "a")))] == 1
    assert got[("workqueue_depth", (("name", "q"),))] == 3
    assert got[("created_pods_total", ())] == 0, "an unlabelled counter is served from the start"
    time = "controller_runtime_reconcile_time_seconds"
    buckets = {
        float(dict(labels)["le"]): value
        for (name, labels), value in got.items()
        if name == f"{time}_bucket"
    }
    assert list(buckets) == [*metrics.RECONCILE_BUCKETS, float("inf")], "upstream's buckets"
    assert (buckets[0.005], buckets[0.45], buckets[0.5], buckets[60.0]) == (1, 1, 3, 3)
    assert buckets[float("inf")] == 4
    assert got[(f"{time}_count", (("controller", "c"),))] == 4
    assert got[(f"{time}_sum", (("controller", "c"),))] == pytest.approx(76.004)
    assert not [name for name, _ in got if name.endswith("_created")], "no timestamps series"
    assert (m.pods_created.value, m.jobs_created.labels("ns", "pytorch").value) == (0, 3)
    assert set(m.jobs_created.children) == {("ns", "pytorch"), ("a", "tensorflow")}


def test_label_values_are_escaped() -> None:
    m = metrics.Metrics()
    odd = 'quote " backslash \\ newline \n'
    m.events_dropped.labels(odd).inc()
    assert (
        samples(m.registry.exposition())[("kubetrain_events_dropped_total", (("reason", odd),))]
        == 1
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(lambda c: c.labels("only-one"), "label count", id="too few label values"),
        pytest.param(lambda c: c.labels(a="x", z="y"), "label names", id="a label it lacks"),
        pytest.param(lambda c: c.inc(), "missing label values", id="a labelled counter bare"),
        pytest.param(lambda c: c.value, "use .labels", id="a labelled counter's value"),
        pytest.param(lambda c: c.labels("x", "y").inc(-1), "non-negative", id="going down"),
    ],
)
def test_misuse_is_refused(call: Callable[[metrics.Counter], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(metrics.Metrics().jobs_created)


def test_each_set_of_metrics_has_a_registry_of_its_own() -> None:
    one, two = metrics.Metrics(), metrics.Metrics()
    one.pods_created.inc()
    assert (one.pods_created.value, two.pods_created.value) == (1, 0)
    assert "created_pods_total 0.0" in two.registry.exposition().splitlines()
    with pytest.raises(ValueError, match="Duplicated"):
        metrics.Metrics(one.registry)


def test_the_operator_exposes_upstreams_names() -> None:
    m = metrics.Metrics()
    m.jobs_successful.labels(job_namespace="ns", framework="pytorch").inc()
    m.reconcile_total.labels(controller="pytorchjob-controller", result="success").inc()
    text = m.registry.exposition()
    assert families(text) == {
        "training_operator_jobs_created_total": "counter",
        "training_operator_jobs_deleted_total": "counter",
        "training_operator_jobs_successful_total": "counter",
        "training_operator_jobs_failed_total": "counter",
        "training_operator_jobs_restarted_total": "counter",
        "created_pods_total": "counter",
        "deleted_pods_total": "counter",
        "failed_pods_total": "counter",
        "succeeded_service_creation_total": "counter",
        "failed_service_creation_total": "counter",
        "created_pod_groups_total": "counter",
        "deleted_pod_groups_total": "counter",
        "controller_runtime_reconcile_total": "counter",
        "controller_runtime_reconcile_errors_total": "counter",
        "controller_runtime_terminal_reconcile_errors_total": "counter",
        "controller_runtime_reconcile_time_seconds": "histogram",
        "controller_runtime_max_concurrent_reconciles": "gauge",
        "controller_runtime_active_workers": "gauge",
        "workqueue_depth": "gauge",
        "workqueue_adds_total": "counter",
        "workqueue_retries_total": "counter",
        "workqueue_queue_duration_seconds": "histogram",
        "workqueue_work_duration_seconds": "histogram",
        "leader_election_master_status": "gauge",
        "kubetrain_informer_watch_restarts_total": "counter",
        "kubetrain_informer_relists_total": "counter",
        "kubetrain_events_dropped_total": "counter",
    }
    lines = text.splitlines()
    # client_golang's order of labels too: sorted by name
    assert (
        'training_operator_jobs_successful_total{framework="pytorch",job_namespace="ns"} 1.0'
        in lines
    )
    assert (
        'controller_runtime_reconcile_total{controller="pytorchjob-controller",result="success"}'
        " 1.0" in lines
    )
    assert m.jobs_created.label_names == ("job_namespace", "framework")
    assert m.reconcile_total.label_names == ("controller", "result")
    m.queue_latency.labels("q").observe(2e-6)
    les = [
        float(dict(labels)["le"])
        for (name, labels), value in samples(m.registry.exposition()).items()
        if name == "workqueue_queue_duration_seconds_bucket"
    ]
    assert les == [*metrics.QUEUE_BUCKETS, float("inf")], "client-go's buckets"
