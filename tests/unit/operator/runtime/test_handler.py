"""Owner mapping (controller-runtime's EnqueueRequestForObject and EnqueueRequestForOwner
with OnlyControllerOwner): a Pod, Service or PodGroup event reconciles the job that controls
it; nothing else does."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import kube
from kubetrain.operator.runtime import handler
from kubetrain.operator.runtime.controller import Key

PYTORCHJOBS = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")
CLUSTER_OWNERS = kube.Resource("example.com", "v1", "widgets", namespaced=False, kind="Widget")


def ref(
    name: str = "job",
    kind: str = "PyTorchJob",
    api_version: str = "kubeflow.org/v1",
    controller: bool | None = True,
) -> dict[str, Any]:
    made: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u1"}
    if controller is not None:
        made["controller"] = controller
    return made


def pod(*refs: dict[str, Any], namespace: str | None = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "job-worker-0", "ownerReferences": list(refs)}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


OWNER_CASES = [
    pytest.param(pod(ref()), PYTORCHJOBS, Key("ns", "job"), id="a pod its job controls"),
    pytest.param(
        pod(ref(controller=False)), PYTORCHJOBS, None, id="an owner that is not the controller"
    ),
    pytest.param(pod(ref(controller=None)), PYTORCHJOBS, None, id="controller left unset"),
    pytest.param(pod(), PYTORCHJOBS, None, id="no ownerReferences at all"),
    pytest.param(pod(ref(kind="TFJob")), PYTORCHJOBS, None, id="controlled by another kind"),
    pytest.param(
        pod(ref(api_version="other.org/v1")),
        PYTORCHJOBS,
        None,
        id="the same kind name in another API group",
    ),
    pytest.param(
        pod(ref(api_version="kubeflow.org/v2")),
        PYTORCHJOBS,
        Key("ns", "job"),
        id="another version of the same group is the same object",
    ),
    pytest.param(
        pod(ref(controller=False, name="other"), ref(name="boss")),
        PYTORCHJOBS,
        Key("ns", "boss"),
        id="only the controller reference counts among several",
    ),
    pytest.param(
        pod(ref(kind="Widget", api_version="example.com/v1", name="w")),
        CLUSTER_OWNERS,
        Key("", "w"),
        id="a cluster-scoped owner has no namespace in its key",
    ),
    pytest.param(
        pod(ref(), namespace=None),
        PYTORCHJOBS,
        None,
        id="a namespaced owner cannot control a cluster-scoped object",
    ),
]


@pytest.mark.parametrize(("obj", "owner", "expected"), OWNER_CASES)
def test_owner_key(obj: dict[str, Any], owner: kube.Resource, expected: Key | None) -> None:
    assert handler.owner_key(obj, owner) == expected


def test_an_update_that_changes_the_controller_reconciles_both_owners() -> None:
    old, new = pod(ref(name="a")), pod(ref(name="b"))
    assert handler.owner_keys(new, old, PYTORCHJOBS) == {Key("ns", "a"), Key("ns", "b")}


def test_an_update_with_the_same_controller_reconciles_it_once() -> None:
    assert handler.owner_keys(pod(ref()), pod(ref()), PYTORCHJOBS) == {Key("ns", "job")}


def test_an_object_that_lost_its_controller_still_reconciles_the_former_one() -> None:
    assert handler.owner_keys(pod(), pod(ref()), PYTORCHJOBS) == {Key("ns", "job")}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(pod(), Key("ns", "job-worker-0"), id="a namespaced object"),
        pytest.param(pod(namespace=None), Key("", "job-worker-0"), id="a cluster-scoped object"),
        pytest.param({"metadata": {}}, None, id="an object without a name"),
    ],
)
def test_own_key(obj: dict[str, Any], expected: Key | None) -> None:
    assert handler.own_key(obj) == expected


def test_keys_sort_and_print_as_namespace_slash_name() -> None:
    assert sorted([Key("b", "a"), Key("a", "z"), Key("a", "b")]) == [
        Key("a", "b"),
        Key("a", "z"),
        Key("b", "a"),
    ]
    assert str(Key("ns", "job")) == "ns/job"
    assert str(Key("", "node")) == "node"
