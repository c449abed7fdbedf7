"""TrainJob updates: the CEL ``self == oldSelf`` rules and the suspend guard on patches.

Cases follow the "updates" entries of ``test/integration/webhooks/trainjob_test.go``. A CEL
transition rule is checked only when the field is set both before and after, as Kubernetes does.
kubetrain's one exception: an elastic torch TrainJob may be resized (``trainer.numNodes``).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from tests.unit.api.trainers import lookup, messages, pod_spec_patch, runtime, trainjob

PATCHES_SUSPENDED = (
    "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is "
    "suspended before or after the update"
)
GRACE = (
    "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
    ".template.spec.template.spec.terminationGracePeriodSeconds"
)


def with_patch(suspend: bool, grace: int = 30, manager: str = "acme.io/x") -> dict[str, Any]:
    return (
        trainjob("a")
        .spec(suspend=suspend)
        .patch(manager, pod_spec_patch("node", terminationGracePeriodSeconds=grace))
        .build()
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            trainjob("a").build(), trainjob("a").spec(suspend=True).build(), id="suspending"
        ),
        pytest.param(
            trainjob("a").build(),
            trainjob("a").trainer(numNodes=2).build(),
            id="adding a trainer that was not set",
        ),
        pytest.param(
            trainjob("a").spec(suspend=True).build(),
            with_patch(suspend=True),
            id="adding a patch while suspended",
        ),
        pytest.param(
            with_patch(suspend=False),
            trainjob("a").spec(suspend=True).patch("acme.io/y").build(),
            id="replacing patches while suspending in the same request",
        ),
        pytest.param(
            with_patch(suspend=True),
            trainjob("a").spec(suspend=False).build(),
            id="removing patches while resuming in the same request",
        ),
        pytest.param(
            with_patch(suspend=False),
            {
                **with_patch(suspend=False),
                "spec": {
                    **with_patch(suspend=False)["spec"],
                    "runtimePatches": [
                        {**with_patch(suspend=False)["spec"]["runtimePatches"][0], "time": "now"}
                    ],
                },
            },
            id="only the server's patch time changing",
        ),
        pytest.param(
            trainjob("a").spec(podTemplateOverrides=[{"targetJobs": [{"name": "node"}]}]).build(),
            trainjob("a")
            .spec(suspend=True, podTemplateOverrides=[{"targetJobs": [{"name": "launcher"}]}])
            .build(),
            id="changing a v2.1 override while suspended",
        ),
    ],
)
def test_an_allowed_update_is_accepted(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert messages(new, old) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            trainjob("a").build(),
            trainjob("a").spec(managedBy="kueue.x-k8s.io/multikueue").build(),
            'spec.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable',
            id="changing managedBy",
        ),
        pytest.param(
            trainjob("a").build(),
            trainjob("a", runtime_name="other").build(),
            'spec.runtimeRef: Invalid value: "object": field is immutable',
            id="changing runtimeRef",
        ),
        pytest.param(
            trainjob("a").initializer(dataset={"storageUri": "hf://a"}).build(),
            trainjob("a").initializer(dataset={"storageUri": "hf://b"}).build(),
            'spec.initializer: Invalid value: "object": field is immutable',
            id="changing the initializer",
        ),
        pytest.param(
            trainjob("a").trainer(numNodes=1).build(),
            trainjob("a").trainer(numNodes=2).build(),
            'spec.trainer: Invalid value: "object": field is immutable',
            id="changing the trainer",
        ),
        pytest.param(
            trainjob("a").spec(activeDeadlineSeconds=60).build(),
            trainjob("a").spec(activeDeadlineSeconds=120).build(),
            "spec.activeDeadlineSeconds: Invalid value: 120: field is immutable",
            id="changing the active deadline",
        ),
        pytest.param(
            trainjob("a").build(),
            with_patch(suspend=False),
            PATCHES_SUSPENDED,
            id="adding a patch to a running TrainJob",
        ),
        pytest.param(
            with_patch(suspend=False, grace=30),
            with_patch(suspend=False, grace=60),
            PATCHES_SUSPENDED,
            id="changing a patch of a running TrainJob",
        ),
        pytest.param(
            with_patch(suspend=True, grace=30),
            with_patch(suspend=True, grace=60),
            f"{GRACE}: Invalid value: 60: field is immutable",
            id="changing a patched grace period even while suspended",
        ),
        pytest.param(
            trainjob("a").spec(podTemplateOverrides=[{"targetJobs": [{"name": "node"}]}]).build(),
            trainjob("a").spec(podTemplateOverrides=[{"targetJobs": [{"name": "x"}]}]).build(),
            "spec.podTemplateOverrides: Forbidden: PodTemplateOverrides can only be modified "
            "when the TrainJob is suspended",
            id="changing a v2.1 override of a running TrainJob",
        ),
    ],
)
def test_a_forbidden_update_is_rejected(
    old: dict[str, Any], new: dict[str, Any], expected: str
) -> None:
    assert expected in messages(new, old)


def test_a_patch_by_a_new_manager_has_no_old_value_to_keep() -> None:
    old = with_patch(suspend=True, grace=30, manager="acme.io/x")
    new = with_patch(suspend=True, grace=60, manager="acme.io/y")
    assert messages(new, old) == []


# --- resizing an elastic TrainJob -----------------------------------------------------------

ELASTIC = (
    runtime("torch", name="elastic")
    .policy("torch", elasticPolicy={"minNodes": 2, "maxNodes": 4})
    .build()
)
STATIC = runtime("torch", name="static").build()
RUNTIMES = lookup(ELASTIC, STATIC)
TRAINER_IMMUTABLE = 'spec.trainer: Invalid value: "object": field is immutable'


def elastic(**trainer: Any) -> dict[str, Any]:
    return trainjob("a", runtime_name="elastic").trainer(**trainer).build()


RESIZES = [
    pytest.param(
        elastic(numNodes=2), elastic(numNodes=3), RUNTIMES, [],
        id="an elastic job may grow within minNodes..maxNodes",
    ),
    pytest.param(
        elastic(numNodes=3), elastic(numNodes=2), RUNTIMES, [],
        id="an elastic job may shrink to minNodes",
    ),
    pytest.param(
        elastic(numNodes=2), elastic(numNodes=2, image="other"), RUNTIMES, [TRAINER_IMMUTABLE],
        id="any other trainer field of an elastic job stays immutable",
    ),
    pytest.param(
        elastic(numNodes=2), elastic(numNodes=3, args=["x"]), RUNTIMES, [TRAINER_IMMUTABLE],
        id="a resize carrying another trainer change is refused as a whole",
    ),
    pytest.param(
        elastic(numNodes=2), elastic(numNodes=5), RUNTIMES,
        ["spec.trainer.numNodes: Invalid value: 5: must be within the runtime's torch "
         "elasticPolicy minNodes..maxNodes [2, 4]"],
        id="a resize beyond maxNodes is refused by the bounds, not as immutable",
    ),
    pytest.param(
        trainjob("a", runtime_name="static").trainer(numNodes=1).build(),
        trainjob("a", runtime_name="static").trainer(numNodes=2).build(),
        RUNTIMES, [TRAINER_IMMUTABLE],
        id="a job on a runtime without elasticPolicy keeps its size",
    ),
    pytest.param(
        elastic(numNodes=2), elastic(numNodes=3), None, [TRAINER_IMMUTABLE],
        id="without the runtime to look at, the size stays immutable",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "runtimes", "expected"), RESIZES)
def test_resizing(
    old: dict[str, Any],
    new: dict[str, Any],
    runtimes: api.RuntimeLookup | None,
    expected: list[str],
) -> None:
    assert messages(new, old, find_runtime=runtimes) == expected


def test_review_of_an_allowed_resize_returns_the_job_with_its_new_size() -> None:
    verdict = api.review(elastic(numNodes=3), elastic(numNodes=2), find_runtime=RUNTIMES)
    assert verdict.ok
    assert isinstance(verdict.obj, api.TrainJob)
    assert verdict.obj.spec is not None
    assert verdict.obj.spec.trainer is not None
    assert verdict.obj.spec.trainer.num_nodes == 3


def test_review_refuses_a_resize_of_a_static_job_naming_the_trainer() -> None:
    old = trainjob("a", runtime_name="static").trainer(numNodes=1).build()
    new = trainjob("a", runtime_name="static").trainer(numNodes=2).build()
    verdict = api.review(new, old, find_runtime=RUNTIMES)
    assert not verdict.ok
    assert [error.path for error in verdict.errors] == ["spec.trainer"]
