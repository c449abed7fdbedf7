"""The XGBoost contract, ported from upstream's ``xgboost_test.go``."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.frameworks.trainjob import xgboost
from tests.unit.api.trainers import runtime, trainer_job, trainjob


def admitted(doc: dict[str, Any]) -> Any:
    verdict = api.review(doc)
    assert verdict.ok, verdict.messages()
    return verdict.obj


@pytest.mark.parametrize(
    ("runtime_resources", "trainer", "workers"),
    [
        pytest.param({}, {"numNodes": 1}, "1", id="single node XGBoost training (CPU)"),
        pytest.param({}, {"numNodes": 4}, "4", id="multi-node XGBoost training (CPU)"),
        pytest.param(
            {},
            {
                "numNodes": 2,
                "resourcesPerNode": {
                    "requests": {"cpu": "8", "memory": "32Gi", "example.com/gpu": "4"}
                },
            },
            "8",
            id="XGBoost training with GPU resources",
        ),
        pytest.param({}, {"numNodes": 3}, "3", id="trainJob numNodes is respected"),
        pytest.param(
            {}, {"numNodes": 2}, "2", id="resources not set - defaults to 1 worker per node"
        ),
        pytest.param(
            {"requests": {"example.com/gpu": "2"}},
            {"numNodes": 3},
            "6",
            id="resources set in Runtime only",
        ),
        pytest.param(
            {},
            {"numNodes": 2, "resourcesPerNode": {"requests": {"example.com/gpu": "4"}}},
            "8",
            id="resources set in TrainJob only",
        ),
        pytest.param(
            {"requests": {"example.com/gpu": "1"}},
            {"numNodes": 2, "resourcesPerNode": {"requests": {"example.com/gpu": "3"}}},
            "6",
            id="resources set in both Runtime and TrainJob",
        ),
    ],
)
def test_xgboost_env(
    runtime_resources: dict[str, Any], trainer: dict[str, Any], workers: str
) -> None:
    rt_doc = runtime("xgboost", name="xgboost-distributed")
    if runtime_resources:
        rt_doc.jobs(trainer_job(**runtime_resources))
    rt = admitted(rt_doc.build())
    job = admitted(trainjob("xgb", runtime_name="xgboost-distributed").trainer(**trainer).build())
    assert xgboost.env(job, rt) == [
        {"name": "DMLC_TRACKER_URI", "value": "xgb-node-0-0.xgb"},
        {"name": "DMLC_TRACKER_PORT", "value": "29500"},
        {
            "name": "DMLC_TASK_ID",
            "valueFrom": {
                "fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                }
            },
        },
        {"name": "DMLC_NUM_WORKER", "value": workers},
    ]
    assert xgboost.ports() == [{"containerPort": 29500}]


def test_validation_refuses_exactly_the_names_the_contract_injects() -> None:
    rt = admitted(runtime("xgboost").build())
    injected = [var["name"] for var in xgboost.env(admitted(trainjob("t").build()), rt)]
    own = [{"name": name, "value": "1"} for name in ["MY_OWN", *injected]]
    job = admitted(trainjob("t").trainer(env=own).build())
    errors = xgboost.validate(job, rt)
    assert [e.path for e in errors] == [f"spec.trainer.env[{i}]" for i in range(1, len(own))]
    assert [e.detail for e in errors] == [
        f"{n} is reserved for the XGBoost runtime" for n in injected
    ]


def test_a_jobs_own_port_is_the_trackers() -> None:
    rt = admitted(runtime("xgboost").build())
    job = admitted(trainjob("xgb", runtime_name="xgboost-distributed").build())
    assert xgboost.env(job, rt, 20007)[1] == {"name": "DMLC_TRACKER_PORT", "value": "20007"}
    assert xgboost.ports(20007) == [{"containerPort": 20007}]
