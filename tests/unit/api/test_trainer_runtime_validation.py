"""TrainingRuntime and ClusterTrainingRuntime validation: CEL rules, webhooks, template shape.

Cases follow ``test/integration/webhooks/trainingruntime_webhook_test.go`` and
``pkg/webhooks/trainingruntime_webhook_test.go``, plus kubetrain's checks that catch runtimes
upstream accepts and then silently half-ignores.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrain import api
from kubetrain.frameworks.trainjob import mpi, torch
from tests.unit.api.trainers import (
    ANCESTOR,
    initializer_job,
    lookup,
    messages,
    replicated_job,
    runtime,
    trainer_job,
    trainjob,
)

JOBS = "spec.template.spec.replicatedJobs"
ONE_POLICY = "Only one of the policy can be configured"


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(runtime("torch").build(), id="a torch runtime"),
        pytest.param(runtime("torch", kind="TrainingRuntime").build(), id="a namespaced runtime"),
        pytest.param(runtime("mpi").build(), id="an MPI runtime"),
        pytest.param(runtime("jax").build(), id="a JAX runtime"),
        pytest.param(runtime("xgboost").build(), id="an XGBoost runtime"),
        pytest.param(runtime("flux").build(), id="a Flux runtime"),
        pytest.param(runtime(None).ml_policy(numNodes=2).build(), id="a plain ML runtime"),
        pytest.param(
            runtime(None).jobs(replicated_job("worker")).build(),
            id="a runtime without mlPolicy needs no trainer ancestor",
        ),
        pytest.param(
            runtime("torch").policy("torch", numProcPerNode="gpu").build(),
            id="torch numProcPerNode gpu",
        ),
        pytest.param(
            runtime("torch").policy("torch", numProcPerNode=8).build(),
            id="torch numProcPerNode 8",
        ),
        pytest.param(
            runtime("torch")
            .jobs(
                initializer_job("dataset-initializer"),
                initializer_job("model-initializer"),
                trainer_job(),
            )
            .build(),
            id="initializers and a trainer, each with its container",
        ),
        pytest.param(
            runtime("mpi")
            .policy("mpi", runLauncherAsNode=True)
            .ml_policy(numNodes=3)
            .jobs(
                replicated_job("launcher", ancestor="trainer", containers=[{"name": "node"}]),
                replicated_job("node"),
            )
            .build(),
            id="MPI runLauncherAsNode with launcher and node jobs",
        ),
        pytest.param(
            runtime("torch")
            .policy("torch", elasticPolicy={"minNodes": 1, "maxNodes": 4, "maxRestarts": 3})
            .build(),
            id="a v2.1 elastic policy",
        ),
        pytest.param(
            runtime("torch")
            .pod_group_policy(volcano={"networkTopology": {"mode": "hard"}})
            .build(),
            id="volcano with a network topology",
        ),
        pytest.param(
            runtime("torch")
            .policy(
                "torch",
                envInjection={"targets": [{"jobName": "node", "containerNames": ["sidecar"]}]},
            )
            .build(),
            id="envInjection into a sidecar",
        ),
    ],
)
def test_a_valid_runtime_is_accepted(doc: dict[str, Any]) -> None:
    assert messages(doc) == []


@pytest.mark.parametrize(
    ("policies", "shown"),
    [
        pytest.param(("mpi", "torch"), '["torch", "mpi"]', id="MPI and Torch"),
        pytest.param(("jax", "torch"), '["torch", "jax"]', id="JAX and Torch"),
        pytest.param(("torch", "flux"), '["torch", "flux"]', id="Torch and Flux"),
        pytest.param(("mpi", "flux"), '["mpi", "flux"]', id="MPI and Flux"),
        pytest.param(("jax", "flux"), '["jax", "flux"]', id="JAX and Flux"),
        pytest.param(("jax", "mpi"), '["mpi", "jax"]', id="JAX and MPI"),
        pytest.param(
            ("torch", "mpi", "jax", "flux"), '["torch", "mpi", "jax", "flux"]', id="all four"
        ),
    ],
)
def test_a_runtime_with_two_ml_policies_is_rejected(policies: tuple[str, ...], shown: str) -> None:
    builder = runtime(policies[0])
    for name in policies[1:]:
        builder.policy(name)
    assert f"spec.mlPolicy: Invalid value: {shown}: {ONE_POLICY}" in messages(builder.build())


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            runtime("mpi").policy("mpi", mpiImplementation="Intel").build(),
            'spec.mlPolicy.mpi.mpiImplementation: Unsupported value: "Intel": '
            'MPI implementation for Intel doesn\'t supported; supported values: "OpenMPI"',
            id="an MPI implementation other than OpenMPI",
        ),
        pytest.param(
            runtime("mpi").policy("mpi", numProcPerNode=0).build(),
            "spec.mlPolicy.mpi.numProcPerNode: Invalid value: 0: "
            "NumProcPerNode in mpiPolicy must be >= 1",
            id="mpi numProcPerNode below 1",
        ),
        pytest.param(
            runtime("flux").policy("flux", numProcPerNode=0).build(),
            "spec.mlPolicy.flux.numProcPerNode: Invalid value: 0: "
            "NumProcPerNode in fluxPolicy must be >= 1",
            id="flux numProcPerNode below 1",
        ),
        pytest.param(
            runtime("torch").policy("torch", numProcPerNode="tpu").build(),
            'spec.mlPolicy.torch.numProcPerNode: Invalid value: "tpu": '
            "NumProcPerNode must be equal to auto, cpu, gpu, or int value",
            id="torch numProcPerNode word other than auto, cpu or gpu",
        ),
        pytest.param(
            runtime("torch").policy("torch", numProcPerNode=0).build(),
            "spec.mlPolicy.torch.numProcPerNode: Invalid value: 0: "
            "NumProcPerNode must be equal to auto, cpu, gpu, or int value",
            id="torch numProcPerNode zero",
        ),
        pytest.param(
            runtime("torch").ml_policy(numNodes=2).policy("torch", elasticPolicy={}).build(),
            'spec.mlPolicy: Invalid value: "object": '
            "numNodes should not be set if torch.elasticPolicy is configured",
            id="numNodes together with an elastic policy",
        ),
        pytest.param(
            runtime("torch").policy("torch", elasticPolicy={"minNodes": 4, "maxNodes": 2}).build(),
            "spec.mlPolicy.torch.elasticPolicy.maxNodes: Invalid value: 2: "
            "must be greater than or equal to minNodes (4)",
            id="elastic maxNodes below minNodes",
        ),
        pytest.param(
            runtime("torch").policy("torch", elasticPolicy={"minNodes": 0}).build(),
            "spec.mlPolicy.torch.elasticPolicy.minNodes: Invalid value: 0: "
            "should be greater than or equal to 1",
            id="elastic minNodes zero",
        ),
        pytest.param(
            runtime("torch")
            .policy(
                "torch", envInjection={"targets": [{"jobName": "node", "containerNames": ["node"]}]}
            )
            .build(),
            'spec.mlPolicy.torch.envInjection.targets[0].containerNames: Invalid value: ["node"]: '
            "containerNames must not include the main node container because PET_* envs are "
            "always injected into it",
            id="envInjection naming the node container",
        ),
        pytest.param(
            runtime("torch").pod_group_policy(coscheduling={}, volcano={}).build(),
            "spec.podGroupPolicy: Forbidden: only one of coscheduling and volcano may be set",
            id="both gang-scheduling policies",
        ),
        pytest.param(
            runtime("torch").jobs(replicated_job("node", ancestor="trainer", replicas=2)).build(),
            f"{JOBS}[0].replicas: Invalid value: 2: always must be 1",
            id="a trainer ancestor job with two replicas",
        ),
        pytest.param(
            runtime("torch")
            .jobs(replicated_job("node", ancestor="trainer", containers=[{"name": "trainer"}]))
            .build(),
            f'{JOBS}[0].template.spec.template.spec.containers: Invalid value: ["trainer"]: '
            "must contain the required container for the ancestor: trainer",
            id="a trainer ancestor job without a node container",
        ),
        pytest.param(
            runtime("torch")
            .jobs(
                replicated_job(
                    "dataset-initializer",
                    ancestor="dataset-initializer",
                    containers=[{"name": "init"}],
                ),
                trainer_job(),
            )
            .build(),
            f'{JOBS}[0].template.spec.template.spec.containers: Invalid value: ["init"]: '
            "must contain the required container for the ancestor: dataset-initializer",
            id="a dataset initializer job without its container",
        ),
        pytest.param(
            runtime("torch")
            .jobs(
                replicated_job("model-initializer", ancestor="model-initializer", replicas=0),
                trainer_job(),
            )
            .build(),
            f"{JOBS}[0].replicas: Invalid value: 0: always must be 1",
            id="a model initializer job with zero replicas",
        ),
        pytest.param(
            runtime("torch").jobs(replicated_job("node")).build(),
            f"{JOBS}: Required value: must have a replicated job whose Job template is labelled "
            f"{ANCESTOR}: trainer when mlPolicy is set",
            id="an ML policy without a trainer ancestor job",
        ),
        pytest.param(
            runtime("torch").jobs().build(),
            f"{JOBS}: Required value: must have at least one replicated job",
            id="no replicated jobs",
        ),
        pytest.param(
            runtime("torch")
            .jobs(replicated_job("node", ancestor="trainers", containers=[{"name": "node"}]))
            .build(),
            f'{JOBS}[0].template.metadata.labels[{ANCESTOR}]: Unsupported value: "trainers": '
            'supported values: "dataset-initializer", "model-initializer", "trainer"',
            id="an ancestor label value with a typo",
        ),
        pytest.param(
            runtime("torch").jobs(trainer_job(), {**trainer_job(), "name": "node2"}).build(),
            f'{JOBS}[1].template.metadata.labels[{ANCESTOR}]: Duplicate value: "trainer"',
            id="two trainer ancestor jobs",
        ),
        pytest.param(
            runtime("torch").jobs(trainer_job(), trainer_job()).build(),
            f'{JOBS}[1].name: Duplicate value: "node"',
            id="two replicated jobs with one name",
        ),
        pytest.param(
            runtime("mpi").policy("mpi", runLauncherAsNode=True).ml_policy(numNodes=2).build(),
            "spec.mlPolicy.numNodes: Invalid value: 2: must have 1 when MPI trainingRuntime "
            "with enabled runLauncherAsNode does not have either launcher and node",
            id="MPI runLauncherAsNode with two nodes but no launcher job",
        ),
        pytest.param(
            runtime("torch", name="Torch_Runtime").build(),
            'metadata.name: Invalid value: "Torch_Runtime": a lowercase RFC 1123 subdomain must '
            "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            id="a runtime name that is not a DNS subdomain",
        ),
    ],
)
def test_an_invalid_runtime_is_rejected(doc: dict[str, Any], expected: str) -> None:
    assert expected in messages(doc)


def test_an_ancestor_label_on_the_pod_template_is_reported_and_still_checked() -> None:
    """The seed articles' mistake: upstream ignores the label there, so nothing gets trained."""
    job = replicated_job("node", containers=[{"name": "trainer", "image": "x"}])
    job["template"]["spec"]["template"]["metadata"] = {"labels": {ANCESTOR: "trainer"}}
    found = messages(runtime("torch").jobs(job).build())
    assert found == [
        f'{JOBS}[0].template.spec.template.metadata.labels[{ANCESTOR}]: Invalid value: "trainer": '
        f"must be set on the Job template ({JOBS}[0].template.metadata.labels), where the trainer "
        "reads it, not on the Pod template",
        f'{JOBS}[0].template.spec.template.spec.containers: Invalid value: ["trainer"]: '
        "must contain the required container for the ancestor: trainer",
    ]


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        pytest.param(
            "not a list",
            f'{JOBS}: Invalid value: "object": must be a list of replicated jobs',
            id="replicatedJobs not a list",
        ),
        pytest.param(
            ["node"],
            f'{JOBS}[0]: Invalid value: "object": must be an object (a replicated job)',
            id="a replicated job that is a string",
        ),
        pytest.param(
            [{"template": {}}],
            f"{JOBS}[0].name: Required value",
            id="a replicated job without a name",
        ),
        pytest.param(
            [{"name": "node", "replicas": "1"}],
            f'{JOBS}[0].replicas: Invalid value: "1": must be an integer',
            id="replicas as a string",
        ),
        pytest.param(
            [{"name": "node", "template": []}],
            f'{JOBS}[0].template: Invalid value: "object": must be an object',
            id="a Job template that is a list",
        ),
        pytest.param(
            [{"name": "node", "template": {"spec": {"template": {"spec": {"containers": "x"}}}}}],
            f'{JOBS}[0].template.spec.template.spec.containers: Invalid value: "x": must be a list',
            id="containers that is a string",
        ),
        pytest.param(
            [{"name": "node", "template": {"metadata": {"labels": ["a"]}}}],
            f'{JOBS}[0].template.metadata.labels: Invalid value: "object": must be a map',
            id="labels that is a list",
        ),
    ],
)
def test_a_malformed_jobset_template_is_a_field_error_never_an_exception(
    jobs: Any, expected: str
) -> None:
    doc = runtime(None).build()
    doc["spec"]["template"]["spec"]["replicatedJobs"] = jobs
    assert expected in messages(doc)


def test_a_runtime_without_spec_is_rejected() -> None:
    doc = runtime(None).build()
    del doc["spec"]
    assert messages(doc) == ["spec: Required value: must set mlPolicy, podGroupPolicy or template"]


@pytest.mark.parametrize("kind", ["ClusterTrainingRuntime", "TrainingRuntime"])
def test_a_deprecated_runtime_is_accepted_with_a_warning(kind: str) -> None:
    doc = runtime("torch", name="old", kind=kind).labels(
        **{"trainer.kubeflow.org/support": "deprecated"}
    )
    verdict = api.review(doc.build())
    assert verdict.ok
    assert verdict.warnings == (
        f'{kind} "old" is deprecated and will be removed in a future release of Kubeflow Trainer. '
        "See runtime deprecation policy: "
        "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy",
    )


def test_a_supported_runtime_has_no_warning() -> None:
    doc = runtime("torch").labels(**{"trainer.kubeflow.org/support": "stable"}).build()
    assert api.review(doc).warnings == ()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "node", "trainer", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "replicas",
                    "template",
                    "metadata",
                    "labels",
                    "spec",
                    "containers",
                    "initContainers",
                    "parallelism",
                    "volumeMounts",
                    "resources",
                    ANCESTOR,
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(jobs=_JSON)
def test_any_json_in_replicated_jobs_is_judged_without_raising(jobs: Any) -> None:
    doc = runtime("mpi").build()
    doc["spec"]["template"]["spec"]["replicatedJobs"] = jobs
    verdict = api.review(doc)
    rt, _ = api.parse(doc)
    job = api.review(trainjob("a", runtime_name="torch-distributed").trainer(numNodes=2).build())
    find = lookup(doc)
    api.review(
        trainjob("b").initializer(dataset={"storageUri": "hf://d"}).trainer(image="x").build(),
        find_runtime=find,
    )
    if rt is not None and job.obj is not None:
        mpi.hostfile(job.obj, rt)
        torch.env(job.obj, rt)
    assert verdict.ok or verdict.errors
