"""BuiltinTrainer(config=TorchTuneConfig(...)) through kubetrain's TrainerClient, and what the
Kubeflow SDK writes for the same configs.

- The Kubeflow SDK (``kubeflow`` 0.5, in its own directory, run as a separate process as in
  tests/e2e/test_kubeflow_sdk.py) turns a table of TorchTune configs and initializers into
  ``spec.trainer``; kubetrain's SDK must write the same (quantities compared as quantities: the
  Kubeflow SDK writes ``cpu: 2.0`` where kubetrain writes ``"2"``).
- ``train()`` on the ``torchtune-llama3.2-1b`` runtime (a TrainingRuntime of the test's
  namespace, made from the built-in file) lists as a BuiltinTrainer runtime, submits the
  TrainJob, and once the initializers are done the operator builds the ``node`` pod with the
  command the TorchTune plugin makes of it: the single-device LoRA recipe for one CPU
  process, with the runtime's immutable settings after it, and the config's overrides as args.

Pods do not run here (the test moves them through pods/status); tests/e2e/test_torchtune.py
and tests/e2e/test_kubeflow_sdk_builtin.py fine-tune for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from kubetrain.operator.trainjob import kinds
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
    RuntimeKind,
    TorchTuneConfig,
    TorchTuneInstructDataset,
    TrainerClient,
    TrainerType,
    _builtin,
)
from tests.integration.sdk.conftest import Cluster, training_runtime

REPOSITORY = Path(__file__).resolve().parents[3]
SDK_ENV = "KUBETRAIN_KUBEFLOW_SDK"
SDK_DIR = REPOSITORY / ".venv" / "kubeflow-sdk"
RUNTIME = "torchtune-llama3.2-1b"

# Each case: TorchTuneConfig fields (enums by member name, LoRA and dataset as dicts of their
# fields) and the Hugging Face dataset URI, if any.
CASES: list[dict[str, Any]] = [
    {"config": {}},
    {
        "config": {
            "dtype": "BF16",
            "batch_size": 8,
            "epochs": 2,
            "loss": "CEWithChunkedOutputLoss",
            "num_nodes": 1,
            "resources_per_node": {"cpu": 2, "gpu": 1, "memory": "8Gi"},
        },
        "dataset": "hf://tatsu-lab/alpaca",
    },
    {
        "config": {"peft_config": {}, "dataset_preprocess_config": {"source": "PARQUET"}},
        "dataset": "hf://tatsu-lab/alpaca/data",
    },
    {
        "config": {
            "dtype": "FP32",
            "peft_config": {
                "apply_lora_to_mlp": True,
                "apply_lora_to_output": False,
                "lora_attn_modules": ["q_proj", "k_proj", "v_proj"],
                "lora_rank": 8,
                "lora_alpha": 16,
                "lora_dropout": 0.05,
                "quantize_base": True,
                "use_dora": False,
            },
            "dataset_preprocess_config": {
                "source": "JSON",
                "split": "train[:90%]",
                "train_on_input": True,
                "new_system_prompt": "Answer briefly.",
                "column_map": {"input": "instruction", "output": "output"},
            },
        },
        "dataset": "hf://org/data/train/alpaca.json",
    },
    {"config": {"peft_config": {"use_dora": True, "lora_attn_modules": []}, "epochs": 3}},
]

DRIVER = """
import json
import sys

from kubeflow.trainer import (
    BuiltinTrainer, DataFormat, DataType, HuggingFaceDatasetInitializer, Initializer, LoraConfig,
    Loss, TorchTuneConfig, TorchTuneInstructDataset,
)
from kubeflow.trainer.backends.kubernetes import utils
from kubeflow.trainer.types import types

runtime = types.Runtime(
    name="torchtune-llama3.2-1b",
    trainer=types.RuntimeTrainer(
        trainer_type=types.TrainerType.BUILTIN_TRAINER, framework="torchtune", image="x"
    ),
    kind=types.RuntimeKind.CLUSTER_TRAINING_RUNTIME,
)
runtime.trainer.set_command(("tune", "run"))
out = []
for case in json.loads(sys.argv[1]):
    fields = dict(case["config"])
    for name, enum in (("dtype", DataType), ("loss", Loss)):
        if name in fields:
            fields[name] = enum[fields[name]]
    if "peft_config" in fields:
        fields["peft_config"] = LoraConfig(**fields["peft_config"])
    if "dataset_preprocess_config" in fields:
        dataset = dict(fields["dataset_preprocess_config"])
        if "source" in dataset:
            dataset["source"] = DataFormat[dataset["source"]]
        fields["dataset_preprocess_config"] = TorchTuneInstructDataset(**dataset)
    initializer = None
    if case.get("dataset"):
        source = HuggingFaceDatasetInitializer(storage_uri=case["dataset"])
        initializer = Initializer(dataset=source)
    trainer = BuiltinTrainer(config=TorchTuneConfig(**fields))
    out.append(utils.get_trainer_cr_from_builtin_trainer(runtime, trainer, initializer).to_dict())
print(json.dumps(out))
"""


def kubetrain_config(case: dict[str, Any]) -> tuple[TorchTuneConfig, Initializer | None]:
    fields = dict(case["config"])
    for name, enum in (("dtype", DataType), ("loss", Loss)):
        if name in fields:
            fields[name] = enum[fields[name]]
    if "peft_config" in fields:
        fields["peft_config"] = LoraConfig(**fields["peft_config"])
    if "dataset_preprocess_config" in fields:
        dataset = dict(fields["dataset_preprocess_config"])
        if "source" in dataset:
            dataset["source"] = DataFormat[dataset["source"]]
        fields["dataset_preprocess_config"] = TorchTuneInstructDataset(**dataset)
    initializer = None
    if case.get("dataset"):
        initializer = Initializer(dataset=HuggingFaceDatasetInitializer(case["dataset"]))
    return TorchTuneConfig(**fields), initializer


def quantities(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with resource amounts as Decimals (a number, or the digits of a string)."""
    resources = spec.get("resourcesPerNode")
    if not resources:
        return spec

    def amount(value: Any) -> Any:
        text = str(value)
        return Decimal(text) if text.replace(".", "", 1).isdigit() else text

    converted = {
        part: {k: amount(v) for k, v in items.items()} for part, items in resources.items()
    }
    return {**spec, "resourcesPerNode": converted}


@pytest.fixture(scope="module")
def kubeflow_sdk() -> Path:
    given = os.environ.get(SDK_ENV)
    directory = Path(given) if given else SDK_DIR
    if not (directory / "kubeflow" / "trainer" / "__init__.py").exists():
        if given:
            pytest.fail(f"{SDK_ENV}={given} holds no kubeflow SDK")
        pytest.skip(f"the Kubeflow SDK is not in {SDK_DIR}: `make test` installs it there")
    return directory


def test_kubetrain_writes_the_trainer_the_kubeflow_sdk_writes(kubeflow_sdk: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTHONPATH")}
    env["PYTHONPATH"] = str(kubeflow_sdk)
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(CASES)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    runtime = training_runtime("torchtune_llama3_2_1b.yaml", name=RUNTIME)
    for case, expected in zip(CASES, theirs, strict=True):
        config, initializer = kubetrain_config(case)
        ours = _builtin.trainer_spec(BuiltinTrainer(config), runtime, initializer)
        assert quantities(ours) == quantities(expected), case


def test_train_on_a_torchtune_runtime_builds_the_pod_the_plugin_makes(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str
) -> None:
    runtime = training_runtime("torchtune_llama3_2_1b.yaml", name=RUNTIME)
    cluster.create(kinds.TRAINING_RUNTIMES, runtime, namespace)
    listed = {r.name: r for r in trainer_client.list_runtimes()}
    assert listed[RUNTIME].trainer.trainer_type is TrainerType.BUILTIN_TRAINER
    assert listed[RUNTIME].trainer.framework == "torchtune"
    assert listed[RUNTIME].kind is RuntimeKind.TRAINING_RUNTIME

    config = TorchTuneConfig(
        dtype=DataType.FP32,
        epochs=1,
        num_proc_per_node=1,
        resources_per_node={"cpu": 1, "memory": "2Gi"},
        peft_config=LoraConfig(lora_rank=8, lora_alpha=16, use_dora=True),
        args=["device=cpu"],
    )
    initializer = Initializer(
        dataset=HuggingFaceDatasetInitializer("hf://tatsu-lab/alpaca"),
        model=HuggingFaceModelInitializer("hf://meta-llama/Llama-3.2-1B-Instruct"),
    )
    name = trainer_client.train(
        runtime=RUNTIME, initializer=initializer, trainer=BuiltinTrainer(config)
    )
    steps = {f"{name}-{s}-0-0" for s in ("dataset-initializer", "model-initializer")}
    pods = cluster.wait_pods(namespace, steps)
    for step in ("dataset-initializer", "model-initializer"):
        container = pods[f"{name}-{step}-0-0"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container.get("env") or []}
        assert env["STORAGE_URI"] == getattr(initializer, step.split("-")[0]).storage_uri
        cluster.set_phase(namespace, f"{name}-{step}-0-0", "Succeeded", container=step)

    pods = cluster.wait_pods(namespace, {*steps, f"{name}-node-0-0"})
    node = pods[f"{name}-node-0-0"]["spec"]["containers"][0]
    assert node["command"] == [
        "tune",
        "run",
        "lora_finetune_single_device",
        "--config",
        "llama3_2/1B_lora_single_device",
        "output_dir=/workspace/output",
        "tokenizer.path=/workspace/model/original/tokenizer.model",
        "checkpointer.checkpoint_dir=/workspace/model",
    ]
    assert node["args"] == [
        "dtype=fp32",
        "epochs=1",
        "dataset.data_dir=/workspace/dataset/.",
        "model.lora_rank=8",
        "model.lora_alpha=16",
        "model.use_dora=True",
        "model.lora_attn_modules=[q_proj,v_proj,output_proj]",
        "device=cpu",
    ]
    assert node["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    job = trainer_client.get_job(name)
    assert job.runtime.trainer.trainer_type is TrainerType.BUILTIN_TRAINER
    assert [s.name for s in job.steps] == ["dataset-initializer", "model-initializer", "node-0"]


def test_a_torchtune_config_on_a_plain_torch_runtime_submits_nothing(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str
) -> None:
    cluster.create(kinds.TRAINING_RUNTIMES, training_runtime("torch_distributed.yaml"), namespace)
    with pytest.raises(InvalidTrainer, match="runtime torch-distributed is a torch runtime"):
        trainer_client.train(
            runtime="torch-distributed", trainer=BuiltinTrainer(TorchTuneConfig(epochs=1))
        )
    assert trainer_client.list_jobs() == []
