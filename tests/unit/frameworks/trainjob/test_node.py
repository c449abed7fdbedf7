"""What the v2 contracts share: pod counts, endpoints, resources per node, rank 0's address."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.frameworks.trainjob import node
from tests.unit.api.trainers import initializer_job, replicated_job, runtime, trainer_job, trainjob


def admitted(doc: dict[str, Any]) -> Any:
    verdict = api.review(doc)
    assert verdict.ok, verdict.messages()
    return verdict.obj


def test_master_host_is_pod_zero_of_the_node_job() -> None:
    assert node.master_host(admitted(trainjob("pytorch").build())) == "pytorch-node-0-0.pytorch"


def test_pod_counts_and_endpoints_of_a_runtime_with_initializers() -> None:
    rt = admitted(
        runtime("torch", name="tune")
        .ml_policy(numNodes=2)
        .jobs(
            initializer_job("dataset-initializer"),
            initializer_job("model-initializer"),
            trainer_job(),
        )
        .build()
    )
    job = admitted(trainjob("j", runtime_name="tune").trainer(numNodes=3).build())
    counts = node.pod_counts(job, rt)
    assert counts == {"dataset-initializer": 1, "model-initializer": 1, "node": 3}
    assert node.runtime_pod_counts(rt)["node"] == 2
    assert node.endpoints(job, rt, counts) == {
        "dataset-initializer": ["j-dataset-initializer-0-0.j"],
        "model-initializer": ["j-model-initializer-0-0.j"],
        "node": ["j-node-0-0.j", "j-node-0-1.j", "j-node-0-2.j"],
    }


def test_parallelism_counts_for_jobs_that_are_not_the_trainer() -> None:
    rt = admitted(
        runtime(None, name="plain")
        .jobs(
            replicated_job("worker", parallelism=3, replicas=2),
            replicated_job("bad", parallelism=0),
        )
        .build()
    )
    job = admitted(trainjob("p", runtime_name="plain").build())
    counts = node.pod_counts(job, rt)
    assert counts == {"worker": 3, "bad": 1}
    assert node.endpoints(job, rt, counts)["worker"] == [
        "p-worker-0-0.p",
        "p-worker-0-1.p",
        "p-worker-0-2.p",
        "p-worker-1-0.p",
        "p-worker-1-1.p",
        "p-worker-1-2.p",
    ]


@pytest.mark.parametrize(
    ("runtime_limits", "trainer", "cpus", "gpus"),
    [
        pytest.param({"cpu": "4"}, {}, 4, 0, id="the runtime node container's resources"),
        pytest.param(
            {"cpu": "4", "nvidia.com/gpu": "2"},
            {"resourcesPerNode": {"limits": {"cpu": "1"}}},
            1,
            0,
            id="the TrainJob's resources replace the runtime's",
        ),
        pytest.param(None, {}, 0, 0, id="no resources anywhere"),
    ],
)
def test_resources_per_node(
    runtime_limits: dict[str, Any] | None, trainer: dict[str, Any], cpus: int, gpus: int
) -> None:
    jobs = trainer_job(limits=runtime_limits) if runtime_limits else trainer_job()
    rt = admitted(runtime("torch").jobs(jobs).build())
    builder = trainjob("a")
    job = admitted(builder.trainer(**trainer).build() if trainer else builder.build())
    assert node.cpus_per_node(job, rt) == cpus
    assert node.gpus_per_node(job, rt) == gpus


def test_a_malformed_template_reads_as_empty_not_an_error() -> None:
    obj, _ = api.parse(runtime(None).build())
    assert obj is not None
    obj.spec.template.spec["replicatedJobs"] = ["x", {"name": 3}, {"name": "ok", "replicas": "2"}]
    job = admitted(trainjob("a").build())
    assert node.pod_counts(job, obj) == {"ok": 1}
    assert node.endpoints(job, obj, {"ok": 1}) == {"ok": ["a-ok-0-0.a"]}


@pytest.mark.parametrize(
    ("network", "expected"),
    [
        pytest.param(None, "job", id="the job's name without a network block"),
        pytest.param({"subdomain": "train"}, "train", id="the JobSet's network.subdomain"),
        pytest.param({"subdomain": ""}, "job", id="an empty subdomain counts as unset"),
    ],
)
def test_subdomain_names_the_headless_service(network: Any, expected: str) -> None:
    builder = runtime("torch")
    if network is not None:
        builder.jobset(network=network)
    assert node.subdomain(admitted(trainjob("job").build()), admitted(builder.build())) == expected
