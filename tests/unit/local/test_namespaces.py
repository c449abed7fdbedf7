"""What the namespace controller reports while a namespace terminates: kube's four deletion
conditions (NamespaceDeletionDiscoveryFailure, NamespaceDeletionContentFailure,
NamespaceContentRemaining, NamespaceFinalizersRemaining) with kube's reasons, written only when
they change."""

from __future__ import annotations

import collections

from kubetrain.local import namespaces

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:00:05Z"


def by_type(conditions: list[dict]) -> dict[str, dict]:
    return {c["type"]: c for c in conditions}


def test_a_clean_sweep_reports_every_condition_false() -> None:
    conditions = namespaces.deletion_conditions([], namespaces.Sweep(), T0)
    assert conditions is not None
    assert [c["type"] for c in conditions] == [
        "NamespaceDeletionDiscoveryFailure",
        "NamespaceDeletionContentFailure",
        "NamespaceContentRemaining",
        "NamespaceFinalizersRemaining",
    ]
    assert {c["status"] for c in conditions} == {"False"}
    assert by_type(conditions)["NamespaceContentRemaining"]["reason"] == "ContentRemoved"


def test_remaining_content_and_its_finalizers_are_named() -> None:
    sweep = namespaces.Sweep(
        remaining=collections.Counter({"configmaps": 2, "pods": 1}),
        finalizers=collections.Counter({"example.com/hold": 2}),
    )
    conditions = by_type(namespaces.deletion_conditions([], sweep, T0) or [])
    remaining = conditions["NamespaceContentRemaining"]
    assert remaining["status"] == "True"
    assert remaining["reason"] == "SomeResourcesRemain"
    assert remaining["message"] == (
        "Some resources are remaining: configmaps has 2 resource instances, "
        "pods has 1 resource instances"
    )
    held = conditions["NamespaceFinalizersRemaining"]
    assert held["reason"] == "SomeFinalizersRemain"
    assert held["message"] == (
        "Some content in the namespace has finalizers remaining: "
        "example.com/hold in 2 resource instances"
    )


def test_failures_of_discovery_and_deletion_are_reported() -> None:
    sweep = namespaces.Sweep(
        discovery_failed=["metrics.k8s.io/v1beta1"], delete_failed=["pods: forbidden"]
    )
    conditions = by_type(namespaces.deletion_conditions([], sweep, T0) or [])
    assert conditions["NamespaceDeletionDiscoveryFailure"]["reason"] == "DiscoveryFailed"
    assert "metrics.k8s.io/v1beta1" in conditions["NamespaceDeletionDiscoveryFailure"]["message"]
    assert conditions["NamespaceDeletionContentFailure"]["reason"] == "ContentDeletionFailed"
    assert not sweep.clean


def test_unchanged_conditions_are_not_written_again() -> None:
    first = namespaces.deletion_conditions([], namespaces.Sweep(), T0)
    assert first is not None
    assert namespaces.deletion_conditions(first, namespaces.Sweep(), T1) is None


def test_the_transition_time_moves_only_with_the_status() -> None:
    sweep = namespaces.Sweep(remaining=collections.Counter({"configmaps": 2}))
    first = namespaces.deletion_conditions([], sweep, T0) or []
    fewer = namespaces.Sweep(remaining=collections.Counter({"configmaps": 1}))
    second = by_type(namespaces.deletion_conditions(first, fewer, T1) or [])
    assert second["NamespaceContentRemaining"]["lastTransitionTime"] == T0  # still True
    third = by_type(
        namespaces.deletion_conditions(list(second.values()), namespaces.Sweep(), T1) or []
    )
    assert third["NamespaceContentRemaining"]["status"] == "False"
    assert third["NamespaceContentRemaining"]["lastTransitionTime"] == T1


def test_other_conditions_are_kept() -> None:
    other = {"type": "SomethingElse", "status": "True", "reason": "Because"}
    conditions = namespaces.deletion_conditions([other], namespaces.Sweep(), T0) or []
    assert conditions[-1] == other
