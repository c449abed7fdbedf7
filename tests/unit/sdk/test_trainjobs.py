"""TrainJob manifests from CustomTrainer and CommandTrainer, under each kind of runtime
(kubetrain.sdk._trainjobs)."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from kubetrain import api
from kubetrain.sdk import (
    Annotations,
    CommandTrainer,
    CustomTrainer,
    HuggingFaceModelInitializer,
    Initializer,
    InvalidTrainer,
    Labels,
    Name,
    S3DatasetInitializer,
    _runtimes,
    _trainjobs,
)
from tests.unit.sdk import trainfuncs


def runtime(policy: str | None, *, kind: str = "ClusterTrainingRuntime") -> dict[str, Any]:
    rjobs = [
        {
            "name": "launcher" if policy == "mpi" else "node",
            "template": {
                "metadata": {"labels": {_runtimes.ANCESTOR_LABEL: "trainer"}},
                "spec": {
                    "template": {
                        "spec": {"containers": [{"name": "node", "image": "img", "command": ["x"]}]}
                    }
                },
            },
        }
    ]
    ml_policy: dict[str, Any] = {"numNodes": 1}
    if policy:
        ml_policy[policy] = {}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": {"name": f"{policy or 'plain'}-runtime"},
        "spec": {"mlPolicy": ml_policy, "template": {"spec": {"replicatedJobs": rjobs}}},
    }


def build(trainer: Any, policy: str | None = "torch", **fields: Any) -> dict[str, Any]:
    return _trainjobs.build(
        name="job", namespace="ns", runtime=runtime(policy), trainer=trainer, **fields
    )


def test_names_are_kubeflows_a_letter_then_eleven_hex_digits() -> None:
    rng = random.Random(7)
    names = {_trainjobs.generate_name(rng) for _ in range(50)}
    assert len(names) == 50
    assert all(re.fullmatch(r"[a-z][0-9a-f]{11}", n) for n in names)


@pytest.mark.parametrize(
    ("policy", "prefix"),
    [
        pytest.param(
            "torch",
            ["torchrun", "--no-python", "python3", "-u", "-c"],
            id="under torch, torchrun starts each node's processes",
        ),
        pytest.param(None, ["python3", "-u", "-c"], id="a plain runtime runs python3"),
        pytest.param("jax", ["python3", "-u", "-c"], id="jax runs python3 on each node"),
        pytest.param("xgboost", ["python3", "-u", "-c"], id="xgboost runs python3 on each node"),
    ],
)
def test_a_function_becomes_the_trainer_command(policy: str | None, prefix: list[str]) -> None:
    trainer = CustomTrainer(func=trainfuncs.self_contained, func_args={"epochs": 3})
    job = build(trainer, policy)
    command = job["spec"]["trainer"]["command"]
    assert command[:-1] == prefix
    assert command[-1].rstrip().endswith("self_contained(**{'epochs': 3})")
    assert "args" not in job["spec"]["trainer"]
    assert {"name": "PYTHONUNBUFFERED", "value": "1"} in job["spec"]["trainer"]["env"]


def test_under_mpi_the_function_is_the_args_of_the_runtimes_mpirun() -> None:
    job = build(CustomTrainer(func=trainfuncs.no_arguments), "mpi")
    trainer = job["spec"]["trainer"]
    assert "command" not in trainer
    assert trainer["args"][:3] == ["python3", "-u", "-c"]


def test_the_manifest_names_its_runtime_and_passes_admission() -> None:
    trainer = CustomTrainer(
        func=trainfuncs.self_contained,
        func_args={"epochs": 1},
        num_nodes=2,
        resources_per_node={"cpu": 2, "memory": "4Gi", "gpu": 1},
        env={"A": "1"},
        num_proc_per_node=2,
        image="example/train:1",
    )
    job = build(trainer)
    assert job["metadata"] == {"name": "job", "namespace": "ns"}
    assert job["spec"]["runtimeRef"] == {
        "name": "torch-runtime",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    spec = job["spec"]["trainer"]
    assert spec["numNodes"] == 2
    assert spec["numProcPerNode"] == 2
    assert spec["image"] == "example/train:1"
    assert spec["env"][0] == {"name": "A", "value": "1"}
    amounts = {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}
    assert spec["resourcesPerNode"] == {"requests": amounts, "limits": amounts}
    reviewed = api.review(job)
    assert reviewed.ok, reviewed.messages()


def test_the_user_keeps_control_of_unbuffered_output() -> None:
    trainer = CustomTrainer(func=trainfuncs.no_arguments, env={"PYTHONUNBUFFERED": "0"})
    env = build(trainer)["spec"]["trainer"]["env"]
    assert env == [{"name": "PYTHONUNBUFFERED", "value": "0"}]


def test_a_command_trainer_gives_command_and_args_as_they_are() -> None:
    job = build(CommandTrainer(command=["python3", "train.py"], args=["--epochs", "2"]))
    assert job["spec"]["trainer"] == {"command": ["python3", "train.py"], "args": ["--epochs", "2"]}


def test_packages_are_installed_before_the_command_without_requoting_it() -> None:
    trainer = CommandTrainer(
        command=["python3", "-c", "print('$HOME `x`')"],
        packages_to_install=["numpy>=2", "my pkg"],
        pip_index_urls=["https://mirror/simple", "https://extra/simple"],
    )
    command = build(trainer)["spec"]["trainer"]["command"]
    assert command[:2] == ["bash", "-c"]
    script = command[2]
    assert (
        "python3 -m pip install --quiet --no-warn-script-location --disable-pip-version-check "
        "--index-url https://mirror/simple --extra-index-url https://extra/simple "
        "'numpy>=2' 'my pkg'" in script
    )
    assert script.rstrip().endswith('exec "$@"')
    # the command itself follows $0 as positional arguments: no shell parses it
    assert command[3:] == ["kubetrain-install", "python3", "-c", "print('$HOME `x`')"]


def test_packages_under_mpi_are_refused() -> None:
    trainer = CustomTrainer(func=trainfuncs.no_arguments, packages_to_install=["numpy"])
    with pytest.raises(InvalidTrainer, match="not supported with an MPI runtime"):
        build(trainer, "mpi")


@pytest.mark.parametrize(
    ("trainer", "expected"),
    [
        pytest.param(
            CustomTrainer(func=trainfuncs.no_arguments, num_nodes=0),
            "CustomTrainer.num_nodes: 0; accepted: a whole number, 1 or more",
            id="zero nodes are refused",
        ),
        pytest.param(
            CustomTrainer(func=trainfuncs.no_arguments, num_proc_per_node="many"),
            "CustomTrainer.num_proc_per_node: 'many'; accepted:",
            id="processes per node are a number or auto/cpu/gpu",
        ),
        pytest.param(
            CustomTrainer(func=trainfuncs.no_arguments, resources_per_node={"cpu": [1]}),
            "CustomTrainer.resources_per_node['cpu']: [1]; accepted: a quantity",
            id="a resource amount is a quantity",
        ),
        pytest.param(
            CommandTrainer(command="python3 train.py"),
            "CommandTrainer.command: 'python3 train.py'; accepted: a list of strings",
            id="a command is a list, not a shell line",
        ),
        pytest.param(
            CommandTrainer(command=[]),
            "CommandTrainer.command: empty",
            id="an empty command is refused",
        ),
        pytest.param(
            CustomTrainer(func=trainfuncs.uses_module_global),
            "CustomTrainer.func: uses_module_global is not self-contained",
            id="the function is checked when the job is built",
        ),
    ],
)
def test_what_cannot_be_submitted_is_refused_with_the_field(trainer: Any, expected: str) -> None:
    with pytest.raises(InvalidTrainer) as raised:
        build(trainer)
    assert expected in str(raised.value)


def test_options_name_label_and_annotate_the_job() -> None:
    job = build(
        None,
        options=[Name("mine"), Labels({"team": "a"}), Annotations({"note": "x"})],
    )
    assert job["metadata"] == {
        "name": "mine",
        "namespace": "ns",
        "labels": {"team": "a"},
        "annotations": {"note": "x"},
    }
    assert "trainer" not in job["spec"]


def test_initializers_carry_their_uri_and_other_fields_as_env() -> None:
    initializer = Initializer(
        dataset=S3DatasetInitializer(storage_uri="s3://bucket/data", endpoint="http://minio"),
        model=HuggingFaceModelInitializer(storage_uri="hf://org/model", access_token="t"),
    )
    spec = build(None, initializer=initializer)["spec"]["initializer"]
    assert spec["dataset"] == {
        "storageUri": "s3://bucket/data",
        "env": [{"name": "ENDPOINT", "value": "http://minio"}],
    }
    assert spec["model"]["storageUri"] == "hf://org/model"
    assert {"name": "IGNORE_PATTERNS", "value": "*.msgpack,*.h5,*.bin,*.pt,*.pth"} in spec["model"][
        "env"
    ]
    assert {"name": "ACCESS_TOKEN", "value": "t"} in spec["model"]["env"]


def test_an_initializer_uri_of_the_wrong_scheme_is_refused() -> None:
    initializer = Initializer(dataset=S3DatasetInitializer(storage_uri="hf://x"))
    with pytest.raises(InvalidTrainer, match=r"Initializer.dataset.storage_uri: 'hf://x'"):
        build(None, initializer=initializer)


def test_the_trainer_container_of_a_runtime_is_found_by_its_ancestor_label() -> None:
    found = _runtimes.trainer_container(runtime("mpi"))
    assert found is not None
    assert found["command"] == ["x"]
    assert _runtimes.policy_of(runtime("mpi")) == "mpi"
    assert _runtimes.policy_of(runtime(None)) is None
