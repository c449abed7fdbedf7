"""BuiltinTrainer(config=TorchTuneConfig(...)) becomes the TrainJob the Kubeflow SDK writes
(kubetrain.sdk._builtin): ``tune run`` and torchtune config overrides in the SDK's order, the
dataset's path from a Hugging Face initializer, LoRA/QLoRA/DoRA switches, the instruct dataset,
and kubetrain's additions after them; what cannot work fails before anything is submitted,
naming the field. The table's expectations are the Kubeflow SDK 0.5 outputs for the same
configs (tests/integration/sdk/test_builtin_trainer.py compares with the SDK itself)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.operator.trainjob import builtin
from kubetrain.sdk import (
    BuiltinTrainer,
    DataFormat,
    DataType,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    InvalidTrainer,
    LoraConfig,
    Loss,
    S3DatasetInitializer,
    TorchTuneConfig,
    TorchTuneInstructDataset,
    TRLConfig,
    _builtin,
    _trainjobs,
    _trl,
)

LORA_MODULES = "model.lora_attn_modules=[q_proj,v_proj,output_proj]"


def runtime(name: str = "torchtune-llama3.2-1b") -> dict[str, Any]:
    return next(r for r in builtin.runtimes() if r["metadata"]["name"] == name)


@pytest.mark.parametrize(
    ("config", "initializer", "expected"),
    [
        pytest.param(TorchTuneConfig(), None, [], id="nothing set: the recipe config as it is"),
        pytest.param(
            TorchTuneConfig(
                dtype=DataType.BF16, batch_size=8, epochs=2, loss=Loss.CEWithChunkedOutputLoss
            ),
            None,
            [
                "dtype=bf16",
                "batch_size=8",
                "epochs=2",
                "loss=torchtune.modules.loss.CEWithChunkedOutputLoss",
            ],
            id="dtype, batch size, epochs, loss",
        ),
        pytest.param(
            TorchTuneConfig(epochs=1),
            Initializer(dataset=HuggingFaceDatasetInitializer("hf://tatsu-lab/alpaca")),
            ["epochs=1", "dataset.data_dir=/workspace/dataset/."],
            id="a dataset repository: its directory",
        ),
        pytest.param(
            TorchTuneConfig(),
            Initializer(dataset=HuggingFaceDatasetInitializer("hf://org/data/train/a.json")),
            ["dataset.data_files=/workspace/dataset/train/a.json"],
            id="a file below the repository: data_files",
        ),
        pytest.param(
            TorchTuneConfig(),
            Initializer(dataset=HuggingFaceDatasetInitializer("hf://org/data/train")),
            ["dataset.data_dir=/workspace/dataset/train"],
            id="a directory below the repository: data_dir",
        ),
        pytest.param(
            TorchTuneConfig(),
            Initializer(
                dataset=S3DatasetInitializer("s3://bucket/data"),
                model=HuggingFaceModelInitializer("hf://meta-llama/Llama-3.2-1B-Instruct"),
            ),
            [],
            id="an S3 dataset and a model: no path",
        ),
        pytest.param(
            TorchTuneConfig(peft_config=LoraConfig()),
            None,
            [LORA_MODULES],
            id="LoRA with its defaults: the attention modules only",
        ),
        pytest.param(
            TorchTuneConfig(
                peft_config=LoraConfig(
                    apply_lora_to_mlp=True,
                    apply_lora_to_output=False,
                    lora_attn_modules=["q_proj", "k_proj"],
                    lora_rank=8,
                    lora_alpha=16,
                    lora_dropout=0.05,
                    quantize_base=True,
                    use_dora=False,
                )
            ),
            None,
            [
                "model.apply_lora_to_mlp=True",
                "model.apply_lora_to_output=False",
                "model.lora_rank=8",
                "model.lora_alpha=16",
                "model.lora_dropout=0.05",
                "model.quantize_base=True",
                "model.use_dora=False",
                "model.lora_attn_modules=[q_proj,k_proj]",
            ],
            id="QLoRA, every field",
        ),
        pytest.param(
            TorchTuneConfig(peft_config=LoraConfig(use_dora=True, lora_attn_modules=[])),
            None,
            ["model.use_dora=True"],
            id="DoRA, no attention modules given",
        ),
        pytest.param(
            TorchTuneConfig(
                dataset_preprocess_config=TorchTuneInstructDataset(
                    source=DataFormat.JSON,
                    split="train[:90%]",
                    train_on_input=False,
                    new_system_prompt="Answer briefly.",
                    column_map={"input": "instruction", "output": "output"},
                )
            ),
            None,
            [
                "dataset=torchtune.datasets.instruct_dataset",
                "dataset.source=json",
                "dataset.split=train[:90%]",
                "dataset.train_on_input=False",
                "dataset.new_system_prompt=Answer briefly.",
                "dataset.column_map={'input': 'instruction', 'output': 'output'}",
            ],
            id="an instruct dataset, every field",
        ),
        pytest.param(
            TorchTuneConfig(
                batch_size=2,
                peft_config=LoraConfig(lora_rank=4),
                dataset_preprocess_config=TorchTuneInstructDataset(source=DataFormat.PARQUET),
                args=["device=cpu", "model.lora_rank=2"],
            ),
            Initializer(dataset=HuggingFaceDatasetInitializer("hf://tatsu-lab/alpaca/data")),
            [
                "batch_size=2",
                "dataset.data_dir=/workspace/dataset/data",
                "model.lora_rank=4",
                LORA_MODULES,
                "dataset=torchtune.datasets.instruct_dataset",
                "dataset.source=parquet",
                "device=cpu",
                "model.lora_rank=2",
            ],
            id="kubetrain's args come last, so they win",
        ),
    ],
)
def test_a_torchtune_config_becomes_the_kubeflow_sdks_args(
    config: TorchTuneConfig, initializer: Initializer | None, expected: list[str]
) -> None:
    spec = _builtin.trainer_spec(BuiltinTrainer(config), runtime(), initializer)
    assert spec == {"command": ["tune", "run"], "args": expected}


def test_nodes_processes_and_resources_go_where_the_sdk_puts_them() -> None:
    config = TorchTuneConfig(
        num_nodes=2, num_proc_per_node=1, resources_per_node={"cpu": 2, "gpu": 1, "memory": "8Gi"}
    )
    spec = _builtin.trainer_spec(BuiltinTrainer(config), runtime("torchtune-llama3.3-70b"))
    amounts = {"cpu": "2", "nvidia.com/gpu": "1", "memory": "8Gi"}
    assert spec == {
        "command": ["tune", "run"],
        "args": [],
        "numNodes": 2,
        "numProcPerNode": 1,
        "resourcesPerNode": {"requests": amounts, "limits": amounts},
    }


def test_the_trainjob_names_the_runtime_and_carries_the_initializers() -> None:
    initializer = Initializer(
        dataset=HuggingFaceDatasetInitializer("hf://tatsu-lab/alpaca"),
        model=HuggingFaceModelInitializer(
            "hf://meta-llama/Llama-3.2-1B-Instruct", access_token="t"
        ),
    )
    job = _trainjobs.build(
        name="a1",
        namespace="ns",
        runtime=runtime(),
        trainer=BuiltinTrainer(TorchTuneConfig(epochs=1)),
        initializer=initializer,
    )
    assert job["spec"]["runtimeRef"] == {
        "name": "torchtune-llama3.2-1b",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert job["spec"]["trainer"] == {
        "command": ["tune", "run"],
        "args": ["epochs=1", "dataset.data_dir=/workspace/dataset/."],
    }
    assert job["spec"]["initializer"]["model"]["env"][-1] == {"name": "ACCESS_TOKEN", "value": "t"}


def test_the_kubeflow_sdks_enums_and_plain_strings_are_taken_too() -> None:
    class Theirs:  # what the Kubeflow SDK's DataType.FP32 looks like here
        value = "fp32"

    config = TorchTuneConfig(
        dtype=Theirs(),  # type: ignore[arg-type]
        dataset_preprocess_config=TorchTuneInstructDataset(source="csv"),  # type: ignore[arg-type]
    )
    args = _builtin.trainer_spec(BuiltinTrainer(config), runtime())["args"]
    assert args == [
        "dtype=fp32",
        "dataset=torchtune.datasets.instruct_dataset",
        "dataset.source=csv",
    ]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            TorchTuneConfig(dtype="fp16"),  # type: ignore[arg-type]
            "TorchTuneConfig.dtype: 'fp16'; accepted: bf16, fp32",
            id="a dtype torchtune's recipes do not take",
        ),
        pytest.param(
            TorchTuneConfig(batch_size=-1),
            "TorchTuneConfig.batch_size: -1; accepted: a whole number, 1 or more",
            id="a negative batch size",
        ),
        pytest.param(
            TorchTuneConfig(args=["output_dir=/tmp/x"]),
            "TorchTuneConfig.args[0]: 'output_dir=/tmp/x' sets output_dir, which the runtime "
            "manages; accepted: any override but output_dir, tokenizer.path, "
            "checkpointer.checkpoint_dir, tokenizer.merges_file",
            id="an override of what the runtime manages",
        ),
        pytest.param(
            TorchTuneConfig(args=["--verbose"]),
            "TorchTuneConfig.args[0]: '--verbose'; accepted: a config override key=value",
            id="an arg that is not an override",
        ),
        pytest.param(
            TorchTuneConfig(peft_config={"lora_rank": 8}),  # type: ignore[arg-type]
            "TorchTuneConfig.peft_config: {'lora_rank': 8}; accepted: a LoraConfig",
            id="a dict for the LoRA config",
        ),
        pytest.param(
            TorchTuneConfig(num_proc_per_node=0),
            "TorchTuneConfig.num_proc_per_node: 0; accepted: a whole number, 1 or more, or "
            "auto, cpu, gpu",
            id="no process per node",
        ),
    ],
)
def test_what_cannot_work_is_refused_naming_the_field(
    config: TorchTuneConfig, message: str
) -> None:
    with pytest.raises(InvalidTrainer) as raised:
        _builtin.trainer_spec(BuiltinTrainer(config), runtime())
    assert str(raised.value) == message


def test_a_torchtune_config_needs_a_torchtune_runtime_and_other_configs_are_refused() -> None:
    with pytest.raises(InvalidTrainer) as raised:
        _builtin.trainer_spec(BuiltinTrainer(TorchTuneConfig()), runtime("torch-distributed"))
    assert str(raised.value).startswith(
        "BuiltinTrainer(config=TorchTuneConfig(...)): runtime torch-distributed is a torch "
        "runtime; accepted: a torchtune runtime (torchtune-llama3.2-1b,"
    )
    with pytest.raises(InvalidTrainer, match="accepted: a TorchTuneConfig or a TRLConfig"):
        _builtin.trainer_spec(BuiltinTrainer({"epochs": 1}), runtime())  # type: ignore[arg-type]


def test_a_trl_config_is_trls_to_write() -> None:
    config = TRLConfig(epochs=1)
    spec = _builtin.trainer_spec(BuiltinTrainer(config), runtime("trl-sft"))
    assert spec == _trl.trainer_spec(config, runtime("trl-sft"))
    assert "--num_train_epochs=1" in spec["args"]
