"""The TorchTune runtimes as shipped (``torchtune-llama3.2-1b`` and the others) under the
TorchTune plugin: the command a ``tune run`` TrainJob gets on each, what the plugin refuses in
upstream's words (``torchtune.go`` at HEAD: LoRA across nodes, immutable settings in the args),
the QLoRA/DoRA switches read as upstream's ``isBoolArgEnabled``, and a TrainJob that names its
own recipe and config left alone (the way to run LoRA on two nodes of a small model)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kubetrain.local.node import podspec, tools
from kubetrain.operator.trainjob import builtin
from kubetrain.operator.trainjob.plugins import torchtune
from tests.unit.api.trainers import trainjob
from tests.unit.operator.trainjob.building import build, container, env, replicated_job

CPU = {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}}
SETTINGS = [
    "output_dir=/workspace/output",
    "tokenizer.path=/workspace/model/original/tokenizer.model",
    "checkpointer.checkpoint_dir=/workspace/model",
]
LORA = ["model.lora_attn_modules=[q_proj,v_proj,output_proj]", "model.lora_rank=8"]


def shipped(name: str) -> dict[str, Any]:
    """The built-in runtime of that name, as the package ships it."""
    for doc in builtin.runtimes():
        if doc["metadata"]["name"] == name:
            return doc
    raise AssertionError(f"no built-in runtime {name}")


def tune_run(runtime: str, **trainer: Any) -> Any:
    job = trainjob("job", runtime_name=runtime).trainer(command=["tune", "run"], **trainer)
    return build(job.build(), shipped(runtime))


@pytest.mark.parametrize(
    ("runtime", "trainer", "expected"),
    [
        pytest.param(
            "torchtune-llama3.2-1b",
            {"args": ["dtype=bf16", *LORA]},
            [
                "--rdzv_endpoint=job-node-0-0.job:29500",
                "lora_finetune_distributed",
                "--config",
                "llama3_2/1B_lora",
                *SETTINGS,
            ],
            id="llama 1B as shipped (2 GPUs a node): LoRA across the node's GPUs",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"numProcPerNode": 1, "resourcesPerNode": CPU, "args": LORA},
            [
                "lora_finetune_single_device",
                "--config",
                "llama3_2/1B_lora_single_device",
                *SETTINGS,
            ],
            id="llama 1B on one CPU process: the single-device LoRA recipe",
        ),
        pytest.param(
            "torchtune-llama3.2-3b",
            {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "1"}}, "args": []},
            [
                "full_finetune_single_device",
                "--config",
                "llama3_2/3B_full_single_device",
                *SETTINGS,
            ],
            id="llama 3B on one GPU: full single-device",
        ),
        pytest.param(
            "torchtune-qwen2.5-1.5b",
            {"args": LORA},
            [
                "--rdzv_endpoint=job-node-0-0.job:29500",
                "lora_finetune_distributed",
                "--config",
                "qwen2_5/1.5B_lora",
                "output_dir=/workspace/output",
                "tokenizer.path=/workspace/model/vocab.json",
                "tokenizer.merges_file=/workspace/model/merges.txt",
                "checkpointer.checkpoint_dir=/workspace/model",
            ],
            id="qwen 1.5B: its vocab and merges files are the runtime's",
        ),
        pytest.param(
            "torchtune-llama3.3-70b",
            {"args": ["epochs=1"]},
            [
                "--rdzv_endpoint=job-node-0-0.job:29500",
                "full_finetune_distributed",
                "--config",
                "llama3_3/70B_full_multinode",
                *SETTINGS,
            ],
            id="llama 70B: two nodes by default, the multi-node recipe",
        ),
    ],
)
def test_a_tune_run_trainjob_gets_the_recipe_config_and_the_runtime_settings(
    runtime: str, trainer: dict[str, Any], expected: list[str]
) -> None:
    built = tune_run(runtime, **trainer)
    assert not built.errors, [str(e) for e in built.errors]
    node = container(built, "node")
    assert node["command"] == ["tune", "run", *expected]
    assert node["args"] == trainer["args"]
    assert "PET_MASTER_ADDR" not in env(built), "torchtune gets the endpoint on the command"


def test_the_initializers_keep_upstream_images_with_no_command_and_run_kubetrains_locally() -> None:
    built = tune_run("torchtune-llama3.2-1b", numProcPerNode=1, resourcesPerNode=CPU, args=LORA)
    for step in ("dataset-initializer", "model-initializer"):
        initializer = container(built, step, step)
        assert initializer["image"] == f"ghcr.io/kubeflow/trainer/{step}"
        assert "command" not in initializer
        assert {"name": "initializer", "mountPath": "/workspace"} in initializer["volumeMounts"]
        program = tools.ENTRYPOINTS[podspec.image_name(initializer["image"])]
        assert program == ("python3", "-m", "kubetrain.initializers", step.split("-")[0])
    node = replicated_job(built, "node")
    assert node["dependsOn"] == [
        {"name": "dataset-initializer", "status": "Complete"},
        {"name": "model-initializer", "status": "Complete"},
    ]


@pytest.mark.parametrize(
    ("args", "expected_config"),
    [
        pytest.param(["model.quantize_base=True"], "_qlora_single_device", id="QLoRA"),
        pytest.param(["model.quantize_base=False", *LORA], "_lora_single_device", id="False: LoRA"),
        pytest.param(
            [*LORA, "model.quantize_base=True", "model.use_dora=True"],
            "_lora_single_device",
            id="DoRA wins over quantize_base",
        ),
        pytest.param(
            [*LORA, "model.quantize_base=True", "model.use_dora=False"],
            "_qlora_single_device",
            id="use_dora=False keeps QLoRA",
        ),
    ],
)
def test_qlora_and_dora_are_on_only_when_their_argument_says_true(
    args: list[str], expected_config: str
) -> None:
    built = tune_run("torchtune-llama3.2-1b", numProcPerNode=1, resourcesPerNode=CPU, args=args)
    assert not built.errors
    command = container(built, "node")["command"]
    assert command[command.index("--config") + 1] == "llama3_2/1B" + expected_config


@pytest.mark.parametrize(
    ("runtime", "trainer", "messages"),
    [
        pytest.param(
            "torchtune-llama3.3-70b",
            {"numNodes": 2, "args": LORA},
            [
                "spec.trainer.numNodes: Invalid value: 2: LoRA fine-tuning is not supported "
                "for multi-node training in TorchTune"
            ],
            id="LoRA on several nodes",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"numProcPerNode": 1, "args": ["epochs=1", "output_dir=/tmp/mine"]},
            [
                'spec.trainer.args[1]: Invalid value: "output_dir=/tmp/mine": must not set '
                'immutable config "output_dir" in trainer args; it is managed by the runtime'
            ],
            id="an immutable setting in the args",
        ),
    ],
)
def test_what_upstream_refuses_is_refused_in_its_words(
    runtime: str, trainer: dict[str, Any], messages: list[str]
) -> None:
    built = tune_run(runtime, **trainer)
    assert [str(e) for e in built.errors] == messages
    assert built.objects == ()


def test_a_trainjob_with_its_own_recipe_runs_lora_on_two_nodes_of_a_small_model() -> None:
    """As upstream, the recipe table and its limits apply only to ``tune run`` as such."""
    command = [
        "tune",
        "run",
        "--rdzv_endpoint=$(PET_MASTER_ADDR):$(PET_MASTER_PORT)",
        "lora_finetune_distributed",
        "--config",
        "llama3_2/1B_lora",
    ]
    job = trainjob("job", runtime_name="torchtune-llama3.2-1b").trainer(
        command=command, args=LORA, numNodes=2, numProcPerNode=1, resourcesPerNode=CPU
    )
    built = build(job.build(), shipped("torchtune-llama3.2-1b"))
    assert not built.errors, [str(e) for e in built.errors]
    node = container(built, "node")
    assert node["command"] == command
    assert env(built)["PET_MASTER_ADDR"] == "job-node-0-0.job"
    assert env(built)["PET_NNODES"] == "2"
    assert replicated_job(built, "node")["template"]["spec"]["parallelism"] == 2


def test_the_shipped_runtimes_carry_upstreams_immutable_settings() -> None:
    for name, model in (
        ("torchtune-llama3.2-1b", "llama3_2/1B"),
        ("torchtune-llama3.2-3b", "llama3_2/3B"),
        ("torchtune-qwen2.5-1.5b", "qwen2_5/1.5B"),
        ("torchtune-llama3.3-70b", "llama3_3/70B"),
    ):
        doc = shipped(name)
        assert torchtune.model(name) == model
        assert doc["metadata"]["labels"] == {"trainer.kubeflow.org/framework": "torchtune"}
        rjobs = doc["spec"]["template"]["spec"]["replicatedJobs"]
        assert [r["name"] for r in rjobs] == ["dataset-initializer", "model-initializer", "node"]
        node = rjobs[2]["template"]["spec"]["template"]["spec"]["containers"][0]
        assert node["command"][:2] == ["tune", "run"]
        keys = {item.split("=")[0] for item in node["command"] if "=" in item}
        assert {"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir"} <= keys, name
        claim = doc["spec"]["template"]["spec"]["volumeClaimPolicies"][0]["templates"][0]
        assert claim["metadata"]["name"] == "initializer"
    assert (
        yaml.safe_load(builtin.files()["torchtune_llama3_3_70b.yaml"])["spec"]["mlPolicy"][
            "numNodes"
        ]
        == 2
    )
