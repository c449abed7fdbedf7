"""Object basics, as kube-apiserver documents them: create, get, list, update, delete; the
server-set metadata (uid, creationTimestamp, resourceVersion, generation); generateName;
optimistic concurrency (409 on a stale resourceVersion); dryRun; error Status bodies."""

from __future__ import annotations

import json
import secrets

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException


def configmap(name: str, data: dict[str, str] | None = None, **meta: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **meta},
        "data": data if data is not None else {"k": "v"},
    }


def status_of(exc: ApiException) -> dict:
    return json.loads(exc.body)


SYSTEM_CONFIGMAPS = {"kube-root-ca.crt"}  # published in every namespace by the controller manager


def user_names(items: list) -> list[str]:
    return [i.metadata.name for i in items if i.metadata.name not in SYSTEM_CONFIGMAPS]


def test_create_sets_uid_creation_timestamp_and_resource_version(
    core: client.CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_config_map(namespace, configmap("a"))
    assert created.metadata.uid
    assert created.metadata.creation_timestamp is not None
    assert int(created.metadata.resource_version) > 0
    assert created.metadata.namespace == namespace
    fetched = core.read_namespaced_config_map("a", namespace)
    assert fetched.metadata.uid == created.metadata.uid
    assert fetched.metadata.resource_version == created.metadata.resource_version
    assert fetched.data == {"k": "v"}


def test_resource_versions_increase_across_objects_and_kinds(
    core: client.CoreV1Api, namespace: str
) -> None:
    first = core.create_namespaced_config_map(namespace, configmap("a"))
    secret = core.create_namespaced_secret(
        namespace, {"metadata": {"name": "s"}, "stringData": {"x": "y"}}
    )
    second = core.create_namespaced_config_map(namespace, configmap("b"))
    versions = [
        int(first.metadata.resource_version),
        int(secret.metadata.resource_version),
        int(second.metadata.resource_version),
    ]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3


def test_creating_an_existing_name_is_409_already_exists(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, configmap("dup"))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map(namespace, configmap("dup"))
    assert info.value.status == 409
    status = status_of(info.value)
    assert status["kind"] == "Status"
    assert status["status"] == "Failure"
    assert status["reason"] == "AlreadyExists"
    assert status["message"] == 'configmaps "dup" already exists'
    assert status["details"] == {"name": "dup", "kind": "configmaps"}
    assert status["code"] == 409


def test_reading_a_missing_object_is_404_not_found(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("nope", namespace)
    assert info.value.status == 404
    status = status_of(info.value)
    assert status["reason"] == "NotFound"
    assert status["message"] == 'configmaps "nope" not found'
    assert status["details"] == {"name": "nope", "kind": "configmaps"}


def test_creating_in_a_missing_namespace_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("kt-no-such-namespace", configmap("a"))
    assert info.value.status == 404
    assert status_of(info.value)["message"] == 'namespaces "kt-no-such-namespace" not found'


def test_update_with_a_stale_resource_version_is_409_conflict(
    core: client.CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_config_map(namespace, configmap("c"))
    fresh = core.read_namespaced_config_map("c", namespace)
    fresh.data = {"k": "first"}
    core.replace_namespaced_config_map("c", namespace, fresh)
    created.data = {"k": "second"}  # still carries the first resourceVersion
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("c", namespace, created)
    assert info.value.status == 409
    status = status_of(info.value)
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on configmaps "c": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert core.read_namespaced_config_map("c", namespace).data == {"k": "first"}


def test_update_changes_the_resource_version_and_keeps_uid_and_creation_time(
    core: client.CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_config_map(namespace, configmap("u"))
    created.data = {"k": "new"}
    updated = core.replace_namespaced_config_map("u", namespace, created)
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    assert updated.metadata.uid == created.metadata.uid
    assert updated.metadata.creation_timestamp == created.metadata.creation_timestamp
    assert updated.data == {"k": "new"}


def test_an_update_that_changes_nothing_keeps_the_resource_version(
    core: client.CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_config_map(namespace, configmap("same"))
    again = core.replace_namespaced_config_map("same", namespace, created)
    assert again.metadata.resource_version == created.metadata.resource_version


def test_an_update_without_resource_version_is_unconditional_for_configmaps(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, configmap("x"))
    body = configmap("x", {"k": "blind"})
    updated = core.replace_namespaced_config_map("x", namespace, body)
    assert updated.data == {"k": "blind"}


def test_update_of_a_missing_object_is_404(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("ghost", namespace, configmap("ghost"))
    assert info.value.status == 404


def test_the_name_in_the_body_must_match_the_url(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, configmap("one"))
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("one", namespace, configmap("two"))
    assert info.value.status == 400
    assert status_of(info.value)["reason"] == "BadRequest"


def test_generate_name_appends_a_random_five_character_suffix(
    core: client.CoreV1Api, namespace: str
) -> None:
    names = set()
    for _ in range(5):
        body = {"metadata": {"generateName": "gen-"}, "data": {}}
        created = core.create_namespaced_config_map(namespace, body)
        name = created.metadata.name
        assert name.startswith("gen-")
        assert len(name) == len("gen-") + 5
        assert created.metadata.generate_name == "gen-"
        names.add(name)
    assert len(names) == 5


def test_name_or_generate_name_is_required(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map(namespace, {"metadata": {}, "data": {}})
    assert info.value.status == 422
    status = status_of(info.value)
    assert status["reason"] == "Invalid"
    causes = status["details"]["causes"]
    assert {
        "reason": "FieldValueRequired",
        "message": ("Required value: name or generateName is required"),
        "field": "metadata.name",
    } in causes


def test_an_invalid_name_is_422_with_the_field_in_the_causes(
    core: client.CoreV1Api, namespace: str
) -> None:
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map(namespace, configmap("Not_Valid"))
    assert info.value.status == 422
    status = status_of(info.value)
    assert status["message"].startswith(
        'ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": '
        "a lowercase RFC 1123 subdomain must consist of"
    )
    assert status["details"]["kind"] == "ConfigMap"
    assert status["details"]["causes"][0]["field"] == "metadata.name"


def test_delete_returns_a_success_status_for_configmaps_and_then_it_is_gone(
    core: client.CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_config_map(namespace, configmap("d"))
    result = core.delete_namespaced_config_map("d", namespace)
    assert result["kind"] == "Status"
    assert result["status"] == "Success"
    assert result["details"]["name"] == "d"
    assert result["details"]["uid"] == created.metadata.uid
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("d", namespace)
    assert info.value.status == 404


def test_delete_of_a_missing_object_is_404(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as info:
        core.delete_namespaced_config_map("never", namespace)
    assert info.value.status == 404


def test_delete_with_a_stale_uid_precondition_is_409(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, configmap("p"))
    options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid"))
    with pytest.raises(ApiException) as info:
        core.delete_namespaced_config_map("p", namespace, body=options)
    assert info.value.status == 409
    core.read_namespaced_config_map("p", namespace)


def test_finalizers_keep_a_deleted_object_until_the_last_one_is_removed(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, configmap("fin", finalizers=["example.com/hold"]))
    core.delete_namespaced_config_map("fin", namespace)
    held = core.read_namespaced_config_map("fin", namespace)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["example.com/hold"]
    core.patch_namespaced_config_map("fin", namespace, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("fin", namespace)
    assert info.value.status == 404


def test_dry_run_create_validates_but_stores_nothing(
    core: client.CoreV1Api, namespace: str
) -> None:
    result = core.create_namespaced_config_map(namespace, configmap("dry"), dry_run="All")
    assert result.metadata.name == "dry"
    assert result.metadata.uid
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("dry", namespace)
    assert info.value.status == 404
    with pytest.raises(ApiException) as invalid:
        core.create_namespaced_config_map(namespace, configmap("Bad_Name"), dry_run="All")
    assert invalid.value.status == 422


def test_dry_run_update_and_delete_change_nothing(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, configmap("keep"))
    body = configmap("keep", {"k": "changed"})
    preview = core.replace_namespaced_config_map("keep", namespace, body, dry_run="All")
    assert preview.data == {"k": "changed"}
    core.delete_namespaced_config_map("keep", namespace, dry_run="All")
    stored = core.read_namespaced_config_map("keep", namespace)
    assert stored.data == {"k": "v"}
    assert stored.metadata.resource_version == created.metadata.resource_version


def test_list_returns_the_items_and_a_resource_version(
    core: client.CoreV1Api, namespace: str
) -> None:
    for name in ("b", "a", "c"):
        core.create_namespaced_config_map(namespace, configmap(name))
    listed = core.list_namespaced_config_map(namespace)
    assert user_names(listed.items) == ["a", "b", "c"]
    assert int(listed.metadata.resource_version) > 0


def test_list_with_a_label_selector(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, configmap("red", labels={"color": "red"}))
    core.create_namespaced_config_map(namespace, configmap("blue", labels={"color": "blue"}))
    core.create_namespaced_config_map(namespace, configmap("plain"))

    def names(selector: str) -> list[str]:
        listed = core.list_namespaced_config_map(namespace, label_selector=selector)
        return sorted(user_names(listed.items))

    assert names("color=red") == ["red"]
    assert names("color==red") == ["red"]
    assert names("color!=red") == ["blue", "plain"]
    assert names("color in (red,blue)") == ["blue", "red"]
    assert names("color notin (red)") == ["blue", "plain"]
    assert names("color") == ["blue", "red"]
    assert names("!color") == ["plain"]


def test_a_malformed_label_selector_is_400(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(namespace, label_selector="a in (b")
    assert info.value.status == 400
    assert status_of(info.value)["reason"] == "BadRequest"


def test_list_with_a_field_selector_on_name(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, configmap("one"))
    core.create_namespaced_config_map(namespace, configmap("two"))
    listed = core.list_namespaced_config_map(namespace, field_selector="metadata.name=two")
    assert [i.metadata.name for i in listed.items] == ["two"]
    listed = core.list_namespaced_config_map(namespace, field_selector="metadata.name!=two")
    assert user_names(listed.items) == ["one"]


def test_an_unsupported_field_selector_is_400(core: client.CoreV1Api, namespace: str) -> None:
    """Worded by the kind's field-label conversion: the default one (ConfigMaps) lists what
    it knows; a kind with its own (Pods) names the label alone."""
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(namespace, field_selector="data.k=v")
    assert info.value.status == 400
    assert status_of(info.value)["message"] == (
        '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    with pytest.raises(ApiException) as info:
        core.list_namespaced_pod(namespace, field_selector="spec.k=v")
    assert info.value.status == 400
    assert status_of(info.value)["message"] == "field label not supported: spec.k"


def test_cluster_scoped_kinds_take_a_namespace_field_selector_as_their_conversion_says(
    api_client: client.ApiClient,
) -> None:
    """The default conversion knows metadata.namespace even for a cluster-scoped kind (it is
    empty there); a kind with a conversion of its own, custom resources included, refuses it."""
    scheduling = client.SchedulingV1Api(api_client)
    name = f"kt-{secrets.token_hex(4)}"
    scheduling.create_priority_class({"metadata": {"name": name}, "value": 7})
    try:
        listed = scheduling.list_priority_class(field_selector="metadata.namespace=")
        assert name in {c.metadata.name for c in listed.items}
        assert scheduling.list_priority_class(field_selector="metadata.namespace=x").items == []
    finally:
        scheduling.delete_priority_class(name)
    with pytest.raises(ApiException) as info:
        client.CoreV1Api(api_client).list_node(field_selector="metadata.namespace=x")
    assert info.value.status == 400
    assert status_of(info.value)["message"] == "field label not supported: metadata.namespace"
    with pytest.raises(ApiException) as info:
        client.CustomObjectsApi(api_client).list_cluster_custom_object(
            "trainer.kubeflow.org",
            "v1alpha1",
            "clustertrainingruntimes",
            field_selector="metadata.namespace=x",
        )
    assert info.value.status == 400
    assert status_of(info.value)["message"] == "field label not supported: metadata.namespace"


def test_pods_support_the_field_selectors_controllers_use(
    core: client.CoreV1Api, namespace: str
) -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    core.create_namespaced_pod(namespace, pod)
    for selector in ("spec.nodeName=", "status.phase=Pending", "metadata.namespace=" + namespace):
        listed = core.list_namespaced_pod(namespace, field_selector=selector)
        assert [i.metadata.name for i in listed.items] == ["p"], selector
    listed = core.list_namespaced_pod(namespace, field_selector="status.phase=Running")
    assert listed.items == []


def secret(name: str) -> dict:
    return {"metadata": {"name": name}, "stringData": {"k": "v"}}


def test_pagination_with_limit_and_continue(core: client.CoreV1Api, namespace: str) -> None:
    for i in range(7):
        core.create_namespaced_secret(namespace, secret(f"page-{i}"))
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        listed = core.list_namespaced_secret(namespace, limit=3, _continue=token)
        pages += 1
        seen += [i.metadata.name for i in listed.items]
        token = listed.metadata._continue
        if not token:
            break
        assert listed.metadata.remaining_item_count == 7 - len(seen)
    assert pages == 3
    assert seen == [f"page-{i}" for i in range(7)]


def test_continued_pages_show_the_list_as_of_the_first_page(
    core: client.CoreV1Api, namespace: str
) -> None:
    for name in ("a", "b", "c"):
        core.create_namespaced_secret(namespace, secret(name))
    first = core.list_namespaced_secret(namespace, limit=1)
    core.create_namespaced_secret(namespace, secret("d"))
    core.delete_namespaced_secret("c", namespace)
    rest = core.list_namespaced_secret(namespace, limit=10, _continue=first.metadata._continue)
    assert [i.metadata.name for i in rest.items] == ["b", "c"]
    assert rest.metadata.resource_version == first.metadata.resource_version


def test_a_malformed_continue_token_is_400(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(namespace, limit=1, _continue="not-a-token")
    assert info.value.status == 400


def test_list_across_namespaces(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, configmap("everywhere"))
    listed = core.list_config_map_for_all_namespaces(field_selector="metadata.name=everywhere")
    assert [(i.metadata.namespace, i.metadata.name) for i in listed.items] == [
        (namespace, "everywhere")
    ]


def test_deletecollection_deletes_what_matches_and_answers_the_list_of_it(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, configmap("a", labels={"x": "1"}))
    core.create_namespaced_config_map(namespace, configmap("b", labels={"x": "1"}))
    core.create_namespaced_config_map(namespace, configmap("c", labels={"x": "2"}))
    # held by a finalizer: marked deleted, not gone, and listed as it now is
    core.create_namespaced_config_map(
        namespace, configmap("d", labels={"x": "1"}, finalizers=["example.com/hold"])
    )
    response = core.delete_collection_namespaced_config_map(
        namespace, label_selector="x=1", _preload_content=False
    )
    answer = json.loads(response.data)
    assert answer["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in answer["items"]] == ["a", "b", "d"]
    assert all(i["data"] == {"k": "v"} for i in answer["items"])
    left = core.list_namespaced_config_map(namespace).items
    assert user_names(left) == ["c", "d"]
    held = core.read_namespaced_config_map("d", namespace)
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("d", namespace, {"metadata": {"finalizers": None}})
