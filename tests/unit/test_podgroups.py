"""Which PodGroup a pod names, in both gang-scheduling dialects, and a job's PodGroup name."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import podgroups


def pod(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Any:
    return {"metadata": {"labels": labels or {}, "annotations": annotations or {}}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            pod({podgroups.COSCHEDULING_LABEL: "a"}),
            (podgroups.COSCHEDULING, "a"),
            id="the coscheduling label names a scheduler-plugins PodGroup",
        ),
        pytest.param(
            pod(annotations={"scheduling.k8s.io/group-name": "b"}),
            ("scheduling.volcano.sh/v1beta1", "b"),
            id="Volcano's annotation names a Volcano PodGroup",
        ),
        pytest.param(
            pod(annotations={"scheduling.volcano.sh/group-name": "c"}),
            (podgroups.VOLCANO, "c"),
            id="so does Volcano's older annotation",
        ),
        pytest.param(
            pod({podgroups.COSCHEDULING_LABEL: "a"}, {podgroups.VOLCANO_ANNOTATION: "b"}),
            ("scheduling.x-k8s.io/v1alpha1", "a"),
            id="with both, the coscheduling label wins",
        ),
        pytest.param(
            pod({podgroups.COSCHEDULING_LABEL: ""}, {podgroups.VOLCANO_ANNOTATION: 3}),
            None,
            id="empty or non-string names name nothing",
        ),
        pytest.param({"metadata": None}, None, id="a pod without metadata belongs to none"),
    ],
)
def test_member_of(obj: Any, expected: tuple[str, str] | None) -> None:
    assert podgroups.member_of(obj) == expected


def test_a_jobs_pod_group_is_named_like_the_job() -> None:
    assert podgroups.name_for("train-1") == "train-1"
