"""The JAX contract, ported from upstream's ``jax_test.go``."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.frameworks.trainjob import jax
from tests.unit.api.trainers import runtime, trainjob


def admitted(doc: dict[str, Any]) -> Any:
    verdict = api.review(doc)
    assert verdict.ok, verdict.messages()
    return verdict.obj


@pytest.mark.parametrize(
    ("runtime_nodes", "trainer", "expected"),
    [
        pytest.param(1, {}, "1", id="a single process by default"),
        pytest.param(2, {}, "2", id="the runtime's numNodes"),
        pytest.param(2, {"numNodes": 4}, "4", id="the TrainJob's numNodes is respected"),
    ],
)
def test_jax_env(runtime_nodes: int, trainer: dict[str, Any], expected: str) -> None:
    rt = admitted(runtime("jax", name="jax-distributed").ml_policy(numNodes=runtime_nodes).build())
    builder = trainjob("jax-job", runtime_name="jax-distributed")
    job = admitted(builder.trainer(**trainer).build() if trainer else builder.build())
    assert jax.env(job, rt) == [
        {"name": "JAX_NUM_PROCESSES", "value": expected},
        {
            "name": "JAX_PROCESS_ID",
            "valueFrom": {
                "fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                }
            },
        },
        {"name": "JAX_COORDINATOR_ADDRESS", "value": "jax-job-node-0-0.jax-job:29500"},
    ]
    assert jax.ports() == [{"containerPort": 29500}]


def test_a_jobs_own_port_is_the_coordinators() -> None:
    rt = admitted(runtime("jax", name="jax-distributed").build())
    job = admitted(trainjob("j", runtime_name="jax-distributed").build())
    assert jax.env(job, rt, 20007)[-1] == {
        "name": "JAX_COORDINATOR_ADDRESS",
        "value": "j-node-0-0.j:20007",
    }
    assert jax.ports(20007) == [{"containerPort": 20007}]
