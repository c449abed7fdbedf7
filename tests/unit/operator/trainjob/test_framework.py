"""The plugin framework: the order of ``PLUGINS`` (part of the contract), which plugin runs in
which phase, the one-status-plugin rule, and the phases running in their documented order."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.operator.trainjob import framework, phases
from tests.unit.api.trainers import runtime, trainjob
from tests.unit.operator.trainjob.building import admitted

ORDER = [
    "PlainML",
    "Torch",
    "MPI",
    "JAX",
    "XGBoost",
    "CoScheduling",
    "Volcano",
    "TrainerStatus",
    "JobSet",
]


def test_plugins_keep_their_documented_order() -> None:
    assert [p.name for p in framework.PLUGINS] == ORDER


@pytest.mark.parametrize(
    ("phase", "names"),
    [
        pytest.param(
            phases.EnforceMLPolicy,
            ["PlainML", "Torch", "MPI", "JAX", "XGBoost"],
            id="ML policy: the framework plugins, PlainML first",
        ),
        pytest.param(
            phases.EnforcePodGroupPolicy,
            ["CoScheduling", "Volcano"],
            id="pod-group policy: the gang schedulers",
        ),
        pytest.param(phases.EnforcePodSpec, ["TrainerStatus"], id="pod spec: where progress goes"),
        pytest.param(
            phases.PreBuild, ["Torch", "MPI", "JobSet"], id="pre-build: checks and endpoints"
        ),
        pytest.param(
            phases.Build,
            ["MPI", "CoScheduling", "Volcano", "JobSet"],
            id="build: JobSet last, after every object it may depend on",
        ),
        pytest.param(phases.Status, ["JobSet"], id="status: exactly the JobSet"),
    ],
)
def test_each_phase_runs_its_plugins_in_plugins_order(phase: type, names: list[str]) -> None:
    assert [p.name for p in framework.phase_plugins(phase)] == names


def test_the_registered_plugins_pass_the_whole_set_rules() -> None:
    framework.check()


def test_two_status_plugins_are_refused() -> None:
    doubled = (*framework.PLUGINS, framework.PLUGINS[-1])
    with pytest.raises(ValueError, match="exactly one Status plugin"):
        framework.check(doubled)


class Recorder:
    """A plugin in every phase, noting when it ran and what the Info held then."""

    name = "Recorder"

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def enforce_ml_policy(self, info: Any) -> None:
        self.log.append("ml")

    def enforce_pod_group_policy(self, info: Any) -> None:
        self.log.append("pod-group")

    def enforce_pod_spec(self, info: Any) -> None:
        self.log.append("pod-spec")

    def pre_build(self, info: Any) -> list[Any]:
        self.log.append(f"pre-build(count={info.pod_sets[0].count})")
        return []

    def build(self, info: Any, context: Any) -> list[dict[str, Any]]:
        self.log.append("build")
        return [{"kind": "Marker"}]


def test_phases_run_in_order_and_build_sees_the_ml_policy_counts() -> None:
    log: list[str] = []
    job = admitted(trainjob("a").trainer(numNodes=3).build())
    rt = admitted(runtime("torch").build())
    built = framework.run(job, rt, plugins=(framework.PLUGINS[1], Recorder(log)))
    assert log == ["ml", "pod-group", "pod-spec", "pre-build(count=3)", "build"]
    assert built.objects == ({"kind": "Marker"},)


def test_pre_build_errors_stop_the_build() -> None:
    class Refuses:
        name = "Refuses"

        def pre_build(self, info: Any) -> list[Any]:
            return ["no"]

        def build(self, info: Any, context: Any) -> list[dict[str, Any]]:
            raise AssertionError("build must not run")

    job = admitted(trainjob("a").build())
    rt = admitted(runtime("torch").build())
    built = framework.run(job, rt, plugins=(Refuses(),))
    assert built.errors == ("no",)
    assert built.objects == ()
