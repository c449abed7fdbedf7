"""Trainer v2 admission through the API (reference §5.2, ``test/integration/webhooks/
trainjob_test.go`` and ``trainingruntime_webhook_test.go``): each upstream webhook scenario is a
create or an update sent to the API server, answered 201 or 422 with upstream's message, and
the defaults read back from what was stored. The same rules are pinned as pure tables in
tests/unit/api; these show that the API server applies them, with the runtimes it stores.

kubetrain's admission runs inside its local API server (a cluster has no kubetrain webhook:
there the CRD schema alone applies), so these tests skip against another API server.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kubetrain import kube
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import run
from tests.integration.operator.trainjob_fixtures import cluster_runtime
from tests.unit.api.trainers import (
    initializer_job,
    pod_spec_patch,
    replicated_job,
    runtime,
    trainer_job,
    trainjob,
)

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("KUBETRAIN_TEST_KUBECONFIG")),
    reason="kubetrain's Trainer v2 admission runs in its local API server only",
)

NAME_FORMAT = "metadata.name must match RFC 1035 DNS label format"
SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
MANAGED_BY = (
    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
)
STORAGE_URI = "storageUri may be empty, or it must be a valid URI (scheme://...)"
NPROC = "numProcPerNode must be greater than or equal to 1"
MAX_ITEM = 1048576
LONG_AGO = "2000-01-01T00:00:00Z"
PATCHED_POD = (
    "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
    ".template.spec.template.spec"
)
PATCHES_SUSPENDED = (
    "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is "
    "suspended before or after the update"
)

# The runtimes the cases refer to, by key; each test stores them under names of its own.
RUNTIMES: dict[str, Callable[[str], dict[str, Any]]] = {
    "torch": lambda name: runtime("torch", name=name).build(),
    "initializers": lambda name: (
        runtime("torch", name=name)
        .jobs(
            initializer_job("dataset-initializer"),
            initializer_job("model-initializer"),
            trainer_job(),
        )
        .build()
    ),
    "flux": lambda name: (
        runtime("flux", name=name)
        .jobs(
            replicated_job(
                "node",
                ancestor="trainer",
                init_containers=[{"name": "flux-installer", "image": "ubuntu:22.04"}],
            )
        )
        .build()
    ),
}

Job = Callable[[str], dict[str, Any]]  # the runtime's stored name -> a TrainJob


@dataclass(frozen=True)
class Case:
    runtime: str  # a key of RUNTIMES
    job: Job
    refused: str | None = None  # None: created; else text the 422 message holds


def on(name: str = "job", **fields: Any) -> Job:
    """A TrainJob ``name`` on the case's runtime with ``trainer`` fields."""

    def make(runtime_name: str) -> dict[str, Any]:
        builder = trainjob(name, runtime_name=runtime_name)
        return builder.trainer(**fields).build() if fields else builder.build()

    return make


def with_spec(**spec: Any) -> Job:
    return lambda runtime_name: trainjob("job", runtime_name=runtime_name).spec(**spec).build()


def with_initializer(**sources: Any) -> Job:
    return lambda runtime_name: (
        trainjob("job", runtime_name=runtime_name).initializer(**sources).build()
    )


def with_patch(manager: str, *jobs: dict[str, Any]) -> Job:
    return lambda runtime_name: (
        trainjob("job", runtime_name=runtime_name).patch(manager, *jobs).build()
    )


def placed(doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    doc["metadata"]["namespace"] = namespace
    return doc


@contextlib.asynccontextmanager
async def stored_runtime(client: kube.Client, key: str, namespace: str) -> AsyncIterator[str]:
    """The ClusterTrainingRuntime ``key`` under a name of this test's; yields the name."""
    name = f"{key}-{namespace}"
    async with cluster_runtime(client, RUNTIMES[key](name)):
        yield name


async def create(client: kube.Client, doc: dict[str, Any], namespace: str) -> str | None:
    """None when the TrainJob is created, else the 422 message."""
    try:
        await client.create(kinds.TRAINJOBS, placed(doc, namespace), namespace=namespace)
    except kube.Invalid as exc:
        return exc.message
    return None


CREATES = [
    pytest.param(Case("torch", on(numNodes=0)), id="zero numNodes is created"),
    pytest.param(
        Case(
            "torch",
            on(numNodes=-1),
            "spec.trainer.numNodes: Invalid value: -1: spec.trainer.numNodes in body should be "
            "greater than or equal to 0",
        ),
        id="negative numNodes is refused (in the schema's words, as kube-apiserver says it)",
    ),
    pytest.param(
        Case(
            "torch",
            on(numProcPerNode=-1),
            f"spec.trainer.numProcPerNode: Invalid value: -1: {NPROC}",
        ),
        id="negative numProcPerNode is refused",
    ),
    pytest.param(
        Case(
            "torch", on(numProcPerNode=0), f"spec.trainer.numProcPerNode: Invalid value: 0: {NPROC}"
        ),
        id="zero numProcPerNode is refused",
    ),
    pytest.param(Case("torch", on(numProcPerNode=2)), id="positive numProcPerNode is created"),
    pytest.param(
        Case(
            "torch",
            with_initializer(model={"storageUri": "hf://org/model"}),
            "must have model-initializer job when trainJob is configured with input modelConfig",
        ),
        id="a model initializer against a runtime without one is refused",
    ),
    pytest.param(
        Case(
            "torch",
            with_initializer(dataset={"storageUri": "hf://org/data"}),
            "must have dataset-initializer job when trainJob is configured with input "
            "datasetConfig",
        ),
        id="a dataset initializer against a runtime without one is refused",
    ),
    pytest.param(
        Case("initializers", with_initializer(dataset={"storageUri": "hf://org/data"})),
        id="a dataset initializer against a ClusterTrainingRuntime with one is created",
    ),
    pytest.param(
        Case(
            "torch",
            on(
                image="example/train:2",
                command=["torchrun"],
                args=["train.py"],
                numNodes=2,
                resourcesPerNode={"requests": {"cpu": "1"}},
            ),
        ),
        id="a valid torch trainer is created",
    ),
    pytest.param(
        Case(
            "torch",
            on(env=[{"name": "PET_NNODES", "value": "2"}, {"name": "OK", "value": "1"}]),
            "must not have reserved envs, invalid envs configured: [PET_NNODES]",
        ),
        id="reserved torch env names are refused",
    ),
    pytest.param(
        Case(
            "flux", on(numProcPerNode=0), f"spec.trainer.numProcPerNode: Invalid value: 0: {NPROC}"
        ),
        id="a Flux TrainJob with numProcPerNode below 1 is refused",
    ),
    pytest.param(
        Case(
            "flux",
            on(),
            'spec.trainer.initContainers: Invalid value: "flux-installer": '
            "InitContainer 'flux-installer' is reserved",
        ),
        id="a Flux runtime with its own flux-installer init container is refused",
    ),
    *(
        pytest.param(
            Case(
                "initializers",
                with_initializer(**{kind: {"storageUri": uri}}),
                None
                if ok
                else f'spec.initializer.{kind}.storageUri: Invalid value: "{uri}": {STORAGE_URI}',
            ),
            id=f"a {kind} storageUri {what}",
        )
        for kind in ("dataset", "model")
        for uri, ok, what in (
            ("invalid-uri", False, "without a scheme is refused"),
            ("", True, "that is empty is created"),
            ("s3://", False, "missing its path is refused"),
            ("hf://org/name", True, "that is valid is created"),
        )
    ),
    pytest.param(
        Case("torch", on(command=["c" * MAX_ITEM])),
        id="a command item of exactly the max length is created",
    ),
    pytest.param(
        Case("torch", on(args=["a" * MAX_ITEM])),
        id="an args item of exactly the max length is created",
    ),
    pytest.param(
        Case(
            "torch",
            on(command=["c" * (MAX_ITEM + 1)]),
            f"spec.trainer.command[0]: Too long: may not be longer than {MAX_ITEM}",
        ),
        id="a command item over the max length is refused",
    ),
    pytest.param(
        Case(
            "torch",
            on(args=["ok", "a" * (MAX_ITEM + 1)]),
            f"spec.trainer.args[1]: Too long: may not be longer than {MAX_ITEM}",
        ),
        id="an args item over the max length is refused",
    ),
    pytest.param(Case("torch", on("valid-job-name")), id="an RFC 1035 name is created"),
    pytest.param(Case("torch", on("a" * 63)), id="a name of exactly 63 characters is created"),
    # a name that is no DNS-1123 subdomain is refused by the server's metadata check first, in
    # kube-apiserver's words; one that is, but no RFC 1035 label, by the CRD's rule
    *(
        pytest.param(
            Case("torch", on(name), f'metadata.name: Invalid value: "{name}": {problem}'),
            id=f"a name {what} is refused",
        )
        for name, what, problem in (
            ("Invalid-job-name", "with uppercase letters", SUBDOMAIN),
            ("1jobname", "starting with a digit", NAME_FORMAT),
            ("jobname-", "ending with a hyphen", SUBDOMAIN),
        )
    ),
    pytest.param(
        Case(
            "torch",
            on("a" * 64),
            f'metadata.name: Invalid value: "{"a" * 64}": '
            "metadata.name must be no more than 63 characters",
        ),
        id="a name over 63 characters is refused",
    ),
    *(
        pytest.param(Case("torch", with_spec(managedBy=value)), id=f"managedBy {value} is created")
        for value in ("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")
    ),
    pytest.param(
        Case(
            "torch",
            with_spec(managedBy="example.com/other"),
            f'spec.managedBy: Invalid value: "example.com/other": {MANAGED_BY}',
        ),
        id="an unknown managedBy is refused",
    ),
    pytest.param(
        Case(
            "initializers",
            with_patch(
                "acme.io/tool",
                pod_spec_patch("node", terminationGracePeriodSeconds=30),
                pod_spec_patch("dataset-initializer", nodeSelector={"disk": "ssd"}),
            ),
        ),
        id="runtimePatches of two replicated jobs are created",
    ),
    pytest.param(
        Case("torch", with_patch("kueue.k8s.io/manager")), id="a valid patch manager is created"
    ),
    pytest.param(
        Case(
            "torch",
            with_patch("kueue.k8s.io/"),
            'spec.runtimePatches[0].manager: Invalid value: "kueue.k8s.io/": '
            'must be a domain-prefixed path (such as "acme.io/foo")',
        ),
        id="a patch manager without a path is refused",
    ),
    pytest.param(
        Case(
            "torch",
            with_patch("acme.io/x", pod_spec_patch("node", terminationGracePeriodSeconds=0)),
        ),
        id="a zero grace period in a patch is created",
    ),
    pytest.param(
        Case(
            "torch",
            with_patch("acme.io/x", pod_spec_patch("node", terminationGracePeriodSeconds=-1)),
            f"{PATCHED_POD}.terminationGracePeriodSeconds: Invalid value: -1: "
            f"{PATCHED_POD}.terminationGracePeriodSeconds in body should be greater than or "
            "equal to 0",
        ),
        id="a negative grace period in a patch is refused",
    ),
]


@pytest.mark.parametrize("case", CREATES)
def test_a_trainjob_create_is_admitted_or_refused_by_the_api_server(
    kubeconfig: str, namespace: str, case: Case
) -> None:
    async def body() -> str | None:
        async with (
            await kube.Client.from_kubeconfig(kubeconfig) as client,
            stored_runtime(client, case.runtime, namespace) as runtime_name,
        ):
            return await create(client, case.job(runtime_name), namespace)

    refused = run(body())
    if case.refused is None:
        assert refused is None
    else:
        assert refused is not None, "created, but should have been refused"
        assert case.refused in refused


def test_a_namespaced_runtime_serves_only_its_own_namespace(
    kubeconfig: str, namespace: str
) -> None:
    """Upstream: "create OK with namespaced runtime" and "fail when runtime not in namespace"."""

    async def body() -> tuple[str | None, str | None]:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            here = runtime("torch", name="local", kind="TrainingRuntime", namespace=namespace)
            await client.create(kinds.TRAINING_RUNTIMES, here.build(), namespace=namespace)
            elsewhere = runtime(
                "torch", name=f"theirs-{namespace}", kind="TrainingRuntime", namespace="default"
            )
            await client.create(kinds.TRAINING_RUNTIMES, elsewhere.build(), namespace="default")
            try:
                ok = await create(
                    client,
                    trainjob("job", runtime_name="local", kind="TrainingRuntime").build(),
                    namespace,
                )
                other = await create(
                    client,
                    trainjob(
                        "other", runtime_name=f"theirs-{namespace}", kind="TrainingRuntime"
                    ).build(),
                    namespace,
                )
            finally:
                await client.delete(
                    kinds.TRAINING_RUNTIMES, f"theirs-{namespace}", namespace="default"
                )
            return ok, other

    ok, other = run(body())
    assert ok is None
    assert other is not None
    assert (
        f'trainingruntimes.trainer.kubeflow.org "theirs-{namespace}" not found: '
        "specified trainingRuntime must be created before the TrainJob is created"
    ) in other


def test_the_api_server_stores_upstream_s_defaults(kubeconfig: str, namespace: str) -> None:
    """Upstream: defaults suspend=false, managedBy, runtimeRef.apiGroup and runtimeRef.kind."""

    async def body() -> dict[str, Any]:
        async with (
            await kube.Client.from_kubeconfig(kubeconfig) as client,
            stored_runtime(client, "torch", namespace) as runtime_name,
        ):
            doc = placed(trainjob("job", runtime_name=runtime_name).build(), namespace)
            return await client.create(kinds.TRAINJOBS, doc, namespace=namespace)

    stored = run(body())
    assert stored["spec"]["suspend"] is False
    assert stored["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    assert stored["spec"]["runtimeRef"] == {
        "name": f"torch-{namespace}",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }


def test_runtime_patch_times_are_stamped_and_move_only_for_the_patch_that_changed(
    kubeconfig: str, namespace: str
) -> None:
    """Upstream: "RuntimePatch.Time defaulting" (webhooks) and "RuntimePatches preserve manager
    + Time updates only for the changed patch" (e2e)."""

    async def body() -> tuple[dict[str, Any], dict[str, Any]]:
        async with (
            await kube.Client.from_kubeconfig(kubeconfig) as client,
            stored_runtime(client, "torch", namespace) as runtime_name,
        ):
            doc = (
                trainjob("job", runtime_name=runtime_name)
                .spec(suspend=True)
                .patch("acme.io/a", pod_spec_patch("node", nodeSelector={"a": "1"}))
                .patch("acme.io/b", pod_spec_patch("node", nodeSelector={"b": "1"}))
                .build()
            )
            created = await client.create(
                kinds.TRAINJOBS, placed(doc, namespace), namespace=namespace
            )
            changed = copy.deepcopy(created)
            patches = changed["spec"]["runtimePatches"]
            patches[1]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"][
                "spec"
            ]["template"]["spec"]["nodeSelector"] = {"b": "2"}
            for patch in patches:
                patch["time"] = LONG_AGO  # what a client says is not what the server keeps
            updated = await client.replace(kinds.TRAINJOBS, changed, namespace=namespace)
            return created, updated

    created, updated = run(body())
    before = {p["manager"]: p for p in created["spec"]["runtimePatches"]}
    after = {p["manager"]: p for p in updated["spec"]["runtimePatches"]}
    assert list(after) == ["acme.io/a", "acme.io/b"], "managers kept, in order"
    assert before["acme.io/a"].get("time"), "stamped on create"
    assert before["acme.io/b"].get("time"), "stamped on create"
    assert after["acme.io/a"]["time"] == before["acme.io/a"]["time"], "unchanged: kept"
    assert after["acme.io/b"]["time"] != LONG_AGO, "changed: the server's time"
    assert after["acme.io/b"]["time"] >= before["acme.io/b"]["time"]


@dataclass(frozen=True)
class Update:
    before: Job
    after: Job
    refused: str | None = None


def suspended_with_grace(grace: int, suspend: bool = True) -> Job:
    return lambda runtime_name: (
        trainjob("job", runtime_name=runtime_name)
        .spec(suspend=suspend)
        .patch("acme.io/x", pod_spec_patch("node", terminationGracePeriodSeconds=grace))
        .build()
    )


UPDATES = [
    pytest.param(
        Update(
            with_spec(),
            with_spec(managedBy="kueue.x-k8s.io/multikueue"),
            'spec.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable',
        ),
        id="managedBy is immutable",
    ),
    pytest.param(
        Update(
            with_initializer(dataset={"storageUri": "hf://a/x"}),
            with_initializer(dataset={"storageUri": "hf://b/x"}),
            'spec.initializer: Invalid value: "object": field is immutable',
        ),
        id="the initializer is immutable",
    ),
    pytest.param(
        Update(
            on(numNodes=1),
            on(numNodes=2),
            'spec.trainer: Invalid value: "object": field is immutable',
        ),
        id="the trainer is immutable",
    ),
    pytest.param(
        Update(with_spec(suspend=True), suspended_with_grace(30)),
        id="runtimePatches may be added while suspended",
    ),
    pytest.param(
        Update(with_spec(), suspended_with_grace(30, suspend=False), PATCHES_SUSPENDED),
        id="runtimePatches of a running TrainJob may not change",
    ),
    pytest.param(
        Update(
            suspended_with_grace(30),
            suspended_with_grace(60),
            f"{PATCHED_POD}.terminationGracePeriodSeconds: Invalid value: 60: field is immutable",
        ),
        id="a patched terminationGracePeriodSeconds is immutable",
    ),
]


@pytest.mark.parametrize("case", UPDATES)
def test_a_trainjob_update_is_admitted_or_refused_by_the_api_server(
    kubeconfig: str, namespace: str, case: Update
) -> None:
    async def body() -> str | None:
        async with (
            await kube.Client.from_kubeconfig(kubeconfig) as client,
            stored_runtime(client, "initializers", namespace) as runtime_name,
        ):
            assert await create(client, case.before(runtime_name), namespace) is None
            stored = await client.get(kinds.TRAINJOBS, "job", namespace=namespace)
            changed = placed(case.after(runtime_name), namespace)
            changed["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
            try:
                await client.replace(kinds.TRAINJOBS, changed, namespace=namespace)
            except kube.Invalid as exc:
                return exc.message
            return None

    refused = run(body())
    if case.refused is None:
        assert refused is None
    else:
        assert refused is not None, "updated, but should have been refused"
        assert case.refused in refused


def test_the_runtime_ref_is_immutable(kubeconfig: str, namespace: str) -> None:
    async def body() -> str:
        async with (
            await kube.Client.from_kubeconfig(kubeconfig) as client,
            stored_runtime(client, "torch", namespace) as first,
            stored_runtime(client, "initializers", namespace) as second,
        ):
            assert await create(client, on()(first), namespace) is None
            with pytest.raises(kube.Invalid) as caught:
                await client.patch(
                    kinds.TRAINJOBS,
                    "job",
                    {"spec": {"runtimeRef": {"name": second}}},
                    namespace=namespace,
                )
            return caught.value.message

    assert 'spec.runtimeRef: Invalid value: "object": field is immutable' in run(body())


# --- TrainingRuntime / ClusterTrainingRuntime (trainingruntime_webhook_test.go) -------------

ONE_POLICY = "Only one of the policy can be configured"


@pytest.mark.parametrize(
    ("policies", "shown"),
    [
        pytest.param(("mpi", "torch"), '["torch", "mpi"]', id="MPI and Torch are refused"),
        pytest.param(("jax", "torch"), '["torch", "jax"]', id="JAX and Torch are refused"),
        pytest.param(("torch", "flux"), '["torch", "flux"]', id="Torch and Flux are refused"),
        pytest.param(("mpi", "flux"), '["mpi", "flux"]', id="MPI and Flux are refused"),
        pytest.param(("jax", "flux"), '["jax", "flux"]', id="JAX and Flux are refused"),
        pytest.param(("jax", "mpi"), '["mpi", "jax"]', id="JAX and MPI are refused"),
        pytest.param(
            ("torch", "mpi", "jax", "flux"),
            '["torch", "mpi", "jax", "flux"]',
            id="all four are refused",
        ),
    ],
)
def test_a_runtime_with_two_ml_policies_is_refused_by_the_api_server(
    kubeconfig: str, namespace: str, policies: tuple[str, ...], shown: str
) -> None:
    builder = runtime(policies[0], name="two", kind="TrainingRuntime", namespace=namespace)
    for name in policies[1:]:
        builder.policy(name)

    async def body() -> str:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            with pytest.raises(kube.Invalid) as caught:
                await client.create(kinds.TRAINING_RUNTIMES, builder.build(), namespace=namespace)
            return caught.value.message

    assert f"spec.mlPolicy: Invalid value: {shown}: {ONE_POLICY}" in run(body())


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        pytest.param(
            {"mpiImplementation": "Intel"},
            'spec.mlPolicy.mpi.mpiImplementation: Unsupported value: "Intel": '
            'MPI implementation for Intel doesn\'t supported; supported values: "OpenMPI"',
            id="an MPI implementation other than OpenMPI is refused",
        ),
        pytest.param(
            {"numProcPerNode": 0},
            "spec.mlPolicy.mpi.numProcPerNode: Invalid value: 0: "
            "NumProcPerNode in mpiPolicy must be >= 1",
            id="an MPI numProcPerNode below 1 is refused",
        ),
    ],
)
def test_an_invalid_mpi_runtime_is_refused_by_the_api_server(
    kubeconfig: str, namespace: str, fields: dict[str, Any], refused: str
) -> None:
    doc = runtime("mpi", name="mpi", kind="TrainingRuntime", namespace=namespace)
    doc = doc.policy("mpi", **fields)

    async def body() -> str:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            with pytest.raises(kube.Invalid) as caught:
                await client.create(kinds.TRAINING_RUNTIMES, doc.build(), namespace=namespace)
            return caught.value.message

    assert refused in run(body())


def test_a_runtime_is_created_with_upstream_s_mpi_defaults(kubeconfig: str, namespace: str) -> None:
    doc = runtime("mpi", name="mpi", kind="TrainingRuntime", namespace=namespace).build()

    async def body() -> dict[str, Any]:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            return await client.create(kinds.TRAINING_RUNTIMES, doc, namespace=namespace)

    stored = run(body())
    assert stored["spec"]["mlPolicy"] == {
        "numNodes": 1,
        "mpi": {
            "numProcPerNode": 1,
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": "/root/.ssh",
            "runLauncherAsNode": False,
        },
    }


def test_a_volcano_runtime_s_priority_class_must_exist_in_the_api_server(
    kubeconfig: str, namespace: str
) -> None:
    """Upstream's Volcano plugin refuses a TrainJob whose pod templates name a PriorityClass
    that does not exist; once it is created, the same TrainJob is admitted."""
    priority_classes = kube.Resource(
        "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass"
    )
    klass = f"kt-{namespace}"

    async def body() -> tuple[str | None, str | None]:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            doc = runtime("torch", name=f"volcano-{namespace}").pod_group_policy(volcano={})
            built = doc.build()
            for rjob in built["spec"]["template"]["spec"]["replicatedJobs"]:
                rjob["template"]["spec"]["template"]["spec"]["priorityClassName"] = klass
            async with cluster_runtime(client, built):
                job = trainjob("missing", runtime_name=f"volcano-{namespace}")
                refused = await create(client, job.build(), namespace)
                await client.create(
                    priority_classes,
                    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                     "metadata": {"name": klass}, "value": 1000},
                )  # fmt: skip
                try:
                    job = trainjob("exists", runtime_name=f"volcano-{namespace}")
                    admitted = await create(client, job.build(), namespace)
                finally:
                    await client.delete(priority_classes, klass)
            return refused, admitted

    refused, admitted = run(body())
    assert refused is not None
    assert f'PriorityClass "{klass}" doesn\'t exist' in refused
    assert admitted is None
