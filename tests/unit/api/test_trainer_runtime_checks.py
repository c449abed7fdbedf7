"""TrainJob checks that need the referenced runtime: the plugins' ``CustomValidation`` phase.

Cases follow the upstream plugin tables (``jobset_test.go``, ``torch_test.go``,
``mpi_test.go``, ``xgboost_test.go``, ``flux_test.go``, ``volcano_test.go``) and the webhook
integration scenarios that create a runtime first.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubetrain import api
from tests.unit.api.trainers import (
    initializer_job,
    lookup,
    messages,
    pod_spec_patch,
    replicated_job,
    runtime,
    trainer_job,
    trainjob,
)

TORCH = runtime("torch").build()
WITH_INITIALIZERS = (
    runtime("torch", name="torchtune")
    .jobs(
        initializer_job("dataset-initializer"), initializer_job("model-initializer"), trainer_job()
    )
    .build()
)
MPI = (
    runtime("mpi", name="mpi")
    .jobs(
        replicated_job("launcher", ancestor="trainer", containers=[{"name": "node"}]),
        replicated_job("node"),
    )
    .build()
)
MPI_NO_LAUNCHER = runtime("mpi", name="mpi-node-only").policy("mpi", runLauncherAsNode=True).build()
XGBOOST = runtime("xgboost", name="xgboost").build()
FLUX = (
    runtime("flux", name="flux")
    .jobs(
        replicated_job(
            "node",
            ancestor="trainer",
            init_containers=[{"name": "flux-installer", "image": "ubuntu:22.04"}],
        )
    )
    .build()
)
ELASTIC = (
    runtime("torch", name="elastic")
    .policy("torch", elasticPolicy={"minNodes": 2, "maxNodes": 4})
    .build()
)
VOLCANO = (
    runtime("torch", name="volcano")
    .pod_group_policy(volcano={})
    .template_metadata(annotations={"scheduling.volcano.sh/queue-name": "research"})
    .build()
)
PLAIN_NO_TRAINER = runtime(None, name="plain").jobs(replicated_job("worker")).build()
INJECTION = (
    runtime("torch", name="injection")
    .policy("torch", envInjection={"targets": [{"jobName": "node", "containerNames": ["sidecar"]}]})
    .build()
)
NAMESPACED = runtime("torch", name="ns-runtime", kind="TrainingRuntime", namespace="team").build()
DEPRECATED = (
    runtime("torch", name="old").labels(**{"trainer.kubeflow.org/support": "deprecated"}).build()
)
FIND = lookup(
    TORCH,
    WITH_INITIALIZERS,
    MPI,
    MPI_NO_LAUNCHER,
    XGBOOST,
    FLUX,
    ELASTIC,
    VOLCANO,
    PLAIN_NO_TRAINER,
    INJECTION,
    NAMESPACED,
    DEPRECATED,
)
REF = '{name: "%s", apiGroup: "trainer.kubeflow.org", kind: "ClusterTrainingRuntime"}'
PATCHED_JOB = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
PATCHED_POD = PATCHED_JOB + ".template.spec.template.spec"


def check(doc: dict[str, Any]) -> list[str]:
    return messages(doc, find_runtime=FIND)


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(trainjob("a").trainer(numNodes=2).build(), id="a torch TrainJob"),
        pytest.param(
            trainjob(
                "a", namespace="team", runtime_name="ns-runtime", kind="TrainingRuntime"
            ).build(),
            id="a namespaced runtime in the TrainJob's namespace",
        ),
        pytest.param(
            trainjob("a", runtime_name="torchtune")
            .initializer(dataset={"storageUri": "hf://d"}, model={"storageUri": "hf://m"})
            .build(),
            id="initializers against a runtime that has them",
        ),
        pytest.param(
            trainjob("a", runtime_name="mpi").trainer(numNodes=2, numProcPerNode=8).build(),
            id="an MPI TrainJob with an int numProcPerNode",
        ),
        pytest.param(
            trainjob("a", runtime_name="mpi-node-only").trainer(numNodes=1).build(),
            id="runLauncherAsNode without a launcher is fine for one node",
        ),
        pytest.param(
            trainjob("a", runtime_name="xgboost")
            .trainer(env=[{"name": "XGB_VERBOSITY", "value": "2"}])
            .build(),
            id="an XGBoost TrainJob with its own env",
        ),
        pytest.param(
            trainjob("a", runtime_name="elastic").trainer(numNodes=3).build(),
            id="an elastic TrainJob within minNodes and maxNodes",
        ),
        pytest.param(
            trainjob("a", runtime_name="plain").build(),
            id="a TrainJob without trainer against a runtime without trainer job",
        ),
        pytest.param(
            trainjob("a")
            .patch("acme.io/x", pod_spec_patch("node", containers=[{"name": "node"}]))
            .build(),
            id="a patch of the node container without env",
        ),
        pytest.param(
            trainjob("a").spec(podTemplateOverrides=[{"targetJobs": [{"name": "node"}]}]).build(),
            id="a v2.1 override of an existing job",
        ),
    ],
)
def test_a_trainjob_that_fits_its_runtime_is_accepted(doc: dict[str, Any]) -> None:
    assert check(doc) == []


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            trainjob("a", runtime_name="nope").build(),
            f"spec.RuntimeRef: Invalid value: {REF % 'nope'}: "
            'clustertrainingruntimes.trainer.kubeflow.org "nope" not found: '
            "specified clusterTrainingRuntime must be created before the TrainJob is created",
            id="a ClusterTrainingRuntime that does not exist",
        ),
        pytest.param(
            trainjob("a", runtime_name="ns-runtime", kind="TrainingRuntime").build(),
            'spec.runtimeRef: Invalid value: {name: "ns-runtime", apiGroup: '
            '"trainer.kubeflow.org", kind: "TrainingRuntime"}: '
            'trainingruntimes.trainer.kubeflow.org "ns-runtime" not found: '
            "specified trainingRuntime must be created before the TrainJob is created",
            id="a TrainingRuntime in another namespace",
        ),
        pytest.param(
            trainjob("a").initializer(model={"storageUri": "hf://m"}).build(),
            f"spec.runtimeRef: Invalid value: {REF % 'torch-distributed'}: must have "
            "model-initializer job when trainJob is configured with input modelConfig",
            id="a model initializer against a runtime without one",
        ),
        pytest.param(
            trainjob("a").initializer(dataset={"storageUri": "hf://d"}).build(),
            f"spec.runtimeRef: Invalid value: {REF % 'torch-distributed'}: must have "
            "dataset-initializer job when trainJob is configured with input datasetConfig",
            id="a dataset initializer against a runtime without one",
        ),
        pytest.param(
            trainjob("a")
            .trainer(
                env=[
                    {"name": "PET_NNODES", "value": "2"},
                    {"name": "PET_MASTER_ADDR", "value": "x"},
                    {"name": "OK", "value": "1"},
                ]
            )
            .build(),
            'spec.trainer.env: Invalid value: ["PET_NNODES", "PET_MASTER_ADDR", "OK"]: '
            "must not have reserved envs, invalid envs configured: [PET_MASTER_ADDR PET_NNODES]",
            id="reserved torch env names",
        ),
        pytest.param(
            trainjob("a", runtime_name="elastic")
            .trainer(env=[{"name": "PET_RDZV_ENDPOINT", "value": "x"}])
            .build(),
            'spec.trainer.env: Invalid value: ["PET_RDZV_ENDPOINT"]: '
            "must not have reserved envs, invalid envs configured: [PET_RDZV_ENDPOINT]",
            id="a rendezvous env name against an elastic runtime",
        ),
        pytest.param(
            trainjob("a", runtime_name="elastic").trainer(numNodes=5).build(),
            "spec.trainer.numNodes: Invalid value: 5: "
            "must be within the runtime's torch elasticPolicy minNodes..maxNodes [2, 4]",
            id="an elastic TrainJob above maxNodes",
        ),
        pytest.param(
            trainjob("a", runtime_name="injection").build(),
            'spec.runtimeRef: Invalid value: {jobName: "node", containerNames: ["sidecar"]}: '
            'envInjection target podSet "node" container "sidecar" not found in runtime template',
            id="an envInjection target container the runtime lacks",
        ),
        pytest.param(
            trainjob("a", runtime_name="mpi").trainer(numProcPerNode="auto").build(),
            'spec.trainer.numProcPerNode: Invalid value: "auto": '
            "must have an int value for MPI TrainJob",
            id="a string numProcPerNode for MPI",
        ),
        pytest.param(
            trainjob("a", runtime_name="mpi-node-only").trainer(numNodes=2).build(),
            "spec.trainer.numNodes: Invalid value: 2: must have 1 when MPI trainingRuntime "
            "with enabled runLauncherAsNode does not have either launcher and node",
            id="runLauncherAsNode with two nodes and no launcher job",
        ),
        pytest.param(
            trainjob("a", runtime_name="mpi")
            .trainer(
                env=[
                    {"name": "OMPI_MCA_orte_default_hostfile", "value": "/h"},
                    {"name": "OMPI_MCA_plm_rsh_args", "value": "-p"},
                ]
            )
            .build(),
            'spec.trainer.env: Invalid value: ["OMPI_MCA_orte_default_hostfile", '
            '"OMPI_MCA_plm_rsh_args"]: must not have reserved envs, invalid envs configured: '
            "[OMPI_MCA_orte_default_hostfile OMPI_MCA_plm_rsh_args]",
            id="reserved MPI env names",
        ),
        pytest.param(
            trainjob("a", runtime_name="xgboost")
            .trainer(env=[{"name": "OK", "value": "1"}, {"name": "DMLC_NUM_WORKER", "value": "10"}])
            .build(),
            "spec.trainer.env[1]: Forbidden: DMLC_NUM_WORKER is reserved for the XGBoost runtime",
            id="a reserved XGBoost env name",
        ),
        pytest.param(
            trainjob("a", runtime_name="flux").build(),
            'spec.trainer.initContainers: Invalid value: "flux-installer": '
            "InitContainer 'flux-installer' is reserved",
            id="a Flux runtime with its own flux-installer init container",
        ),
        pytest.param(
            trainjob("a", runtime_name="volcano")
            .spec(annotations={"scheduling.volcano.sh/queue-name": ""})
            .build(),
            'spec.annotations[scheduling.volcano.sh/queue-name]: Invalid value: "": '
            "Volcano queue name must not be empty",
            id="an empty Volcano queue",
        ),
        pytest.param(
            trainjob("a").patch("acme.io/x", pod_spec_patch("worker")).build(),
            f'{PATCHED_JOB}.name: Invalid value: "worker": '
            "must not have replicated job that doesn't exist in the runtime job template",
            id="a patch of a replicated job the runtime lacks",
        ),
        pytest.param(
            trainjob("a")
            .patch("acme.io/x", pod_spec_patch("node", containers=[{"name": "sidecar"}]))
            .build(),
            f'{PATCHED_POD}.containers[0].name: Invalid value: "sidecar": '
            "must not have container that doesn't exist in the runtime job node",
            id="a patch of a container the runtime lacks",
        ),
        pytest.param(
            trainjob("a")
            .patch("acme.io/x", pod_spec_patch("node", initContainers=[{"name": "setup"}]))
            .build(),
            f'{PATCHED_POD}.initContainers[0].name: Invalid value: "setup": '
            "must not have initContainer that doesn't exist in the runtime job node",
            id="a patch of an init container the runtime lacks",
        ),
        pytest.param(
            trainjob("a")
            .patch(
                "acme.io/x",
                pod_spec_patch(
                    "node", containers=[{"name": "node", "env": [{"name": "X", "value": "1"}]}]
                ),
            )
            .build(),
            f'{PATCHED_POD}.containers[0].env: Invalid value: ["X"]: '
            "must not have envs for the dataset-initializer, model-initializer, node containers",
            id="a patch setting env on the node container",
        ),
        pytest.param(
            trainjob("a")
            .spec(podTemplateOverrides=[{"targetJobs": [{"name": "workers"}]}])
            .build(),
            'spec.podTemplateOverrides[0].targetJobs[0].name: Invalid value: "workers": '
            "must not have targetJob that doesn't exist in the runtime job template",
            id="a v2.1 override of a job the runtime lacks",
        ),
        pytest.param(
            trainjob("a", runtime_name="plain").trainer(image="me/train:2").build(),
            'spec.trainer: Forbidden: the runtime "plain" has no replicated job labelled '
            "trainer.kubeflow.org/trainjob-ancestor-step: trainer with a container named node, "
            "so these trainer settings would be ignored",
            id="trainer settings a runtime would ignore",
        ),
    ],
)
def test_a_trainjob_that_does_not_fit_its_runtime_is_rejected(
    doc: dict[str, Any], expected: str
) -> None:
    assert expected in check(doc)


@pytest.mark.parametrize(
    ("runtime_doc", "expected"),
    [
        pytest.param(
            runtime("torch", name="t")
            .jobs(
                replicated_job("dataset-initializer", containers=[{"name": "download"}]),
                trainer_job(),
            )
            .build(),
            "must have container with name - dataset-initializer in the dataset-initializer job",
            id="the initializer job lacks its container",
        ),
        pytest.param(
            runtime("torch", name="t")
            .jobs(initializer_job("dataset-initializer", mount=False), trainer_job())
            .build(),
            "must have volumeMount with name - initializer in container dataset-initializer of "
            "the dataset-initializer job",
            id="the initializer container lacks the initializer mount",
        ),
    ],
)
def test_a_dataset_initializer_needs_the_runtimes_job_container_and_mount(
    runtime_doc: dict[str, Any], expected: str
) -> None:
    doc = trainjob("a", runtime_name="t").initializer(dataset={"storageUri": "hf://d"}).build()
    ref = REF % "t"
    assert messages(doc, find_runtime=lookup(runtime_doc)) == [
        f"spec.runtimeRef: Invalid value: {ref}: {expected}"
    ]


def test_a_trainjob_referencing_a_deprecated_runtime_gets_a_warning() -> None:
    verdict = api.review(trainjob("a", runtime_name="old").build(), find_runtime=FIND)
    assert verdict.ok
    assert verdict.warnings == (
        'Referenced ClusterTrainingRuntime "old" is deprecated and will be removed in a future '
        "release of Kubeflow Trainer. See runtime deprecation policy: "
        "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy",
    )


def test_the_runtime_lookup_is_asked_with_upstreams_keys() -> None:
    asked = []

    def find(kind: str, namespace: str | None, name: str) -> api.Runtime | None:
        asked.append((kind, namespace, name))
        return None

    api.review(
        trainjob("a", namespace="team", runtime_name="r", kind="TrainingRuntime").build(),
        find_runtime=find,
    )
    api.review(trainjob("b", runtime_name="c").build(), find_runtime=find)
    assert set(asked) == {("TrainingRuntime", "team", "r"), ("ClusterTrainingRuntime", None, "c")}


def test_a_trainjob_without_runtime_ref_is_judged_even_with_a_lookup() -> None:
    doc = trainjob("a").build()
    del doc["spec"]["runtimeRef"]
    verdict = api.review(doc, find_runtime=FIND)
    assert [str(e) for e in verdict.errors] == ["spec.runtimeRef: Required value"]
    assert verdict.warnings == ()


def _volcano_runtime_with_priority(priority_class: str) -> dict[str, Any]:
    doc = copy.deepcopy(VOLCANO)
    for rjob in doc["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    return doc


@pytest.mark.parametrize(
    ("priority_class", "exists", "expected"),
    [
        ("high", True, []),
        (
            "missing",
            False,
            [
                'spec.templateSpec.priorityClassName: Invalid value: "missing": PriorityClass '
                '"missing" doesn\'t exist: priorityclasses.scheduling.k8s.io "missing" not found'
            ],
        ),
        ("system-node-critical", False, []),  # upstream: the two system classes always exist
    ],
    ids=["an existing class", "a missing class", "a system class"],
)
def test_a_volcano_runtime_s_priority_class_must_exist(
    priority_class: str, exists: bool, expected: list[str]
) -> None:
    """Upstream's Volcano plugin (volcano.go Validate): the pod templates' priorityClassName."""
    find = lookup(_volcano_runtime_with_priority(priority_class))
    asked: list[str] = []

    def has(name: str) -> bool:
        asked.append(name)
        return exists

    doc = trainjob("a", runtime_name="volcano").build()
    assert messages(doc, find_runtime=find, find_priority_class=has) == expected
    assert messages(doc, find_runtime=find) == [], "without a lookup, nothing is said"
    assert asked == ([] if priority_class.startswith("system-") else [priority_class])
