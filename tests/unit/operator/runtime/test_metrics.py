"""The metrics registry and its exposition text (Prometheus text format 0.0.4), and the
upstream names dashboards rely on (kubeflow-operator.md §6.1, controller-runtime)."""

from __future__ import annotations

import pytest

from kubetrain.operator.runtime import metrics


def test_exposition_of_a_counter_gauge_and_histogram() -> None:
    registry = metrics.Registry()
    jobs = registry.counter("jobs_total", "Jobs seen", ("job_namespace", "framework"))
    registry.counter("pods_total", "Pods made")
    depth = registry.gauge("depth", "Queue depth", ("name",))
    took = registry.histogram("took_seconds", "Time taken", buckets=(0.1, 1.0))
    jobs.labels(job_namespace="ns", framework="pytorch").inc()
    jobs.labels("ns", "pytorch").inc(2)
    jobs.labels("a", "tensorflow").inc()
    depth.labels("q").set(3)
    took.observe(0.05)
    took.observe(0.5)
    took.observe(7.25)
    assert registry.exposition() == (
        "# HELP depth Queue depth\n"
        "# TYPE depth gauge\n"
        'depth{name="q"} 3\n'
        "# HELP jobs_total Jobs seen\n"
        "# TYPE jobs_total counter\n"
        'jobs_total{job_namespace="a",framework="tensorflow"} 1\n'
        'jobs_total{job_namespace="ns",framework="pytorch"} 3\n'
        "# HELP pods_total Pods made\n"
        "# TYPE pods_total counter\n"
        "pods_total 0\n"
        "# HELP took_seconds Time taken\n"
        "# TYPE took_seconds histogram\n"
        'took_seconds_bucket{le="0.1"} 1\n'
        'took_seconds_bucket{le="1"} 2\n'
        'took_seconds_bucket{le="+Inf"} 3\n'
        "took_seconds_sum 7.8\n"
        "took_seconds_count 3\n"
    )


def test_label_values_and_help_are_escaped() -> None:
    registry = metrics.Registry()
    c = registry.counter("c_total", 'a "help"\\ with\nnewline', ("v",))
    c.labels('quote " backslash \\ newline \n').inc()
    text = registry.exposition()
    assert '# HELP c_total a "help"\\\\ with\\nnewline\n' in text
    assert 'c_total{v="quote \\" backslash \\\\ newline \\n"} 1\n' in text


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(lambda c: c.labels("only-one"), "labels", id="too few label values"),
        pytest.param(lambda c: c.labels(a="x", z="y"), "labels", id="a label it does not have"),
        pytest.param(lambda c: c.inc(), "labels", id="a labelled counter used bare"),
        pytest.param(lambda c: c.labels("x", "y").inc(-1), "only goes up", id="going down"),
    ],
)
def test_misuse_is_refused(call: object, message: str) -> None:
    registry = metrics.Registry()
    counter = registry.counter("c_total", "c", ("a", "b"))
    with pytest.raises(ValueError, match=message):
        call(counter)  # type: ignore[operator]


def test_a_name_registers_once() -> None:
    registry = metrics.Registry()
    registry.counter("c_total", "c")
    with pytest.raises(ValueError, match="already registered"):
        registry.gauge("c_total", "c")


def test_the_operator_exposes_upstreams_names() -> None:
    m = metrics.Metrics()
    m.jobs_created.labels(job_namespace="ns", framework="pytorch").inc()
    m.jobs_successful.labels(job_namespace="ns", framework="pytorch").inc()
    m.reconcile_total.labels(controller="pytorchjob-controller", result="success").inc()
    text = m.registry.exposition()
    for line in [
        'training_operator_jobs_created_total{job_namespace="ns",framework="pytorch"} 1',
        'training_operator_jobs_successful_total{job_namespace="ns",framework="pytorch"} 1',
        "# TYPE training_operator_jobs_deleted_total counter",
        "# TYPE training_operator_jobs_failed_total counter",
        "# TYPE training_operator_jobs_restarted_total counter",
        "created_pods_total 0",
        "deleted_pods_total 0",
        "failed_pods_total 0",
        "succeeded_service_creation_total 0",
        "failed_service_creation_total 0",
        "created_pod_groups_total 0",
        "deleted_pod_groups_total 0",
        'controller_runtime_reconcile_total{controller="pytorchjob-controller",result="success"} 1',
        "# TYPE controller_runtime_reconcile_errors_total counter",
        "# TYPE controller_runtime_reconcile_time_seconds histogram",
        "# TYPE workqueue_depth gauge",
        "# TYPE workqueue_adds_total counter",
        "# TYPE workqueue_retries_total counter",
        "# TYPE leader_election_master_status gauge",
    ]:
        assert line in text.splitlines(), line


def test_the_process_has_one_default_registry() -> None:
    assert isinstance(metrics.METRICS, metrics.Metrics)
    assert metrics.METRICS.jobs_created.label_names == ("job_namespace", "framework")
