"""``kubectl kustomize deploy/`` renders the whole install (CRDs and operator), every object is
one the API server would accept as written, and the pieces agree with each other: names,
namespaces, the image, and what is left to a second step (the runtimes)."""

from __future__ import annotations

from typing import Any

import pytest

import kubetrain
from kubetrain import api
from tests.unit.deploy.manifests import DEPLOY, OPERATOR, load, one, problems, render

NAMESPACE = "kubeflow"
IMAGE = "ghcr.io/kubetrain/kubetrain"


def everything() -> list[dict[str, Any]]:
    return render(DEPLOY)


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def test_deploy_renders_the_crds_and_the_operator_and_nothing_else() -> None:
    rendered = sorted(key(o) for o in everything())
    expected = sorted(
        [key(o) for o in render(DEPLOY / "crds")] + [key(o) for o in render(OPERATOR)]
    )
    assert rendered == expected
    assert len(set(rendered)) == len(rendered), "an object is listed twice"


def test_every_crd_file_is_installed() -> None:
    files = {load(path)["metadata"]["name"] for path in (DEPLOY / "crds").glob("*_*.yaml")}
    installed = {
        o["metadata"]["name"] for o in everything() if o["kind"] == "CustomResourceDefinition"
    }
    assert files
    assert installed == files


def test_the_operator_renders_every_object_an_install_needs() -> None:
    kinds = sorted(o["kind"] for o in render(OPERATOR))
    assert kinds == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            "Service",
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        ]
    )


@pytest.mark.parametrize("where", ["deploy", "deploy/runtimes"])
def test_every_rendered_object_is_valid_as_written(where: str) -> None:
    objects = everything() if where == "deploy" else render(DEPLOY / "runtimes")
    found = {}
    for obj in objects:
        if obj["apiVersion"].split("/")[0].endswith("kubeflow.org"):
            verdict = api.review(obj)
            wrong = [] if verdict.ok else list(verdict.messages())
        else:
            wrong = problems(obj)
        if wrong:
            found["/".join(key(obj))] = wrong
    assert objects
    assert found == {}


def test_the_schema_check_rejects_a_misspelt_field() -> None:
    deployment = one(render(OPERATOR), "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    typo = {**deployment}
    typo["spec"] = {
        **deployment["spec"],
        "template": {
            **deployment["spec"]["template"],
            "spec": {
                **deployment["spec"]["template"]["spec"],
                "containers": [{**container, "readinessprobe": container["readinessProbe"]}],
            },
        },
    }
    assert problems(deployment) == []
    assert problems(typo) != []


def test_namespaced_objects_live_in_kubeflow_and_cluster_objects_in_none() -> None:
    cluster_scoped = {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    }
    for obj in everything():
        namespace = obj["metadata"].get("namespace")
        if obj["kind"] in cluster_scoped:
            assert namespace is None, key(obj)
        else:
            assert namespace == NAMESPACE, key(obj)
    assert one(everything(), "Namespace")["metadata"]["name"] == NAMESPACE


def test_the_bindings_give_the_roles_to_the_operators_service_account() -> None:
    objects = everything()
    account = one(objects, "ServiceAccount")
    deployment = one(objects, "Deployment")
    assert (
        deployment["spec"]["template"]["spec"]["serviceAccountName"]
        == (account["metadata"]["name"])
    )
    subject = {
        "kind": "ServiceAccount",
        "name": account["metadata"]["name"],
        "namespace": account["metadata"]["namespace"],
    }
    bound = []
    for kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        for binding in (o for o in objects if o["kind"] == kind):
            assert binding["subjects"] == [subject]
            role = one(objects, role_kind, binding["roleRef"]["name"])
            assert binding["roleRef"]["kind"] == role_kind
            assert role["metadata"].get("namespace") == binding["metadata"].get("namespace")
            bound.append((role_kind, role["metadata"]["name"]))
    roles = [(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"].endswith("Role")]
    assert sorted(bound) == sorted(roles), "a role bound to nobody, or bound twice"


def test_the_metrics_service_selects_the_operator_pods() -> None:
    objects = everything()
    service = one(objects, "Service")
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    selector = service["spec"]["selector"]
    assert selector
    assert selector.items() <= pod_labels.items()
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_the_image_is_named_once_and_tagged_with_the_package_version() -> None:
    kustomization = load(OPERATOR / "kustomization.yaml")
    (image,) = kustomization["images"]
    written = load(OPERATOR / "deployment.yaml")
    (container,) = written["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image["name"]
    assert image["newTag"] == kubetrain.__version__
    (rendered,) = one(everything(), "Deployment")["spec"]["template"]["spec"]["containers"]
    assert rendered["image"] == f"{IMAGE}:{kubetrain.__version__}"


def test_the_runtimes_are_a_separate_step_after_their_crd() -> None:
    """kubectl cannot create objects of a kind whose CRD it creates in the same apply, so
    deploy/ installs CRDs and operator, and deploy/runtimes comes after."""
    crds = {
        (o["spec"]["group"], o["spec"]["names"]["kind"])
        for o in everything()
        if o["kind"] == "CustomResourceDefinition"
    }
    kinds_in_install = {(o["apiVersion"].rpartition("/")[0], o["kind"]) for o in everything()}
    assert not crds & kinds_in_install, "deploy/ holds objects of a CRD it installs"
    runtimes = render(DEPLOY / "runtimes")
    assert runtimes
    for runtime in runtimes:
        assert (runtime["apiVersion"].rpartition("/")[0], runtime["kind"]) in crds
