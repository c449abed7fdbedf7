"""Helpers for the TrainJob plugin tests: admit manifests, run the plugin phases, read results.

``build(job_doc, runtime_doc)`` runs every phase up to build on the admitted (defaulted) objects,
as the reconciler does on a runtime snapshot, and returns the framework's ``Built``.
"""

from __future__ import annotations

from typing import Any

from kubetrain import api
from kubetrain.operator.trainjob import framework, phases
from kubetrain.operator.trainjob.plugins import trainerstatus
from tests.unit.api import trainers

UID = "0000-uid"


def admitted(doc: dict[str, Any]) -> Any:
    verdict = api.review(doc)
    assert verdict.ok, verdict.messages()
    return verdict.obj


def build(
    job_doc: dict[str, Any],
    runtime_doc: dict[str, Any],
    *,
    key_pair: tuple[bytes, bytes] | None = None,
    host_port: int | None = None,
) -> framework.Built:
    job = admitted(job_doc)
    job.metadata.uid = UID
    runtime = admitted(runtime_doc)
    context = phases.BuildContext(ssh_key_pair=key_pair, host_port=host_port)
    return framework.run(job, runtime, context)


def objects(built: framework.Built, kind: str) -> list[dict[str, Any]]:
    return [o for o in built.objects if o.get("kind") == kind]


def jobset(built: framework.Built) -> dict[str, Any]:
    (found,) = objects(built, "JobSet")
    return found


def replicated_job(built: framework.Built, name: str) -> dict[str, Any]:
    for rjob in jobset(built)["spec"]["replicatedJobs"]:
        if rjob["name"] == name:
            return rjob
    raise AssertionError(f"no replicated job {name}")


def container(built: framework.Built, job: str, name: str = "node") -> dict[str, Any]:
    spec = replicated_job(built, job)["template"]["spec"]["template"]["spec"]
    for item in spec["containers"]:
        if item["name"] == name:
            return item
    raise AssertionError(f"no container {name} in {job}")


# Where the trainer reports progress (the TrainerStatus plugin); its own tests check them, the
# env tables of the other plugins leave them out.
REPORT_ENV = frozenset({trainerstatus.NAME_ENV, trainerstatus.NAMESPACE_ENV})


def env(
    built: framework.Built, job: str = "node", name: str = "node", *, everything: bool = False
) -> dict[str, Any]:
    """``{name: value or valueFrom}`` of a container's env, in order (without
    :data:`REPORT_ENV` unless ``everything``)."""
    return {
        e["name"]: e.get("value", e.get("valueFrom"))
        for e in container(built, job, name).get("env") or []
        if everything or e["name"] not in REPORT_ENV
    }


def env_names(built: framework.Built, job: str = "node", name: str = "node") -> list[str]:
    return [
        e["name"]
        for e in container(built, job, name).get("env") or []
        if e["name"] not in REPORT_ENV
    ]


def torchtune_runtime(name: str = "torchtune-llama3.2-1b") -> dict[str, Any]:
    """A torch runtime whose node command is ``tune run`` with the immutable settings."""
    node: dict[str, Any] = {
        "name": "node",
        "image": "x",
        "command": [
            "tune",
            "run",
            "output_dir=/workspace/output",
            "tokenizer.path=/workspace/model/original/tokenizer.model",
            "checkpointer.checkpoint_dir=/workspace/model",
        ],
    }
    return (
        trainers.runtime("torch", name)
        .jobs(trainers.replicated_job("node", ancestor="trainer", containers=[node]))
        .build()
    )
