"""SDK calls with arguments of the wrong type fail in the caller with a ValueError or TypeError
that names the argument, and submit nothing.

Each example takes a call that would submit a job (``TrainerClient.train``,
``TrainingClient.create_job``), or one that names a job (get, delete, logs, wait), and gives
one argument, or one field of a trainer or initializer, a value of a type it does not take;
everything else is valid. The call must raise a ValueError or TypeError (the Kubeflow SDKs'
types; kubetrain's InvalidTrainer is a ValueError) whose message names what was wrong, and
the namespace must still hold no job afterwards. A TrainingRuntime named like the default
one (torch-distributed) lives in the test's namespace, so a ``train`` call passes the runtime
lookup and reaches everything the SDK checks.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain import kube, sdk
from kubetrain.operator.trainjob import builtin
from tests.apiserver.cascade import run

if TYPE_CHECKING:  # imported by pytest as a plugin, before this module (see below)
    from tests.reliability.security_fixtures import Figures

pytest_plugins = ["tests.reliability.security_fixtures"]  # the bad_input_figures fixture

TRAINJOBS: Final = kube.Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", kind="TrainJob")
PYTORCHJOBS: Final = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")
TFJOBS: Final = kube.Resource("kubeflow.org", "v1", "tfjobs", kind="TFJob")
RUNTIMES: Final = kube.Resource(
    "trainer.kubeflow.org", "v1alpha1", "trainingruntimes", kind="TrainingRuntime"
)


def train(epochs: int = 1) -> None:
    """A function the SDK can ship (its source is readable)."""
    print("epochs", epochs)


def train_v1(parameters: dict) -> None:
    print(parameters)


class Opaque:
    """An object of no type any argument takes."""

    def __repr__(self) -> str:
        return "Opaque()"


# Values of types that no argument below takes, whatever it takes.
ALIEN: Final = st.sampled_from([Opaque(), b"bytes", 1.5j, frozenset({1})])


@pytest.fixture
def backend(kubeconfig: str, namespace: str) -> sdk.KubernetesBackendConfig:
    async def install() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            for blueprint in builtin.runtimes():
                if blueprint["metadata"]["name"] != "torch-distributed":
                    continue
                runtime = copy.deepcopy(blueprint)
                runtime["kind"] = "TrainingRuntime"
                await client.create(RUNTIMES, runtime, namespace=namespace)

    run(install())
    return sdk.KubernetesBackendConfig(namespace=namespace, config_file=kubeconfig)


@pytest.fixture
def trainer_client(backend: sdk.KubernetesBackendConfig) -> Iterator[sdk.TrainerClient]:
    with sdk.TrainerClient(backend) as client:
        yield client


@pytest.fixture
def training_client(kubeconfig: str, namespace: str) -> Iterator[sdk.TrainingClient]:
    with sdk.TrainingClient(config_file=kubeconfig, namespace=namespace) as client:
        yield client


def jobs_in(kubeconfig: str, namespace: str) -> list[str]:
    async def names() -> list[str]:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            found = []
            for resource in (TRAINJOBS, PYTORCHJOBS, TFJOBS):
                listed = await client.list(resource, namespace=namespace)
                found += [item["metadata"]["name"] for item in listed["items"]]
            return found

    return run(names())


def refused(call: Callable[[], Any], *names: str) -> str:
    """``call()`` raises a ValueError or TypeError whose message names one of ``names``."""
    with pytest.raises((ValueError, TypeError)) as raised:
        call()
    message = str(raised.value)
    assert message, "an error without a message"
    assert any(name in message for name in names), message
    return message


def scaled(examples: int) -> int:
    """``examples`` times ``$KUBETRAIN_FUZZ_SCALE`` (default 1): a longer hunt on demand."""
    return max(1, round(examples * float(os.environ.get("KUBETRAIN_FUZZ_SCALE", "1"))))


SETTINGS: Final = settings(
    max_examples=scaled(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# --- TrainerClient.train ----------------------------------------------------------------------

TRAINER_FIELDS: Final = {
    # field: wrong values (plus ALIEN)
    "image": [5, ["img"]],
    "packages_to_install": ["torch", 5, [1]],
    "pip_index_urls": ["https://pypi.org/simple", [1]],
    "num_nodes": ["2", 1.5, True, 0, -1, [1]],
    "resources_per_node": [5, "2 cpus", [1], {"cpu": []}, {"cpu": True}, {5: 1}],
    "env": [5, "A=1", ["A"], {"A": [1]}, {"A": None}, {5: "a"}],
    "num_proc_per_node": [[1], {}, 1.5, "lots", 0, True],
}
CUSTOM_ONLY: Final = {"func": [5, "train", None], "func_args": ["x", [1], {1: 2}]}
COMMAND_ONLY: Final = {"command": [5, "python3 t.py", [1], None, []], "args": [5, "x", [1]]}
INITIALIZER_FIELDS: Final = {
    "storage_uri": [5, None, "ftp://x", ["hf://x"]],
    "ignore_patterns": ["*.bin", [1]],
    "access_token": [5, ["t"]],
}


def valid_trainer(kind: str, **fields: Any) -> Any:
    if kind == "custom":
        return sdk.CustomTrainer(**{"func": train, "func_args": {"epochs": 2}, **fields})
    return sdk.CommandTrainer(**{"command": ["python3", "-c", "print(1)"], **fields})


@st.composite
def wrong_train_calls(draw: st.DrawFn) -> tuple[dict[str, Any], tuple[str, ...]]:
    """train() keyword arguments with exactly one wrong value, and words its error names."""
    where = draw(st.sampled_from(["argument", "trainer", "initializer"]))
    if where == "argument":
        name = draw(st.sampled_from(["runtime", "trainer", "initializer", "options"]))
        wrong = {
            "runtime": [5, ["torch-distributed"], {"name": "x"}],
            "trainer": [5, "custom", {"func": train}, [valid_trainer("command")]],
            "initializer": [5, "hf://x", {"dataset": "hf://x"}],
            "options": [5, "name", [5], [sdk.Name(5)], [sdk.Labels([1])], [sdk.Labels({"a": 1})]],
        }[name]
        value = draw(st.sampled_from(wrong) | ALIEN)
        call = {"runtime": "torch-distributed", "trainer": valid_trainer("command"), name: value}
        return call, (name,)
    if where == "trainer":
        kind = draw(st.sampled_from(["custom", "command"]))
        fields = {**TRAINER_FIELDS, **(CUSTOM_ONLY if kind == "custom" else COMMAND_ONLY)}
        field = draw(st.sampled_from(sorted(fields)))
        value = draw(st.sampled_from(fields[field]) | ALIEN)
        extra = {"packages_to_install": ["numpy"]} if field == "pip_index_urls" else {}
        trainer = valid_trainer(kind, **extra, **{field: value})
        return {"runtime": "torch-distributed", "trainer": trainer}, (field, "func")
    field = draw(st.sampled_from(sorted(INITIALIZER_FIELDS)))
    value = draw(st.sampled_from(INITIALIZER_FIELDS[field]) | ALIEN)
    source = sdk.HuggingFaceDatasetInitializer(storage_uri="hf://kubetrain/data")
    setattr(source, field, value)
    call = {
        "runtime": "torch-distributed",
        "trainer": valid_trainer("command"),
        "initializer": sdk.Initializer(dataset=source),
    }
    return call, (field, "dataset")


@SETTINGS
@given(case=wrong_train_calls())
def test_train_with_a_wrong_type_raises_naming_it_and_submits_nothing(
    trainer_client: sdk.TrainerClient,
    kubeconfig: str,
    namespace: str,
    bad_input_figures: Figures,
    case: tuple[dict[str, Any], tuple[str, ...]],
) -> None:
    call, names = case
    refused(lambda: trainer_client.train(**call), *names)
    bad_input_figures.add("inputs: sdk calls")
    assert jobs_in(kubeconfig, namespace) == []


def test_a_valid_train_call_does_submit(
    trainer_client: sdk.TrainerClient, kubeconfig: str, namespace: str
) -> None:
    """What the wrong calls above change one thing of is itself accepted: the test can fail."""
    name = trainer_client.train(runtime="torch-distributed", trainer=valid_trainer("command"))
    assert jobs_in(kubeconfig, namespace) == [name]


# --- TrainingClient.create_job ---------------------------------------------------------------

CREATE_JOB: Final = {
    # argument: wrong values (plus ALIEN)
    "job": [5, "job.yaml", [], {"kind": "PyTorchJob", "metadata": 5}],
    "name": [5, ["a"]],
    "namespace": [5, ["ns"]],
    "labels": [5, ["a"], {"a": 1}, {1: "a"}],
    "annotations": [5, "a=b", {"a": None}],
    "job_kind": [5, "NoSuchJob"],
    "base_image": [5, ["img"]],
    "train_func": [5, "train_v1"],
    "parameters": ["x", [1]],
    "num_workers": ["2", 0, -1, True, 2.5, None],
    "num_procs_per_worker": [[1], {}, 1.5, 0, True],
    "resources_per_worker": [5, "x", [1], {"cpu": []}],
    "num_chief_replicas": ["1", -1, 1.5],
    "num_ps_replicas": ["1", -1, 1.5],
    "packages_to_install": ["torch", 5, [1]],
    "pip_index_url": [5, ["https://pypi.org/simple"]],
    "env_vars": [5, "A=1", [1], [{"value": "x"}]],
}


@st.composite
def wrong_create_calls(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    name = draw(st.sampled_from(sorted(CREATE_JOB)))
    value = draw(st.sampled_from(CREATE_JOB[name]) | ALIEN)
    if name == "job":
        return {"job": value}, name
    call: dict[str, Any] = {"name": "fuzzed", "train_func": train_v1, name: value}
    if name in ("num_chief_replicas", "num_ps_replicas"):
        call["job_kind"] = "TFJob"
    if name == "pip_index_url":
        call["packages_to_install"] = ["numpy"]
    if name == "base_image":
        del call["train_func"]
    return call, name


@SETTINGS
@given(case=wrong_create_calls())
def test_create_job_with_a_wrong_type_raises_naming_it_and_submits_nothing(
    training_client: sdk.TrainingClient,
    kubeconfig: str,
    namespace: str,
    bad_input_figures: Figures,
    case: tuple[dict[str, Any], str],
) -> None:
    call, name = case
    names = (name, "train_func", "job_kind") if name == "job" else (name, "func")
    refused(lambda: training_client.create_job(**call), *names)
    bad_input_figures.add("inputs: sdk calls")
    assert jobs_in(kubeconfig, namespace) == []


def test_a_valid_create_job_call_does_submit(
    training_client: sdk.TrainingClient, kubeconfig: str, namespace: str
) -> None:
    assert training_client.create_job(name="fine", train_func=train_v1) == "fine"
    assert jobs_in(kubeconfig, namespace) == ["fine"]


# --- calls that name a job --------------------------------------------------------------------

NOT_A_NAME: Final = st.sampled_from([None, 5, ["job"], {"name": "job"}]) | ALIEN


@SETTINGS
@given(name=NOT_A_NAME, call=st.sampled_from(["get", "delete", "logs", "events", "conditions"]))
def test_a_call_that_names_a_job_refuses_what_is_no_name(
    trainer_client: sdk.TrainerClient,
    training_client: sdk.TrainingClient,
    kubeconfig: str,
    namespace: str,
    bad_input_figures: Figures,
    name: Any,
    call: str,
) -> None:
    """``None`` above all: a delete of "no name" would be a delete of the whole collection."""
    training_client.create_job(name="keep-me", train_func=train_v1)
    calls: dict[str, list[Callable[[], Any]]] = {
        "get": [lambda: trainer_client.get_job(name), lambda: training_client.get_job(name)],
        "delete": [
            lambda: trainer_client.delete_job(name),
            lambda: training_client.delete_job(name),
        ],
        "logs": [
            lambda: list(trainer_client.get_job_logs(name)),
            lambda: training_client.get_job_logs(name),
        ],
        "events": [lambda: trainer_client.get_job_events(name)],
        "conditions": [lambda: training_client.get_job_conditions(name)],
    }
    for attempt in calls[call]:
        with pytest.raises((ValueError, TypeError)):
            attempt()
        bad_input_figures.add("inputs: sdk calls")
    assert jobs_in(kubeconfig, namespace) == ["keep-me"]
    training_client.delete_job("keep-me")
