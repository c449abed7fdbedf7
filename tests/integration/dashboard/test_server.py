"""The dashboard against a real API server: its streams carry every job and each change, its
token guards every request and stream, its actions act (and only from its own page), and a
TrainJob's reports become training curves kept in a ConfigMap that outlives the dashboard."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import kube
from kubetrain.cli import jobkinds
from kubetrain.dashboard import access, curves
from kubetrain.kube import resource
from tests import builders
from tests.apiserver.cascade import eventually, run
from tests.apiserver.test_pod_log_exec import FakeNode
from tests.fixtures import cluster
from tests.integration.dashboard.conftest import TOKEN, Dashboard, dashboard
from tests.integration.operator.trainjob_fixtures import builtin_runtime

PYTORCHJOBS = jobkinds.find("pytorchjob").resource
TRAINJOBS = jobkinds.TRAINJOB.resource
TRAINING_RUNTIMES = kube.Resource(
    jobkinds.TRAINER_GROUP, jobkinds.TRAINER_VERSION, "trainingruntimes", kind="TrainingRuntime"
)
OPERATOR = "pytorchjob-controller"


def pytorchjob(name: str, workers: int = 1) -> dict[str, Any]:
    """A job whose status and pods the test writes itself: it names another controller, so an
    operator running against the same server (the end-to-end tests' on the shared real one)
    leaves it alone."""
    container = {"name": "pytorch", "image": "example/train:1", "command": ["python", "t.py"]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "annotations": {"note": "<script>alert(1)</script>"}},
        "spec": {
            "runPolicy": {"managedBy": "kueue.x-k8s.io/multikueue"},
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": workers, "template": {"spec": {"containers": [container]}}}
            },
        },
    }


def trainjob(name: str) -> dict[str, Any]:
    return builders.trainjob(name, runtime_kind="TrainingRuntime", num_nodes=1)


async def with_runtime(client: kube.Client, namespace: str) -> None:
    """The built-in torch runtime, as a TrainingRuntime of the test's namespace."""
    doc = builtin_runtime("torch_distributed.yaml", "torch-distributed")
    doc["kind"] = "TrainingRuntime"
    await client.create(TRAINING_RUNTIMES, doc, namespace=namespace)


def report(progress: int, loss: float, when: str) -> dict[str, Any]:
    return {
        "status": {
            "trainerStatus": {
                "progressPercentage": progress,
                "estimatedRemainingSeconds": 100 - progress,
                "metrics": [{"name": "loss", "value": str(loss)}],
                "lastUpdatedTime": when,
            }
        }
    }


def condition(kind: str, status: str = "True", **more: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "lastTransitionTime": "2024-05-01T12:00:00Z", **more}


def test_every_request_and_stream_needs_the_token(kubeconfig: str, namespace: str) -> None:
    async def body() -> None:
        async with dashboard(kubeconfig, namespace) as dash:
            for path in ("/", "/static/app.js", "/api/stream/jobs", "/api/logs"):
                async with dash.http.get(dash.url + path) as refused:
                    assert refused.status == 403, path
                    assert "access token" in await refused.text()
            async with dash.http.get(dash.address("/")) as page:
                assert page.status == 200
                text = await page.text()
                assert f'<meta name="kubetrain-token" content="{TOKEN}">' in text
                assert page.headers["Referrer-Policy"] == "no-referrer"
            async with dash.http.get(dash.address("/static/app.js")) as script:
                assert script.status == 200
                assert len(await script.read()) > 10_000

    run(body())


def test_the_jobs_stream_sends_every_job_then_each_change(kubeconfig: str, namespace: str) -> None:
    async def body() -> None:
        async with dashboard(kubeconfig, namespace) as dash:
            await dash.client.create(PYTORCHJOBS, pytorchjob("first"), namespace=namespace)
            async with dash.stream("/api/stream/jobs") as events:
                snapshot = await events.until(lambda n, _: n == "snapshot", "a snapshot")
                names = [row["name"] for row in snapshot["rows"]]
                if "first" not in names:  # created a moment before the hub had listed it
                    await events.until(
                        lambda n, d: n == "change" and any(r["name"] == "first" for r in d["rows"]),
                        "the first job",
                    )
                await dash.client.create(PYTORCHJOBS, pytorchjob("second", 2), namespace=namespace)
                added = await events.until(
                    lambda n, d: n == "change" and any(r["name"] == "second" for r in d["rows"]),
                    "the second job",
                )
                [row] = [r for r in added["rows"] if r["name"] == "second"]
                assert (row["key"], row["state"], row["replicas"]) == (
                    f"{namespace}/PyTorchJob/second",
                    "Pending",
                    2,
                )
                await dash.client.patch(
                    PYTORCHJOBS,
                    "second",
                    {"status": {"conditions": [condition("Failed", reason="PyTorchJobFailed")]}},
                    namespace=namespace,
                    subresource="status",
                )
                await events.until(
                    lambda n, d: (
                        n == "change"
                        and any(r["name"] == "second" and r["state"] == "Failed" for r in d["rows"])
                    ),
                    "the second job failed",
                )
                await dash.client.delete(PYTORCHJOBS, "first", namespace=namespace)
                await events.until(
                    lambda n, d: n == "change" and f"{namespace}/PyTorchJob/first" in d["removed"],
                    "the first job gone",
                )

    run(body())


def test_actions_act_with_the_header_and_never_from_another_page(
    kubeconfig: str, namespace: str
) -> None:
    async def body() -> None:
        async with dashboard(kubeconfig, namespace) as dash:
            await dash.client.create(PYTORCHJOBS, pytorchjob("act"), namespace=namespace)
            delete = dash.address(f"/api/jobs/{namespace}/PyTorchJob/act/delete")
            async with dash.http.post(delete) as only_query:
                assert only_query.status == 403
            async with dash.http.post(
                delete, headers={access.TOKEN_HEADER: TOKEN, "Origin": "http://evil.example"}
            ) as foreign:
                assert foreign.status == 403
            await dash.client.get(PYTORCHJOBS, "act", namespace=namespace)  # still there

            status, answer = await dash.act(namespace, "PyTorchJob", "act", "suspend")
            assert (status, answer["message"]) == (
                200,
                f"pytorchjob/act in namespace {namespace} suspended",
            )

            async def suspended() -> bool:
                job = await dash.client.get(PYTORCHJOBS, "act", namespace=namespace)
                return job["spec"].get("runPolicy", {}).get("suspend") is True

            await eventually(suspended, "the job suspended")
            status, answer = await dash.act(namespace, "PyTorchJob", "act", "resume")
            assert status == 200
            assert not await suspended()
            status, answer = await dash.act(namespace, "PyTorchJob", "act", "delete")
            assert (status, answer["message"]) == (
                200,
                f"pytorchjob/act in namespace {namespace} deleted",
            )

            async def gone() -> bool:
                try:
                    await dash.client.get(PYTORCHJOBS, "act", namespace=namespace)
                except kube.NotFound:
                    return True
                return False

            await eventually(gone, "the job deleted")
            status, answer = await dash.act(namespace, "PyTorchJob", "act", "delete")
            assert (status, answer) == (404, {"error": f"no such job PyTorchJob {namespace}/act"})

    run(body())


def test_a_finished_job_is_not_suspended(kubeconfig: str, namespace: str) -> None:
    async def body() -> None:
        async with dashboard(kubeconfig, namespace) as dash:
            await dash.client.create(PYTORCHJOBS, pytorchjob("done"), namespace=namespace)
            await dash.client.patch(
                PYTORCHJOBS,
                "done",
                {"status": {"conditions": [condition("Succeeded")]}},
                namespace=namespace,
                subresource="status",
            )
            status, answer = await dash.act(namespace, "PyTorchJob", "done", "suspend")
            assert (status, answer["error"]) == (
                409,
                f"pytorchjob/done in namespace {namespace} has already finished; there is "
                "nothing to suspend",
            )

    run(body())


async def curves_stored(client: kube.Client, namespace: str, name: str) -> list[curves.Point]:
    try:
        found = await client.get(
            resource.CONFIGMAPS, curves.configmap_name(name), namespace=namespace
        )
    except kube.NotFound:
        return []
    return curves.decode(found)


def test_reports_become_curves_in_a_configmap_owned_by_the_job_that_outlive_the_dashboard(
    kubeconfig: str, namespace: str
) -> None:
    async def body() -> None:
        async with dashboard(kubeconfig, namespace) as dash:
            client = dash.client
            await with_runtime(client, namespace)
            job = await client.create(TRAINJOBS, trainjob("curvy"), namespace=namespace)
            for progress, loss, when in ((10, 2.5, "12:00:00"), (50, 0.75, "12:00:05")):
                await client.patch(
                    TRAINJOBS,
                    "curvy",
                    report(progress, loss, f"2024-05-01T{when}Z"),
                    namespace=namespace,
                    subresource="status",
                )

                async def recorded(progress: int = progress) -> bool:
                    stored = await curves_stored(client, namespace, "curvy")
                    return bool(stored) and stored[-1].progress == progress

                await eventually(recorded, f"the report at {progress}% stored")
            stored = await client.get(
                resource.CONFIGMAPS, "curvy-training-curves", namespace=namespace
            )
            [owner] = stored["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["uid"]) == ("TrainJob", job["metadata"]["uid"])
            # A report while no dashboard runs is the job's current one at the next start.
            await client.patch(
                TRAINJOBS,
                "curvy",
                report(90, 0.25, "2024-05-01T12:00:10Z"),
                namespace=namespace,
                subresource="status",
            )
        async with (
            dashboard(kubeconfig, namespace) as dash,
            dash.stream(
                "/api/stream/job", namespace=namespace, kind="TrainJob", name="curvy"
            ) as events,
        ):
            detail = await events.until(
                lambda n, d: n == "snapshot" and d["curves"] and len(d["curves"]["time"]) == 3,
                "three points",
            )
            assert detail["curves"]["progress"] == [10.0, 50.0, 90.0]
            assert detail["curves"]["metrics"] == {"loss": [2.5, 0.75, 0.25]}
            assert detail["curvesNote"] == ""

            async def three() -> bool:
                return len(await curves_stored(dash.client, namespace, "curvy")) == 3

            await eventually(three, "the third point stored too")

    run(body())


def test_a_configmap_of_that_name_that_is_not_the_dashboards_is_left_alone(
    kubeconfig: str, namespace: str
) -> None:
    async def body() -> None:
        async with dashboard(kubeconfig, namespace) as dash:
            theirs = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "mine-training-curves"},
                "data": {"owner": "someone"},
            }
            await dash.client.create(resource.CONFIGMAPS, theirs, namespace=namespace)
            await with_runtime(dash.client, namespace)
            await dash.client.create(TRAINJOBS, trainjob("mine"), namespace=namespace)
            await dash.client.patch(
                TRAINJOBS,
                "mine",
                report(30, 1.5, "2024-05-01T12:00:00Z"),
                namespace=namespace,
                subresource="status",
            )
            async with dash.stream(
                "/api/stream/job", namespace=namespace, kind="TrainJob", name="mine"
            ) as events:
                detail = await events.until(
                    lambda n, d: n == "snapshot" and d["curvesNote"], "a note on the curves"
                )
            assert detail["curvesNote"] == (
                f"not saved in the cluster: ConfigMap {namespace}/mine-training-curves exists "
                "and is not the dashboard's (it has no label "
                "kubetrain.io/training-curves-of=mine)"
            )
            assert detail["curves"]["progress"] == [30.0], "kept in memory all the same"
            kept = await dash.client.get(
                resource.CONFIGMAPS, "mine-training-curves", namespace=namespace
            )
            assert kept["data"] == {"owner": "someone"}

    run(body())


def running_pod(dash: Dashboard, namespace: str, job: str, index: int, node: str) -> Any:
    labels = {
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/operator-name": OPERATOR,
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": str(index),
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job}-worker-{index}", "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "pytorch", "image": "x"}]},
    }

    async def create() -> None:
        await dash.client.create(resource.PODS, pod, namespace=namespace)
        await dash.client.patch(
            resource.PODS,
            pod["metadata"]["name"],
            {"status": {"phase": "Running"}},
            namespace=namespace,
            subresource="status",
        )

    return create()


def test_logs_stream_each_replicas_lines_as_written_and_read_whole(
    kubeconfig: str, namespace: str, fake_node: FakeNode, node: str
) -> None:
    async def body() -> None:
        async with dashboard(kubeconfig, namespace) as dash:
            await dash.client.create(PYTORCHJOBS, pytorchjob("talk", 2), namespace=namespace)
            await running_pod(dash, namespace, "talk", 0, node)
            query = {"namespace": namespace, "kind": "PyTorchJob", "name": "talk"}
            async with dash.stream("/api/stream/logs", **query) as events:
                seen: list[list[str]] = []

                def has(*wanted: list[str]) -> Any:
                    def check(name: str, data: Any) -> bool:
                        if name == "lines":
                            seen.extend(data)
                        return all(w in seen for w in wanted)

                    return check

                await events.until(has(["worker-0", "pytorch line 3"]), "worker-0's first lines")
                await running_pod(dash, namespace, "talk", 1, node)  # a later pod joins
                await events.until(has(["worker-1", "pytorch line 3"]), "worker-1's lines")
                fake_node.release(namespace, "talk-worker-0")
                await events.until(has(["worker-0", "pytorch line 5"]), "the rest, as written")
                assert [t for r, t in seen if r == "worker-0"] == [
                    f"pytorch line {i}" for i in range(1, 6)
                ]
            fake_node.release(namespace, "talk-worker-1")
            async with dash.http.get(dash.address("/api/logs", **query)) as whole:
                text = await whole.json()
            assert text["lines"] == [
                *(["worker-0", f"pytorch line {i}"] for i in range(1, 6)),
                *(["worker-1", f"pytorch line {i}"] for i in range(1, 6)),
            ]
            async with dash.http.get(dash.address("/api/logs", download="1", **query)) as file:
                assert file.headers["Content-Disposition"] == 'attachment; filename="talk.log"'
                assert (await file.text()).splitlines()[0] == "[worker-0] pytorch line 1"

    asyncio.run(body(), debug=True)


def test_the_curves_go_with_their_trainjob(kubeconfig: str, namespace: str) -> None:
    """The garbage collector deletes the ConfigMap with the job that owns it."""

    async def body() -> None:
        async with dashboard(kubeconfig, namespace) as dash:
            client = dash.client
            await with_runtime(client, namespace)
            await client.create(TRAINJOBS, trainjob("brief"), namespace=namespace)
            await client.patch(
                TRAINJOBS,
                "brief",
                report(100, 0.1, "2024-05-01T12:00:00Z"),
                namespace=namespace,
                subresource="status",
            )

            async def stored() -> bool:
                return bool(await curves_stored(client, namespace, "brief"))

            await eventually(stored, "the curves stored")
            await client.delete(TRAINJOBS, "brief", namespace=namespace)

            async def gone() -> bool:
                try:
                    await client.get(
                        resource.CONFIGMAPS, "brief-training-curves", namespace=namespace
                    )
                except kube.NotFound:
                    return True
                return False

            await eventually(gone, "the curves deleted with the job", timeout=60)

    run(body())


ROLES = kube.Resource("rbac.authorization.k8s.io", "v1", "roles", kind="Role")
ROLE_BINDINGS = kube.Resource("rbac.authorization.k8s.io", "v1", "rolebindings", kind="RoleBinding")
SERVICE_ACCOUNTS = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")


async def viewer_token(client: kube.Client, namespace: str) -> str:
    """The token of a user who may read jobs, pods, events and ConfigMaps in ``namespace``
    (and write ConfigMaps there), and nothing else: a ServiceAccount's."""
    rbac = "rbac.authorization.k8s.io"
    rules = [
        {"apiGroups": ["kubeflow.org", "trainer.kubeflow.org"], "resources": ["*"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods", "pods/log", "events", "configmaps"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update"]},
    ]  # fmt: skip
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "viewer"}}
    await client.create(SERVICE_ACCOUNTS, account, namespace=namespace)
    role = {"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": {"name": "viewer"}}
    await client.create(ROLES, {**role, "rules": rules}, namespace=namespace)
    binding = {
        "apiVersion": f"{rbac}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "viewer"},
        "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "viewer"},
        "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": namespace}],
    }
    await client.create(ROLE_BINDINGS, binding, namespace=namespace)
    issued = await client.create(
        SERVICE_ACCOUNTS,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        namespace=namespace,
        name="viewer",
        subresource="token",
    )
    return str(issued["status"]["token"])


def kubeconfig_of(admin: str, token: str, path: Path) -> str:
    """``admin``'s kubeconfig with the user ``token`` instead."""
    config = yaml.safe_load(Path(admin).read_text())
    config["users"] = [{"name": "viewer", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "viewer"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_a_user_sees_only_what_they_may_and_cannot_act_beyond_it(
    kubeconfig: str, namespace: str, target: str, tmp_path: Path
) -> None:
    if target == cluster.LOCAL:
        pytest.skip("kube-apiserver only: the local control plane enforces no RBAC")

    async def scene() -> str:
        async with await kube.Client.from_kubeconfig(kubeconfig) as admin:
            await admin.create(PYTORCHJOBS, pytorchjob("seen"), namespace=namespace)
            return await viewer_token(admin, namespace)

    viewer = kubeconfig_of(kubeconfig, run(scene()), tmp_path / "viewer")

    async def body() -> None:
        async with (
            dashboard(viewer, namespace, everywhere=True, own=kubeconfig) as dash,
            dash.stream("/api/stream/jobs") as events,
        ):
            snapshot = await events.until(lambda n, _: n == "snapshot", "a snapshot")
            assert [row["key"] for row in snapshot["rows"]] == [f"{namespace}/PyTorchJob/seen"]
            assert f"pytorchjobs.kubeflow.org: only namespace {namespace} is shown: " in "\n".join(
                snapshot["notes"]
            )
            status, answer = await dash.act(namespace, "PyTorchJob", "seen", "delete")
            assert status == 403
            assert answer["error"].startswith(
                f"pytorchjob/seen in namespace {namespace}: not allowed: "
            )
            await dash.client.get(PYTORCHJOBS, "seen", namespace=namespace)  # still there

    run(body())
