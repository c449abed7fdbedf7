"""Resources requested by pods, jobs and offered by nodes (kubetrain.cli.usage)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubetrain.cli import usage
from tests.unit.cli.jobobjects import v1_job


def test_a_pod_requests_the_larger_of_its_containers_and_its_init_containers() -> None:
    spec = {
        "containers": [
            {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            {"resources": {"limits": {"cpu": "1", "nvidia.com/gpu": 1}}},
        ],
        "initContainers": [{"resources": {"requests": {"memory": "4Gi", "cpu": "100m"}}}],
    }
    assert usage.pod_spec_requests(spec) == usage.Amounts(
        cpu=Fraction(3, 2), memory=Fraction(4 * 2**30), gpu=Fraction(1)
    )


def test_a_job_requests_each_template_times_its_replicas() -> None:
    job = v1_job()
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["resources"] = {
            "limits": {"cpu": "2", "memory": "1Gi", "amd.com/gpu": "1"}
        }
    assert usage.job_requests(job) == usage.Amounts(Fraction(6), Fraction(3 * 2**30), Fraction(3))


def test_a_trainjob_requests_resources_per_node_times_nodes() -> None:
    job = {
        "kind": "TrainJob",
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "spec": {"trainer": {"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": 3}}}},
    }
    assert usage.job_requests(job).cpu == 6


FORMATS = [
    (usage.cpu, Fraction(2), "2"),
    (usage.cpu, Fraction(3, 2), "1500m"),
    (usage.cpu, Fraction(1, 3), "334m"),
    (usage.memory, Fraction(16 * 2**30), "16Gi"),
    (usage.memory, Fraction(3 * 2**29), "1.5Gi"),
    (usage.memory, Fraction(512 * 2**20), "512Mi"),
    (usage.memory, Fraction(1000), "1000"),
    (usage.gpu, Fraction(2), "2"),
]


@pytest.mark.parametrize(("fmt", "value", "text"), FORMATS, ids=[f"{t}" for _, _, t in FORMATS])
def test_amounts_print_briefly(fmt: object, value: Fraction, text: str) -> None:
    assert fmt(value) == text  # type: ignore[operator]


def test_a_node_offers_its_allocatable_else_its_capacity() -> None:
    node = {"status": {"capacity": {"cpu": "8", "memory": "16Gi"}, "allocatable": {"cpu": "7"}}}
    assert usage.node_allocatable(node).cpu == 7
    assert usage.node_allocatable({"status": {"capacity": {"cpu": "8"}}}).cpu == 8
