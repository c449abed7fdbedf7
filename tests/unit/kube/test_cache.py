"""The shared store: what a list and watch events leave in it, the owner index, the order in
which handlers hear about changes, and the diff a re-list produces (client-go's DeltaFIFO
Replace: objects gone while the watch was down come out as DELETED)."""

from __future__ import annotations

from typing import Any

from kubetrain import kube
from kubetrain.kube import cache

PODS = kube.resource.PODS


def obj(
    name: str,
    rv: str = "1",
    *,
    namespace: str = "ns",
    owner: str | None = None,
    labels: dict[str, str] | None = None,
    controller: bool = True,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": rv}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "X", "name": owner, "uid": owner, "controller": controller}
        ]
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def recording(store: cache.Store) -> list[tuple[str, str, str | None]]:
    """(type, name, old resourceVersion) of every change the store reports."""
    seen: list[tuple[str, str, str | None]] = []

    def handler(type: str, o: dict[str, Any], old: dict[str, Any] | None) -> None:
        seen.append((type, o["metadata"]["name"], old and old["metadata"]["resourceVersion"]))

    store.subscribe(handler)
    return seen


def test_a_first_list_adds_everything_and_marks_the_store_synced() -> None:
    store = cache.Store(PODS)
    seen = recording(store)
    assert not store.synced.is_set()
    store.replace([obj("a"), obj("b", namespace="other")])
    assert store.synced.is_set()
    assert seen == [("ADDED", "a", None), ("ADDED", "b", None)]
    assert store.get("ns", "a") == obj("a")
    assert {o["metadata"]["name"] for o in store.list()} == {"a", "b"}
    assert [o["metadata"]["name"] for o in store.list("other")] == ["b"]
    assert len(store) == 2


def test_watch_events_add_modify_and_delete() -> None:
    store = cache.Store(PODS)
    seen = recording(store)
    store.replace([])
    store.apply("ADDED", obj("a", "2"))
    store.apply("MODIFIED", obj("a", "3"))
    store.apply("DELETED", obj("a", "4"))
    assert seen == [("ADDED", "a", None), ("MODIFIED", "a", "2"), ("DELETED", "a", "3")]
    assert store.get("ns", "a") is None
    assert store.list() == []


def test_a_relist_reports_only_what_changed_and_what_vanished() -> None:
    store = cache.Store(PODS)
    store.replace([obj("same", "1"), obj("changed", "1"), obj("gone", "1")])
    seen = recording(store)
    store.replace([obj("same", "1"), obj("changed", "5"), obj("new", "6")])
    assert sorted(seen) == [
        ("ADDED", "new", None),
        ("DELETED", "gone", "1"),
        ("MODIFIED", "changed", "1"),
    ]
    assert store.get("ns", "gone") is None


def test_owned_by_follows_controller_references_through_changes() -> None:
    store = cache.Store(PODS)
    store.replace([obj("a", owner="job1"), obj("b", owner="job1"), obj("c", owner="job2")])
    assert [o["metadata"]["name"] for o in store.owned_by("job1")] == ["a", "b"]
    store.apply("MODIFIED", obj("b", "2", owner="job2"))
    assert [o["metadata"]["name"] for o in store.owned_by("job1")] == ["a"]
    assert [o["metadata"]["name"] for o in store.owned_by("job2")] == ["b", "c"]
    store.apply("DELETED", obj("c", "3", owner="job2"))
    assert [o["metadata"]["name"] for o in store.owned_by("job2")] == ["b"]
    store.apply("MODIFIED", obj("a", "4"))
    assert store.owned_by("job1") == []


def test_an_owner_that_is_not_the_controller_is_not_indexed() -> None:
    store = cache.Store(PODS)
    store.replace([obj("a", owner="job1", controller=False)])
    assert store.owned_by("job1") == []


def test_list_filters_by_every_given_label() -> None:
    store = cache.Store(PODS)
    store.replace(
        [
            obj("a", labels={"job-name": "j", "replica-type": "worker"}),
            obj("b", labels={"job-name": "j", "replica-type": "master"}),
            obj("c", labels={"job-name": "k"}),
            obj("d"),
        ]
    )
    assert [o["metadata"]["name"] for o in store.list("ns", {"job-name": "j"})] == ["a", "b"]
    picked = store.list(labels={"job-name": "j", "replica-type": "master"})
    assert [o["metadata"]["name"] for o in picked] == ["b"]
    assert store.list("elsewhere", {"job-name": "j"}) == []


def test_subscribers_hear_of_a_change_before_keys_are_enqueued() -> None:
    store = cache.Store(PODS)
    order: list[str] = []
    store.add_enqueuer(lambda type, o, old: order.append("enqueue"))
    store.subscribe(lambda type, o, old: order.append("subscriber"))
    store.apply("ADDED", obj("a"))
    assert order == ["subscriber", "enqueue"]


def test_a_failing_handler_does_not_stop_the_others() -> None:
    store = cache.Store(PODS)
    heard: list[str] = []

    def broken(type: str, o: dict[str, Any], old: dict[str, Any] | None) -> None:
        raise RuntimeError("boom")

    store.subscribe(broken)
    store.add_enqueuer(lambda type, o, old: heard.append(o["metadata"]["name"]))
    store.apply("ADDED", obj("a"))
    assert heard == ["a"]
    assert store.get("ns", "a") is not None


def test_managed_fields_are_not_kept() -> None:
    store = cache.Store(PODS)
    given = obj("a")
    given["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    store.apply("ADDED", given)
    kept = store.get("ns", "a")
    assert kept is not None
    assert "managedFields" not in kept["metadata"]
    assert "managedFields" in given["metadata"], "the caller's object is left alone"


def test_a_deleted_event_for_an_object_never_seen_is_still_reported() -> None:
    store = cache.Store(PODS)
    seen = recording(store)
    store.apply("DELETED", obj("a"))
    assert seen == [("DELETED", "a", None)]
