"""``runtimePatches[].time``, stamped by the API server as upstream's TrainJob defaulter
(``pkg/webhooks/trainjob_webhook.go``) does: admission given the server's time sets it on
create and moves it only for the patches that changed; without a time nothing is stamped."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from tests.unit.api.trainers import pod_spec_patch, trainjob

EARLIER, NOW = "2030-01-01T00:00:00Z", "2030-01-02T00:00:00Z"


def job(*patches: tuple[str, dict[str, Any], str | None]) -> dict[str, Any]:
    """A suspended TrainJob with patches (manager, node selector, time)."""
    builder = trainjob("a").spec(suspend=True)
    for manager, selector, _ in patches:
        builder.patch(manager, pod_spec_patch("node", nodeSelector=selector))
    doc = builder.build()
    for entry, (_, _, time) in zip(doc["spec"].get("runtimePatches") or [], patches, strict=True):
        if time is not None:
            entry["time"] = time
    return doc


def times(doc: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, str | None]:
    verdict = api.review(doc, old, now=NOW)
    assert verdict.ok, verdict.messages()
    assert verdict.obj is not None
    patches = verdict.obj.to_dict()["spec"].get("runtimePatches") or []
    return {p["manager"]: p.get("time") for p in patches}


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        pytest.param(
            job(("acme.io/a", {"a": "1"}, None)),
            None,
            {"acme.io/a": NOW},
            id="create: a patch without a time gets the server's",
        ),
        pytest.param(
            job(("acme.io/a", {"a": "1"}, EARLIER)),
            None,
            {"acme.io/a": EARLIER},
            id="create: a time the client set is kept",
        ),
        pytest.param(
            job(("acme.io/a", {"a": "1"}, None), ("acme.io/b", {"b": "2"}, None)),
            job(("acme.io/a", {"a": "1"}, EARLIER), ("acme.io/b", {"b": "1"}, EARLIER)),
            {"acme.io/a": EARLIER, "acme.io/b": NOW},
            id="update: an unchanged patch keeps its time, a changed one moves",
        ),
        pytest.param(
            job(("acme.io/a", {"a": "1"}, "2099-01-01T00:00:00Z")),
            job(("acme.io/a", {"a": "1"}, EARLIER)),
            {"acme.io/a": EARLIER},
            id="update: a client cannot move the time of a patch it did not change",
        ),
        pytest.param(
            job(("acme.io/a", {"a": "1"}, None), ("acme.io/new", {"n": "1"}, None)),
            job(("acme.io/a", {"a": "1"}, EARLIER)),
            {"acme.io/a": EARLIER, "acme.io/new": NOW},
            id="update: a new manager's patch is stamped",
        ),
    ],
)
def test_patch_times(
    new: dict[str, Any], old: dict[str, Any] | None, expected: dict[str, str | None]
) -> None:
    assert times(new, old) == expected


def test_without_the_server_s_time_nothing_is_stamped() -> None:
    verdict = api.review(job(("acme.io/a", {"a": "1"}, None)))
    assert verdict.obj is not None
    assert "time" not in verdict.obj.to_dict()["spec"]["runtimePatches"][0]


def test_a_refused_trainjob_is_not_stamped() -> None:
    doc = job(("acme.io/a", {"a": "1"}, None))
    doc["spec"]["trainer"] = {"numNodes": -1}
    verdict = api.review(doc, now=NOW)
    assert not verdict.ok
    assert verdict.obj is None
