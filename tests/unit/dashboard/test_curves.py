"""Training curves: the point read off a TrainJob's report, the stored text, merging several
dashboards' points, and the bound that keeps a long run's history within a ConfigMap."""

from __future__ import annotations

from typing import Any

from kubetrain.dashboard import curves


def trainjob(report: dict[str, Any] | None = None, uid: str = "u1") -> dict[str, Any]:
    status = {"trainerStatus": report} if report is not None else {}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ns", "uid": uid},
        "status": status,
    }


REPORT = {
    "progressPercentage": 40,
    "estimatedRemainingSeconds": 90,
    "metrics": [
        {"name": "loss", "value": "0.31"},
        {"name": "phase", "value": "warm-up"},
        {"name": "epoch", "value": "4"},
    ],
    "lastUpdatedTime": "2024-05-01T12:00:00Z",
}


def test_a_report_becomes_a_point_at_its_time_with_numbers_for_numeric_metrics() -> None:
    point = curves.point_of(trainjob(REPORT))
    assert point == curves.Point(
        1714564800.0, 40.0, 90.0, {"loss": 0.31, "phase": None, "epoch": 4.0}
    )


def test_a_job_without_a_report_or_its_time_has_no_point() -> None:
    assert curves.point_of(trainjob()) is None
    assert curves.point_of(trainjob({"progressPercentage": 5})) is None


def test_the_stored_text_reads_back_as_the_same_points() -> None:
    points = [
        curves.Point(1.0, 10.0, None, {"loss": 2.0}),
        curves.Point(3.0, 30.0, 4.0, {"loss": 1.0, "accuracy": 0.5}),
    ]
    stored = curves.configmap(trainjob(), points)
    assert curves.decode(stored) == points


def test_unreadable_stored_text_is_no_history_rather_than_an_error() -> None:
    for text in ("not json", '{"format": 99, "points": [[1, 2, 3, []]]}', '{"format": 1}'):
        assert curves.decode({"data": {curves.DATA_KEY: text}}) == []
    assert curves.decode(None) == []


def test_merging_orders_by_time_keeps_one_point_per_time_and_the_newer_wins() -> None:
    a = [curves.Point(1.0, 10.0), curves.Point(3.0, 30.0)]
    b = [curves.Point(2.0, 20.0), curves.Point(3.0, 31.0)]
    assert curves.merged(a, b) == [
        curves.Point(1.0, 10.0),
        curves.Point(2.0, 20.0),
        curves.Point(3.0, 31.0),
    ]


def test_a_long_history_is_thinned_in_its_older_half_keeping_its_first_and_newest_points() -> None:
    points = [curves.Point(float(i), float(i) / 100) for i in range(curves.MAX_POINTS + 500)]
    kept = curves.bounded(points)
    assert len(kept) <= curves.MAX_POINTS
    assert kept[0] == points[0]
    assert kept[-(curves.MAX_POINTS // 3) :] == points[-(curves.MAX_POINTS // 3) :]
    assert [p.time for p in kept] == sorted(p.time for p in kept)


def test_a_history_with_many_metrics_is_thinned_to_fit_a_configmap() -> None:
    metrics = {f"metric-{i}": float(i) for i in range(200)}
    points = [curves.Point(float(t), 1.0, 1.0, metrics) for t in range(600)]
    kept = curves.bounded(points)
    assert len(curves.encode(kept)) <= curves.MAX_BYTES < len(curves.encode(points))


def test_the_configmap_is_owned_by_the_job_and_labelled_with_its_name() -> None:
    job = trainjob(uid="u7")
    stored = curves.configmap(job, [curves.Point(1.0, 1.0)])
    meta = stored["metadata"]
    assert (meta["name"], meta["namespace"]) == ("t-training-curves", "ns")
    assert meta["labels"] == {curves.LABEL: "t"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "t",
            "uid": "u7",
        }
    ]
    assert curves.owned_by(stored, job)
    assert not curves.owned_by(stored, trainjob(uid="u8")), "an earlier job of the same name"


def test_series_are_columns_with_a_gap_where_a_metric_was_not_reported() -> None:
    points = [
        curves.Point(1.0, 10.0, 9.0, {"loss": 2.0}),
        curves.Point(2.0, 20.0, None, {"acc": 0.5}),
    ]
    assert curves.series(points) == {
        "time": [1.0, 2.0],
        "progress": [10.0, 20.0],
        "eta": [9.0, None],
        "metrics": {"loss": [2.0, None], "acc": [None, 0.5]},
    }
