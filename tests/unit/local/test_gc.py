"""The garbage collector's bookkeeping, without a server: which uids a change in the graph puts
in question (kube's processGraphChanges), and the retry delays of its work queue."""

from __future__ import annotations

from typing import Any

from kubetrain import kube
from kubetrain.local import gc

CM = kube.resource.CONFIGMAPS


def node(
    uid: str,
    *owners: tuple[str, bool],
    name: str | None = None,
    namespace: str = "ns",
    finalizers: tuple[str, ...] = (),
    deleting: bool = False,
) -> gc.Node:
    """A node; each owner is (uid, blockOwnerDeletion), its name the uid."""
    meta: dict[str, Any] = {"uid": uid, "name": name or uid, "namespace": namespace}
    if owners:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": o, "uid": o, "blockOwnerDeletion": b}
            for o, b in owners
        ]
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    made = gc.Node.of(CM, {"metadata": meta})
    assert made is not None
    return made


def test_a_dependent_of_a_seen_live_owner_needs_no_look() -> None:
    graph = gc.Graph()
    graph.upsert(node("o"))
    assert graph.upsert(node("d", ("o", False))) == set()
    assert graph.dependents == {"o": {"d"}}


def test_a_dependent_of_an_unseen_owner_is_looked_at() -> None:
    graph = gc.Graph()
    assert graph.upsert(node("d", ("o", False))) == {"d"}


def test_a_reference_whose_name_differs_from_the_seen_owner_is_looked_at() -> None:
    graph = gc.Graph()
    graph.upsert(node("o", name="real-name"))
    assert graph.upsert(node("d", ("o", False))) == {"d"}


def test_a_reference_to_an_owner_in_another_namespace_is_looked_at() -> None:
    graph = gc.Graph()
    graph.upsert(node("o", namespace="elsewhere"))
    assert graph.upsert(node("d", ("o", False))) == {"d"}


def test_removing_an_owner_puts_its_dependents_in_question() -> None:
    graph = gc.Graph()
    graph.upsert(node("o"))
    graph.upsert(node("d1", ("o", False)))
    graph.upsert(node("d2", ("o", True)))
    assert graph.remove("o") == {"d1", "d2"}
    assert "o" not in graph.nodes


def test_an_owner_entering_foreground_deletion_brings_itself_and_all_dependents() -> None:
    graph = gc.Graph()
    graph.upsert(node("o"))
    graph.upsert(node("d1", ("o", False)))
    graph.upsert(node("d2", ("o", True)))
    deleting = node("o", finalizers=(gc.FOREGROUND,), deleting=True)
    assert graph.upsert(deleting) == {"o", "d1", "d2"}
    assert graph.upsert(deleting) == set(), "an unchanged node brings nothing"


def test_a_change_to_a_dependent_of_a_waiting_owner_brings_the_owner() -> None:
    graph = gc.Graph()
    graph.upsert(node("o", finalizers=(gc.FOREGROUND,), deleting=True))
    graph.upsert(node("d", ("o", True)))
    assert "o" in graph.upsert(node("d", ("o", False)))  # no longer blocking
    assert graph.remove("d") == {"o"}


def test_an_orphaning_owner_brings_itself() -> None:
    graph = gc.Graph()
    graph.upsert(node("o"))
    assert graph.upsert(node("o", finalizers=(gc.ORPHAN,), deleting=True)) == {"o"}


def test_dropping_a_reference_updates_the_dependents_index() -> None:
    graph = gc.Graph()
    graph.upsert(node("a"))
    graph.upsert(node("b"))
    graph.upsert(node("d", ("a", False), ("b", False)))
    graph.upsert(node("d", ("b", False)))
    assert [n.uid for n in graph.dependents_of("a")] == []
    assert [n.uid for n in graph.dependents_of("b")] == ["d"]


def test_malformed_owner_references_are_ignored() -> None:
    made = gc.Node.of(
        CM,
        {"metadata": {"uid": "d", "name": "d", "ownerReferences": [{"uid": "x"}, "junk", None]}},
    )
    assert made is not None
    assert made.owners == ()
    assert gc.Node.of(CM, {"metadata": {"name": "no-uid"}}) is None


def test_the_work_queue_retries_a_failing_uid_after_the_collectors_own_delays() -> None:
    """The shared work queue (its promises are tests/unit/kube/test_workqueue.py's), with
    the collector's per-uid back-off and no overall bucket: a hundred failing uids all come
    back after the first delay."""
    queue = gc.work_queue(gc.Settings(retry_initial=0.01, retry_max=0.03))
    assert [queue.add_rate_limited("a") for _ in range(4)] == [0.01, 0.02, 0.03, 0.03]
    assert {queue.add_rate_limited(str(n)) for n in range(100)} == {0.01}
    queue.forget("a")
    assert queue.add_rate_limited("a") == 0.01


def test_patches_touch_only_the_references_named() -> None:
    meta = {
        "ownerReferences": [
            {"uid": "a", "name": "a"},
            {"uid": "b", "name": "b", "blockOwnerDeletion": True},
        ]
    }
    assert gc._without_owners(meta, {"a"}) == {
        "ownerReferences": [{"uid": "b", "name": "b", "blockOwnerDeletion": True}]
    }
    assert gc._without_owners(meta, {"a", "b"}) == {"ownerReferences": None}
    assert gc._without_owners(meta, {"z"}) is None
    assert gc._unblocked(meta) == {
        "ownerReferences": [
            {"uid": "a", "name": "a"},
            {"uid": "b", "name": "b", "blockOwnerDeletion": False},
        ]
    }
