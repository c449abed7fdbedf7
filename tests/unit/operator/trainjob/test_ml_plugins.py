"""The ML-policy plugins put the env contracts of reference §4.5 where upstream puts them: on
container ``node`` of the trainer job, after the TrainJob's env, with port 29500, and the pod
counts into ``parallelism``/``completions``. Tables ported from upstream's plugin tests (torch,
jax, xgboost, plainml, mpi) and the integration "create with ... runtime" cases.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kubetrain import api
from tests.unit.api.trainers import replicated_job, runtime, trainer_job, trainjob
from tests.unit.operator.trainjob.building import (
    build,
    container,
    env,
    env_names,
    objects,
    torchtune_runtime,
)
from tests.unit.operator.trainjob.building import (
    replicated_job as built_job,
)

RANK = {
    "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
}


@pytest.mark.parametrize(
    ("job_doc", "runtime_doc", "expected"),
    [
        pytest.param(
            trainjob("job")
            .trainer(numNodes=2, resourcesPerNode={"requests": {"cpu": "4"}})
            .build(),
            runtime("torch").build(),
            {
                "PET_NNODES": "2",
                "PET_NPROC_PER_NODE": "4",
                "PET_NODE_RANK": RANK,
                "PET_MASTER_ADDR": "job-node-0-0.job",
                "PET_MASTER_PORT": "29500",
            },
            id="torch: numNodes 2, auto nproc resolves to the CPU request",
        ),
        pytest.param(
            trainjob("job").trainer(numProcPerNode="gpu").build(),
            runtime("torch").ml_policy(numNodes=3).build(),
            {
                "PET_NNODES": "3",
                "PET_NPROC_PER_NODE": "gpu",
                "PET_NODE_RANK": RANK,
                "PET_MASTER_ADDR": "job-node-0-0.job",
                "PET_MASTER_PORT": "29500",
            },
            id="torch: the runtime's numNodes, nproc gpu stays literal",
        ),
        pytest.param(
            trainjob("job").trainer(numNodes=3).build(),
            runtime("torch")
            .policy("torch", elasticPolicy={"minNodes": 2, "maxNodes": 4, "maxRestarts": 3})
            .build(),
            {
                "PET_NNODES": "2:4",
                "PET_NPROC_PER_NODE": "1",
                "PET_NODE_RANK": RANK,
                "PET_MASTER_ADDR": "job-node-0-0.job",
                "PET_MASTER_PORT": "29500",
                "PET_RDZV_BACKEND": "c10d",
                "PET_RDZV_ENDPOINT": "job-node-0-0.job:29500",
                "PET_MAX_RESTARTS": "3",
                "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
            },
            id="torch elastic: min:max nodes, the c10d rendezvous on rank 0, a store per round",
        ),
        pytest.param(
            trainjob("job").trainer(numNodes=3).build(),
            runtime("jax").build(),
            {
                "JAX_NUM_PROCESSES": "3",
                "JAX_PROCESS_ID": RANK,
                "JAX_COORDINATOR_ADDRESS": "job-node-0-0.job:29500",
            },
            id="jax: processes, process id and coordinator",
        ),
        pytest.param(
            trainjob("job")
            .trainer(numNodes=2, resourcesPerNode={"limits": {"nvidia.com/gpu": "4"}})
            .build(),
            runtime("xgboost").build(),
            {
                "DMLC_TRACKER_URI": "job-node-0-0.job",
                "DMLC_TRACKER_PORT": "29500",
                "DMLC_TASK_ID": RANK,
                "DMLC_NUM_WORKER": "8",
            },
            id="xgboost: one worker per GPU on every node",
        ),
        pytest.param(
            trainjob("job").trainer(numNodes=2).build(),
            runtime("xgboost").build(),
            {
                "DMLC_TRACKER_URI": "job-node-0-0.job",
                "DMLC_TRACKER_PORT": "29500",
                "DMLC_TASK_ID": RANK,
                "DMLC_NUM_WORKER": "2",
            },
            id="xgboost: one worker per CPU node",
        ),
        pytest.param(
            trainjob("job").trainer(numNodes=2).build(),
            runtime(None).build(),
            {},
            id="plainml: no framework env",
        ),
    ],
)
def test_framework_env_lands_on_the_trainer_node_container(
    job_doc: dict[str, Any], runtime_doc: dict[str, Any], expected: dict[str, Any]
) -> None:
    built = build(job_doc, runtime_doc)
    assert not built.errors
    assert env(built) == expected
    ports = [p["containerPort"] for p in container(built, "node").get("ports") or []]
    assert ports == ([29500] if expected else [])


@pytest.mark.parametrize(
    ("policy", "num_nodes", "expected"),
    [
        pytest.param("torch", None, 1, id="torch: the runtime's numNodes (default 1)"),
        pytest.param("torch", 4, 4, id="torch: the TrainJob's numNodes"),
        pytest.param("jax", 3, 3, id="jax: the TrainJob's numNodes"),
        pytest.param("xgboost", 5, 5, id="xgboost: the TrainJob's numNodes"),
        pytest.param(None, 2, 2, id="plainml: the TrainJob's numNodes"),
        pytest.param(None, 0, 0, id="plainml: zero nodes is allowed"),
    ],
)
def test_the_trainer_count_becomes_parallelism_and_completions(
    policy: str | None, num_nodes: int | None, expected: int
) -> None:
    job = trainjob("job")
    if num_nodes is not None:
        job.trainer(numNodes=num_nodes)
    built = build(job.build(), runtime(policy).build())
    job_spec = built_job(built, "node")["template"]["spec"]
    assert (job_spec["parallelism"], job_spec["completions"]) == (expected, expected)


def test_trainer_env_comes_first_and_framework_env_wins_no_reserved_name() -> None:
    job = trainjob("job").trainer(env=[{"name": "LR", "value": "0.1"}], numNodes=2)
    built = build(job.build(), runtime("torch").build())
    assert env_names(built)[0] == "LR"
    assert env(built)["LR"] == "0.1"


def test_plain_runtime_without_ml_policy_keeps_its_parallelism() -> None:
    rt = runtime(None).jobs(
        replicated_job(
            "node", ancestor="trainer", parallelism=3, containers=[{"name": "node", "image": "x"}]
        )
    )
    built = build(trainjob("job").build(), rt.build())
    assert built_job(built, "node")["template"]["spec"]["parallelism"] == 3


def test_trainer_image_command_args_and_resources_replace_the_runtime_s() -> None:
    job = trainjob("job").trainer(
        image="me/train:2",
        command=["python3"],
        args=["train.py", "--lr=0.1"],
        resourcesPerNode={"requests": {"cpu": "1"}},
    )
    rt = runtime("torch").jobs(trainer_job(limits={"cpu": "8", "memory": "1Gi"}))
    built = build(job.build(), rt.build())
    node = container(built, "node")
    assert node["image"] == "me/train:2"
    assert node["command"] == ["python3"]
    assert node["args"] == ["train.py", "--lr=0.1"]
    assert node["resources"] == {"requests": {"cpu": "1"}}, "resourcesPerNode replaces them"


def test_env_injection_targets_get_the_pet_and_master_env() -> None:
    rt = runtime("torch").jobs(
        trainer_job(),
        replicated_job(
            "sidecar-job",
            containers=[{"name": "helper", "image": "x"}, {"name": "other", "image": "x"}],
        ),
    )
    rt.policy(
        "torch",
        envInjection={"targets": [{"jobName": "sidecar-job", "containerNames": ["helper"]}]},
    )
    built = build(trainjob("job").trainer(numNodes=2).build(), rt.build())
    helper = env(built, "sidecar-job", "helper")
    assert helper["PET_NNODES"] == "2"
    assert helper["PET_MASTER_ADDR"] == "job-node-0-0.job"
    assert "env" not in container(built, "sidecar-job", "other")


# --- torchtune -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trainer", "expected_tail"),
    [
        pytest.param(
            {"numNodes": 1, "numProcPerNode": 1},
            ["full_finetune_single_device", "--config", "llama3_2/1B_full_single_device"],
            id="one node, one process: full single-device recipe",
        ),
        pytest.param(
            {"numNodes": 1, "numProcPerNode": 1, "args": ["model.lora_attn_modules=[q_proj]"]},
            ["lora_finetune_single_device", "--config", "llama3_2/1B_lora_single_device"],
            id="one device with LoRA",
        ),
        pytest.param(
            {"numNodes": 1, "numProcPerNode": 1, "args": ["model.quantize_base=True"]},
            ["lora_finetune_single_device", "--config", "llama3_2/1B_qlora_single_device"],
            id="one device with QLoRA",
        ),
        pytest.param(
            {"numNodes": 1, "numProcPerNode": 2},
            [
                "--rdzv_endpoint=job-node-0-0.job:29500",
                "full_finetune_distributed",
                "--config",
                "llama3_2/1B_full",
            ],
            id="one node, two processes: distributed with a rendezvous",
        ),
    ],
)
def test_torchtune_commands_get_the_recipe_config_and_runtime_settings(
    trainer: dict[str, Any], expected_tail: list[str]
) -> None:
    job = trainjob("job", runtime_name="torchtune-llama3.2-1b").trainer(
        command=["tune", "run"], **trainer
    )
    built = build(job.build(), torchtune_runtime())
    assert not built.errors
    command = container(built, "node")["command"]
    assert command == [
        "tune",
        "run",
        *expected_tail,
        "output_dir=/workspace/output",
        "tokenizer.path=/workspace/model/original/tokenizer.model",
        "checkpointer.checkpoint_dir=/workspace/model",
    ]
    assert "PET_MASTER_ADDR" not in env(built), "torchtune gets the endpoint on the command"


@pytest.mark.parametrize(
    ("runtime_name", "trainer", "messages"),
    [
        pytest.param(
            "torchtune-mistral-7b",
            {"numNodes": 1},
            [
                'spec.runtimeRef.name: Invalid value: "torchtune-mistral-7b": must have a '
                "supported pretrained model, invalid model configured: mistral/7B"
            ],
            id="an unsupported model",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"numNodes": 2},
            ["spec.trainer.numNodes: Invalid value: 2: must be 1 for llama3_2/1B model"],
            id="multi-node for a small model",
        ),
        pytest.param(
            "torchtune-qwen2.5-1.5b",
            {"numNodes": 1, "numProcPerNode": 2, "args": ["model.quantize_base=True"]},
            [
                'spec.runtimeRef.name: Invalid value: "torchtune-qwen2.5-1.5b": QLoRA is not '
                "supported for qwen2_5/1.5B model"
            ],
            id="QLoRA on qwen",
        ),
    ],
)
def test_torchtune_recipe_checks_use_upstream_messages(
    runtime_name: str, trainer: dict[str, Any], messages: list[str]
) -> None:
    job = trainjob("job", runtime_name=runtime_name).trainer(command=["tune", "run"], **trainer)
    built = build(job.build(), torchtune_runtime(runtime_name))
    assert [str(e) for e in built.errors] == messages
    assert built.objects == ()


# --- MPI -----------------------------------------------------------------------------------


def _mpi_runtime(launcher_as_node: bool = True) -> dict[str, Any]:
    return (
        runtime("mpi")
        .policy("mpi", runLauncherAsNode=launcher_as_node, sshAuthMountPath="/home/mpiuser/.ssh")
        .jobs(
            replicated_job(
                "launcher", ancestor="trainer", containers=[{"name": "node", "image": "x"}]
            ),
            replicated_job("node", containers=[{"name": "node", "image": "x"}]),
        )
        .build()
    )


def test_mpi_builds_the_hostfile_keys_volumes_and_launcher_env() -> None:
    job = trainjob("pi").trainer(numNodes=3, numProcPerNode=2, env=[{"name": "A", "value": "1"}])
    built = build(job.build(), _mpi_runtime(), key_pair=(b"PRIVATE", b"PUBLIC\n"))
    assert not built.errors
    assert built_job(built, "node")["template"]["spec"]["parallelism"] == 2, "3 - launcher"
    launcher_env = env(built, "launcher")
    assert {k: v for k, v in launcher_env.items() if k.startswith("OMPI")} == {
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_orte_set_default_slots": "2",
        "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
    }
    assert launcher_env["A"] == "1"
    assert env(built, "node")["A"] == "1", "the node job runs the trainer too (launcher as node)"
    mounts = container(built, "launcher")["volumeMounts"]
    assert {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"} in mounts
    assert {"name": "mpi-hostfile", "mountPath": "/etc/mpi"} in mounts
    (config_map,) = objects(built, "ConfigMap")
    assert config_map["metadata"]["name"] == "pi-mpi-hostfile"
    assert config_map["data"]["hostfile"] == (
        "pi-launcher-0-0.pi slots=2\npi-node-0-0.pi slots=2\npi-node-0-1.pi slots=2\n"
    )
    (secret,) = objects(built, "Secret")
    assert secret["metadata"]["name"] == "pi-mpi-ssh-auth"
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert secret["immutable"] is True
    assert base64.b64decode(secret["data"]["ssh-privatekey"]) == b"PRIVATE"
    assert base64.b64decode(secret["data"]["ssh-publickey"]) == b"PUBLIC\n"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "0000-uid"


def test_mpi_without_a_new_key_pair_builds_no_secret() -> None:
    built = build(trainjob("pi").trainer(numNodes=2).build(), _mpi_runtime())
    assert objects(built, "Secret") == []
    assert len(objects(built, "ConfigMap")) == 1


def test_mpi_launcher_not_a_node_lists_only_node_hosts() -> None:
    built = build(trainjob("pi").trainer(numNodes=2).build(), _mpi_runtime(False))
    (config_map,) = objects(built, "ConfigMap")
    assert config_map["data"]["hostfile"] == "pi-node-0-0.pi slots=1\npi-node-0-1.pi slots=1\n"


def test_mpi_slots_follow_the_gpus_when_the_runtime_says_one() -> None:
    job = trainjob("pi").trainer(numNodes=2, resourcesPerNode={"limits": {"nvidia.com/gpu": "4"}})
    built = build(job.build(), _mpi_runtime())
    assert env(built, "launcher")["OMPI_MCA_orte_set_default_slots"] == "4"


def test_mpi_unsupported_implementation_is_a_pre_build_error() -> None:
    doc = _mpi_runtime()
    doc["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] = "Intel"
    runtime_obj = api.parse(doc)[0]
    from kubetrain.operator.trainjob import framework  # the admitted runtime would be refused

    job = api.review(trainjob("pi").build()).obj
    built = framework.run(job, runtime_obj)
    assert [str(e) for e in built.errors] == [
        'spec.runtimeRef: Unsupported value: "Intel": '
        "MPI implementation for Intel doesn't supported"
    ]


def test_an_elastic_job_resized_keeps_its_pods_env_and_changes_only_its_size() -> None:
    rt = runtime("torch").policy("torch", elasticPolicy={"minNodes": 2, "maxNodes": 4}).build()
    before = build(trainjob("job").trainer(numNodes=2).build(), rt)
    after = build(trainjob("job").trainer(numNodes=3).build(), rt)
    assert env(before) == env(after), "running pods stay valid: the rendezvous admits the new node"
    assert env(after)["PET_NNODES"] == "2:4"
    assert built_job(before, "node")["template"]["spec"]["parallelism"] == 2
    assert built_job(after, "node")["template"]["spec"]["parallelism"] == 3


def test_an_elastic_job_without_num_nodes_starts_at_max_nodes() -> None:
    rt = runtime("torch").policy("torch", elasticPolicy={"minNodes": 1, "maxNodes": 3}).build()
    built = build(trainjob("job").build(), rt)
    assert built_job(built, "node")["template"]["spec"]["parallelism"] == 3
    assert env(built)["PET_NNODES"] == "1:3"
