"""The torch env contract, with the nproc table ported from upstream's ``torch_test.go``.

The nproc cases give the TrainJob ``resourcesPerNode.requests`` as upstream's ``Container``
helper does; the runtime's torch ``numProcPerNode`` is the CRD default ``auto``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.frameworks.trainjob import node, torch
from tests.unit.api.trainers import replicated_job, runtime, trainer_job, trainjob

RANK = {
    "name": "PET_NODE_RANK",
    "valueFrom": {
        "fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        }
    },
}


def admitted(doc: dict[str, Any], **kwargs: Any) -> Any:
    """The object as admission returns it: parsed, defaulted and valid."""
    verdict = api.review(doc, **kwargs)
    assert verdict.ok, verdict.messages()
    return verdict.obj


def env_of(job_doc: dict[str, Any], runtime_doc: dict[str, Any]) -> dict[str, Any]:
    job, rt = admitted(job_doc), admitted(runtime_doc)
    return {var["name"]: var.get("value", var.get("valueFrom")) for var in torch.env(job, rt)}


@pytest.mark.parametrize(
    ("nproc", "requests", "expected"),
    [
        pytest.param("auto", {"cpu": "4"}, "4", id="nproc_per_node=auto with CPU limit"),
        pytest.param("auto", None, "1", id="nproc_per_node=auto with no CPU resources"),
        pytest.param("auto", {"cpu": "2"}, "2", id="nproc_per_node=auto with low CPU limit"),
        pytest.param(
            "auto", {"cpu": "3"}, "3", id="nproc_per_node=auto with CPU request but no limit"
        ),
        pytest.param(
            "auto", {"cpu": "2.5"}, "3", id="nproc_per_node=auto with millicore CPU limit"
        ),
        pytest.param(
            "auto", {"cpu": "0.7"}, "1", id="nproc_per_node=auto with fractional CPU limit"
        ),
        pytest.param(
            "auto",
            {"example.com/gpu": "2"},
            "auto",
            id="nproc_per_node=auto with GPU request should remain auto",
        ),
        pytest.param(3, {"cpu": "8"}, "3", id="explicitly set nproc_per_node should be preserved"),
        pytest.param(
            "auto",
            {"cpu": "2500m"},
            "3",
            id="nproc_per_node=auto with millicore CPU limit in m format",
        ),
        pytest.param("cpu", {"cpu": "4"}, "4", id="nproc_per_node=cpu with CPU limit"),
        pytest.param(
            "cpu",
            {"cpu": "6", "example.com/gpu": "2"},
            "6",
            id="nproc_per_node=cpu with GPU resources",
        ),
        pytest.param("cpu", {"cpu": "3.7"}, "4", id="nproc_per_node=cpu with fractional CPU"),
        pytest.param(
            None,
            {"cpu": "6", "example.com/gpu": "2"},
            "auto",
            id="nproc_per_node=auto resolves to GPU count when GPU resources present",
        ),
        pytest.param("gpu", {"cpu": "6"}, "gpu", id="nproc_per_node=gpu stays literal"),
        pytest.param(
            "gpu", {"nvidia.com/gpu": "4"}, "gpu", id="nproc_per_node=gpu with GPUs stays literal"
        ),
        pytest.param("cpu", None, "1", id="nproc_per_node=cpu without resources is at least 1"),
    ],
)
def test_nproc_per_node_resolves_auto_cpu_and_gpu_against_the_node(
    nproc: int | str | None, requests: dict[str, Any] | None, expected: str
) -> None:
    trainer: dict[str, Any] = {"image": "test:image"}
    if nproc is not None:
        trainer["numProcPerNode"] = nproc
    if requests is not None:
        trainer["resourcesPerNode"] = {"requests": requests}
    env = env_of(trainjob("test-job").trainer(**trainer).build(), runtime("torch").build())
    assert env["PET_NPROC_PER_NODE"] == expected


def test_the_full_env_for_a_cpu_job_in_upstreams_order() -> None:
    job = admitted(
        trainjob("test-job").trainer(resourcesPerNode={"requests": {"cpu": "4"}}).build()
    )
    rt = admitted(runtime("torch").build())
    assert torch.env(job, rt) == [
        {"name": "PET_NNODES", "value": "1"},
        {"name": "PET_NPROC_PER_NODE", "value": "4"},
        RANK,
        {"name": "PET_MASTER_ADDR", "value": "test-job-node-0-0.test-job"},
        {"name": "PET_MASTER_PORT", "value": "29500"},
    ]
    assert torch.ports() == [{"containerPort": 29500}]


def test_multi_node_multi_gpu_training_with_complete_info() -> None:
    doc = (
        trainjob("gpu-job")
        .trainer(
            numNodes=4,
            numProcPerNode="auto",
            resourcesPerNode={"requests": {"cpu": "8", "memory": "16Gi", "example.com/gpu": "4"}},
        )
        .build()
    )
    env = env_of(doc, runtime("torch").build())
    assert env["PET_NNODES"] == "4"
    assert env["PET_NPROC_PER_NODE"] == "auto"
    assert env["PET_MASTER_ADDR"] == "gpu-job-node-0-0.gpu-job"


def test_trainjob_num_nodes_is_respected_rather_than_the_runtimes() -> None:
    rt = runtime("torch").ml_policy(numNodes=3).build()
    assert env_of(trainjob("a").trainer(numNodes=2).build(), rt)["PET_NNODES"] == "2"
    assert env_of(trainjob("a").build(), rt)["PET_NNODES"] == "3"


@pytest.mark.parametrize(
    ("runtime_nproc", "job_nproc", "expected"),
    [
        pytest.param(5, None, "5", id="the runtime's int when the TrainJob sets none"),
        pytest.param(5, 2, "2", id="the TrainJob's value overrides the runtime's"),
        pytest.param("gpu", None, "gpu", id="the runtime's gpu stays literal"),
        pytest.param("cpu", None, "8", id="the runtime's cpu becomes the CPU count"),
    ],
)
def test_the_runtime_num_proc_per_node_is_the_v21_default(
    runtime_nproc: int | str, job_nproc: int | None, expected: str
) -> None:
    rt = runtime("torch").policy("torch", numProcPerNode=runtime_nproc).build()
    trainer: dict[str, Any] = {"resourcesPerNode": {"limits": {"cpu": "8"}}}
    if job_nproc is not None:
        trainer["numProcPerNode"] = job_nproc
    assert env_of(trainjob("a").trainer(**trainer).build(), rt)["PET_NPROC_PER_NODE"] == expected


def test_runtime_resources_count_when_the_trainjob_sets_none() -> None:
    rt = runtime("torch").jobs(trainer_job(limits={"cpu": "6"})).build()
    assert env_of(trainjob("a").build(), rt)["PET_NPROC_PER_NODE"] == "6"
    gpu = runtime("torch").jobs(trainer_job(limits={"nvidia.com/gpu": "2"})).build()
    assert env_of(trainjob("a").build(), gpu)["PET_NPROC_PER_NODE"] == "auto"


def test_trainjob_resources_replace_the_runtimes_entirely() -> None:
    rt = runtime("torch").jobs(trainer_job(limits={"nvidia.com/gpu": "8"})).build()
    doc = trainjob("a").trainer(resourcesPerNode={"requests": {"cpu": "2"}}).build()
    assert env_of(doc, rt)["PET_NPROC_PER_NODE"] == "2"


def test_env_is_computed_even_without_a_trainer_block() -> None:
    env = env_of(trainjob("a").build(), runtime("torch").ml_policy(numNodes=2).build())
    assert env["PET_NNODES"] == "2"


def test_torchtune_gets_no_master_variables() -> None:
    doc = trainjob("tune").trainer(command=["tune", "run"]).build()
    assert set(env_of(doc, runtime("torch").build())) == {
        "PET_NNODES",
        "PET_NPROC_PER_NODE",
        "PET_NODE_RANK",
    }


@pytest.mark.parametrize(
    ("elastic", "trainer", "pods", "expected"),
    [
        pytest.param(
            {"minNodes": 2, "maxNodes": 4, "maxRestarts": 3},
            {},
            4,
            {
                "PET_NNODES": "2:4",
                "PET_RDZV_BACKEND": "c10d",
                "PET_RDZV_ENDPOINT": "el-node-0-0.el:29500",
                "PET_MAX_RESTARTS": "3",
            },
            id="min and max nodes start at max, with restarts",
        ),
        pytest.param(
            {"minNodes": 2, "maxNodes": 4},
            {"numNodes": 3},
            3,
            {
                "PET_NNODES": "2:4",
                "PET_RDZV_BACKEND": "c10d",
                "PET_RDZV_ENDPOINT": "el-node-0-0.el:29500",
            },
            id="the TrainJob's numNodes picks the starting size",
        ),
        pytest.param(
            {"minNodes": 2},
            {},
            2,
            {
                "PET_NNODES": "2:2",
                "PET_RDZV_BACKEND": "c10d",
                "PET_RDZV_ENDPOINT": "el-node-0-0.el:29500",
            },
            id="only minNodes",
        ),
        pytest.param(
            {"maxNodes": 5},
            {"numNodes": 2},
            2,
            {
                "PET_NNODES": "2:5",
                "PET_RDZV_BACKEND": "c10d",
                "PET_RDZV_ENDPOINT": "el-node-0-0.el:29500",
            },
            id="only maxNodes: min defaults to the starting size",
        ),
    ],
)
def test_an_elastic_runtime_gets_the_c10d_rendezvous_contract(
    elastic: dict[str, Any], trainer: dict[str, Any], pods: int, expected: dict[str, str]
) -> None:
    rt_doc = runtime("torch").policy("torch", elasticPolicy=elastic).build()
    job_doc = trainjob("el").trainer(**trainer).build() if trainer else trainjob("el").build()
    env = env_of(job_doc, rt_doc)
    assert {k: v for k, v in env.items() if k in expected} == expected
    assert set(env) - set(expected) == {
        "PET_NPROC_PER_NODE",
        "PET_NODE_RANK",
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
    }
    job, rt = admitted(job_doc), admitted(rt_doc)
    assert torch.pod_counts(job, rt) == {"node": pods}
    assert node.endpoints(job, rt, torch.pod_counts(job, rt))["node"][-1] == (
        f"el-node-0-{pods - 1}.el"
    )


def test_env_injection_targets_get_the_master_variables_even_for_torchtune() -> None:
    rt_doc = (
        runtime("torch")
        .policy(
            "torch",
            envInjection={"targets": [{"jobName": "node", "containerNames": ["preflight"]}]},
        )
        .jobs(
            replicated_job(
                "node",
                ancestor="trainer",
                containers=[{"name": "node", "image": "x"}],
                init_containers=[{"name": "preflight", "image": "x"}],
            )
        )
        .build()
    )
    job, rt = admitted(trainjob("t").trainer(command=["tune", "run"]).build()), admitted(rt_doc)
    assert torch.injection_targets(rt) == [("node", "preflight")]
    names = [var["name"] for var in torch.injected_env(job, rt)]
    assert names == list(torch.RESERVED_ENV)
    assert "PET_MASTER_ADDR" not in [var["name"] for var in torch.env(job, rt)]


def test_validation_refuses_exactly_the_names_the_contract_injects() -> None:
    rt = admitted(
        runtime("torch").policy("torch", elasticPolicy={"minNodes": 1, "maxNodes": 2}).build()
    )
    injected = [var["name"] for var in torch.injected_env(admitted(trainjob("t").build()), rt)]
    own = [{"name": name, "value": "1"} for name in [*injected, "MY_OWN"]]
    job = admitted(trainjob("t").trainer(env=own).build())
    errors = torch.validate(job, rt)
    assert [e.path for e in errors] == ["spec.trainer.env"]
    assert errors[0].detail.endswith("[" + " ".join(sorted(injected)) + "]")


# --- a job given its own port (pods on a shared host network) ------------------------------

PORTS = [
    pytest.param(
        runtime("torch").build(),
        {"PET_MASTER_PORT": "20007"},
        id="the master port is the job's",
    ),
    pytest.param(
        runtime("torch").policy("torch", elasticPolicy={"minNodes": 1, "maxNodes": 2}).build(),
        {"PET_MASTER_PORT": "20007", "PET_RDZV_ENDPOINT": "job-node-0-0.job:20007"},
        id="the elastic rendezvous endpoint is at the job's port",
    ),
]


@pytest.mark.parametrize(("runtime_doc", "expected"), PORTS)
def test_a_jobs_own_port_replaces_29500(runtime_doc: dict[str, Any], expected: Any) -> None:
    job, rt = admitted(trainjob("job").build()), admitted(runtime_doc)
    for found in (torch.env(job, rt, 20007), torch.injected_env(job, rt, 20007)):
        values = {var["name"]: var.get("value") for var in found}
        assert {name: values.get(name) for name in expected} == expected
    assert torch.ports(20007) == [{"containerPort": 20007}]
