"""``rbac.authorization.k8s.io/v1`` objects as kube-apiserver stores them ("Using RBAC
Authorization"): Roles, ClusterRoles and their bindings are created, read, listed and
deleted like any object; bindings get their API-group defaults; kube's validation refuses
malformed rules, role references and subjects, and a binding's ``roleRef`` never changes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.fixtures.cluster import Kubectl

GROUP = "rbac.authorization.k8s.io"


def status_of(exc: ApiException) -> dict[str, Any]:
    return dict(json.loads(exc.body))


def causes_of(exc: ApiException) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in status_of(exc)["details"]["causes"]]


@pytest.fixture
def rbac(api_client: client.ApiClient) -> client.RbacAuthorizationV1Api:
    return client.RbacAuthorizationV1Api(api_client)


def role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Role",
        "metadata": {"name": name},
        "rules": list(rules),
    }


def binding(name: str, ref: dict[str, Any], *subjects: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name},
        "roleRef": ref,
        "subjects": list(subjects),
    }


READ_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}


def test_a_role_and_its_binding_are_stored_with_defaults(
    rbac: client.RbacAuthorizationV1Api, api_client: client.ApiClient, namespace: str
) -> None:
    exec_ = {
        "apiGroups": [""],
        "resources": ["pods/exec"],
        "resourceNames": ["w-0"],
        "verbs": ["create"],
    }
    rbac.create_namespaced_role(namespace, role("launcher", READ_PODS, exec_))
    stored = api_client.sanitize_for_serialization(rbac.read_namespaced_role("launcher", namespace))
    assert stored["rules"] == [READ_PODS, exec_]

    made = rbac.create_namespaced_role_binding(
        namespace,
        binding(
            "launcher",
            {"kind": "Role", "name": "launcher"},  # apiGroup defaulted
            {"kind": "ServiceAccount", "name": "default", "namespace": namespace},
            {"kind": "User", "name": "alice"},  # apiGroup defaulted for users and groups
        ),
    )
    doc = api_client.sanitize_for_serialization(made)
    assert doc["roleRef"] == {"apiGroup": GROUP, "kind": "Role", "name": "launcher"}
    assert doc["subjects"] == [
        {"kind": "ServiceAccount", "name": "default", "namespace": namespace},
        {"kind": "User", "name": "alice", "apiGroup": GROUP},
    ]
    names = [b.metadata.name for b in rbac.list_namespaced_role_binding(namespace).items]
    assert names == ["launcher"]
    rbac.delete_namespaced_role("launcher", namespace)
    with pytest.raises(ApiException) as info:
        rbac.read_namespaced_role("launcher", namespace)
    assert info.value.status == 404
    assert status_of(info.value)["message"] == f'roles.{GROUP} "launcher" not found'


def test_malformed_rules_are_refused_with_every_cause(
    rbac: client.RbacAuthorizationV1Api, namespace: str
) -> None:
    bad = role(
        "bad",
        {"apiGroups": [""], "resources": ["pods"], "verbs": []},  # no verbs
        {"verbs": ["get"], "resources": ["pods"]},  # no api group
        {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},  # not in a namespaced role
    )
    with pytest.raises(ApiException) as info:
        rbac.create_namespaced_role(namespace, bad)
    assert info.value.status == 422
    assert causes_of(info.value) == [
        ("rules[0].verbs", "Required value: verbs must contain at least one value"),
        ("rules[1].apiGroups", "Required value: resource rules must supply at least one api group"),
        (
            "rules[2].nonResourceURLs",
            'Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource '
            "URLs",
        ),
    ]


def test_a_bindings_role_reference_and_subjects_are_checked(
    rbac: client.RbacAuthorizationV1Api, namespace: str
) -> None:
    with pytest.raises(ApiException) as info:
        rbac.create_namespaced_role_binding(
            namespace,
            binding("b", {"kind": "Deployment", "name": "r"}, {"kind": "Robot", "name": "x"}),
        )
    assert info.value.status == 422
    assert causes_of(info.value) == [
        (
            "roleRef.kind",
            'Unsupported value: "Deployment": supported values: "Role", "ClusterRole"',
        ),
        (
            "subjects[0].kind",
            'Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
        ),
    ]


def test_a_cluster_role_binding_names_the_namespace_of_a_service_account(
    rbac: client.RbacAuthorizationV1Api,
) -> None:
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "kt-test-needs-namespace"},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "default"}],
    }
    with pytest.raises(ApiException) as info:
        rbac.create_cluster_role_binding(body)
    assert info.value.status == 422
    assert causes_of(info.value) == [("subjects[0].namespace", "Required value")]


def test_a_bindings_role_reference_cannot_change(
    rbac: client.RbacAuthorizationV1Api, namespace: str
) -> None:
    made = rbac.create_namespaced_role_binding(
        namespace, binding("b", {"apiGroup": GROUP, "kind": "Role", "name": "first"})
    )
    made.role_ref.name = "second"
    with pytest.raises(ApiException) as info:
        rbac.replace_namespaced_role_binding("b", namespace, made)
    assert info.value.status == 422
    assert causes_of(info.value) == [
        (
            "roleRef",
            'Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", '
            'Name:"second"}: cannot change roleRef',
        )
    ]


def test_kubectl_creates_and_lists_roles_and_bindings(kubectl: Kubectl, namespace: str) -> None:
    ns = ("-n", namespace)
    kubectl("create", *ns, "role", "reader", "--verb=get,list", "--resource=pods")
    kubectl("create", *ns, "serviceaccount", "robot")
    kubectl(
        "create",
        *ns,
        "rolebinding",
        "reader",
        "--role=reader",
        f"--serviceaccount={namespace}:robot",
    )
    roles = kubectl("get", *ns, "roles", "-o", "name").stdout.split()
    assert roles == [f"role.{GROUP}/reader"]
    wide = kubectl("get", *ns, "rolebinding", "reader", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    cells = wide[1].split()
    assert cells[:2] == ["reader", "Role/reader"]
    assert cells[-1] == f"{namespace}/robot"
    shown = json.loads(kubectl("get", *ns, "role", "reader", "-o", "json").stdout)
    assert shown["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
