"""The official Kubeflow SDK's BuiltinTrainer against kubetrain, unchanged: its TrainerClient
(``kubeflow`` 0.5, Kubernetes backend, in its own directory and process as in
test_kubeflow_sdk.py) finds a torchtune runtime, fine-tunes with QLoRA and with DoRA at once,
waits for both, and reads their logs. kubetrain's TorchTune plugin turns the SDK's
``tune run`` into torchtune's single-device recipe, and the flags reach it.

What stands in for a cluster's GPUs and a Hugging Face download:

- the runtime is ``torchtune-llama3.2-1b`` as kubetrain ships it, made a TrainingRuntime of the
  test's namespace (the SDK prefers it to the cluster one) with ``numProcPerNode: 1`` (one CPU
  process: the plugin's single-device recipes) and a ``PYTHONPATH`` whose sitecustomize appends
  examples/llm/tiny_llama.py's overrides (the tiny model in place of the 1B one) and
  ``device=cpu`` to the arguments the SDK and the plugin give ``tune run``: what an image made
  for this model would do;
- the model and dataset are examples/llm/tiny_llama.py's, given to the SDK's
  ``HuggingFaceModelInitializer``/``HuggingFaceDatasetInitializer`` as ``file://`` URIs (the
  SDK does not check the scheme; kubetrain's initializer fetches them). The SDK derives the
  dataset's directory from the URI as from a Hugging Face one (everything after its first
  path component goes below /workspace/dataset), so the dataset directory holds its records
  at that path.

Then, read through the API: the node pods ran the plugin's commands (QLoRA: the
``_qlora_single_device`` config; DoRA: ``_lora_single_device`` with ``model.use_dora=True``),
the SDK saw both jobs Complete, the loss fell, and the adapters are in the volume (DoRA's with
its magnitude vectors; QLoRA's run config with ``quantize_base: true``).

Local only, to keep the suite's time in budget.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import kube
from kubetrain.operator.trainjob import builtin, kinds
from tests.apiserver.cascade import run
from tests.e2e.conftest import local_only
from tests.e2e.test_kubeflow_sdk import kubeflow_sdk as kubeflow_sdk  # a fixture, found by name
from tests.e2e.test_torchtune import PERSISTENT_VOLUMES, tiny_llama, torchtune_installed

RUNTIME = "torchtune-llama3.2-1b"
DRIVER_TIMEOUT = 540.0
STEP = re.compile(r"Step (\d+) \| loss:([0-9.]+)")
_ = torchtune_installed  # a fixture, found by name

DRIVER = """
import json
import sys

from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer import (
    BuiltinTrainer, DataFormat, DataType, HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer, Initializer, LoraConfig, TorchTuneConfig,
    TorchTuneInstructDataset, TrainerClient, TrainerType,
)

kubeconfig, namespace, runtime_name, model_dir, dataset_dir = sys.argv[1:6]
client = TrainerClient(KubernetesBackendConfig(config_file=kubeconfig, namespace=namespace))
runtime = client.get_runtime(runtime_name)
assert runtime.trainer.trainer_type == TrainerType.BUILTIN_TRAINER, runtime
initializer = Initializer(
    dataset=HuggingFaceDatasetInitializer(storage_uri="file://" + dataset_dir),
    model=HuggingFaceModelInitializer(storage_uri="file://" + model_dir),
)
peft = {
    "qlora": LoraConfig(lora_rank=8, lora_alpha=16, quantize_base=True),
    "dora": LoraConfig(lora_rank=8, lora_alpha=16, use_dora=True),
}
jobs = {}
for kind, lora in peft.items():
    config = TorchTuneConfig(
        dtype=DataType.FP32,
        batch_size=4,
        epochs=1,
        peft_config=lora,
        dataset_preprocess_config=TorchTuneInstructDataset(
            source=DataFormat.JSON,
            split="train",
            column_map={"input": "instruction", "output": "output"},
        ),
        resources_per_node={"cpu": "500m", "memory": "3Gi"},
    )
    jobs[kind] = client.train(
        runtime=runtime, initializer=initializer, trainer=BuiltinTrainer(config=config)
    )
report = {}
for kind, name in jobs.items():
    job = client.wait_for_job_status(name, timeout=480, polling_interval=2)
    report[kind] = {
        "name": name,
        "status": job.status,
        "steps": sorted((s.name, s.status) for s in job.steps),
        "logs": list(client.get_job_logs(name)),
    }
print(json.dumps(report))
"""


def cpu_runtime(namespace: str, site_dir: Path) -> dict[str, Any]:
    """The built-in runtime as a TrainingRuntime of ``namespace`` for one CPU process a node,
    whose Python finds ``site_dir``'s sitecustomize first."""
    doc = yaml.safe_load(builtin.files()["torchtune_llama3_2_1b.yaml"])
    doc["kind"] = "TrainingRuntime"
    doc["metadata"]["namespace"] = namespace
    doc["spec"]["mlPolicy"]["torch"] = {"numProcPerNode": 1}
    node = doc["spec"]["template"]["spec"]["replicatedJobs"][2]
    container = node["template"]["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "PYTHONPATH", "value": str(site_dir)}]
    return doc


def tiny_site(site_dir: Path) -> None:
    """A sitecustomize that appends the tiny model's overrides to ``tune run``'s arguments: the
    node puts this environment's ``tune`` first on PATH, so the image's part is played here."""
    extra = [
        *tiny_llama().overrides(),
        "device=cpu",
        "seed=0",
        "optimizer.lr=1e-2",
        "lr_scheduler.num_warmup_steps=0",
        "gradient_accumulation_steps=1",
        "max_steps_per_epoch=8",
        "metric_logger._component_=kubetrain.builtin.torchtune.TrainJobLogger",
    ]
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if os.path.basename(sys.argv[0]) == 'tune' and sys.argv[1:2] == ['run']:\n"
        f"    sys.argv.extend({extra!r})\n",
        encoding="utf-8",
    )


def sdk_dataset(root: Path) -> Path:
    """A dataset directory laid out as the SDK maps its URI: the records at the directory's own
    path after its first component (``/tmp/a/b`` holds ``a/b/alpaca.json``)."""
    records = tiny_llama().records()
    directory = root / "sdk-dataset"
    below = Path(*directory.parts[2:])
    assert "." not in str(below), f"the SDK reads a path with a dot as a file: {below}"
    (directory / below).mkdir(parents=True)
    (directory / below / "alpaca.json").write_text(json.dumps(records), encoding="utf-8")
    return directory


async def node_command(client: kube.Client, namespace: str, job: str) -> list[str]:
    pod = await client.get(kinds.PODS, f"{job}-node-0-0", namespace=namespace)
    container = pod["spec"]["containers"][0]
    return [*container["command"], *container.get("args", [])]


async def output_dir(client: kube.Client, namespace: str, job: str) -> Path:
    claim = await client.get(
        kinds.PERSISTENT_VOLUME_CLAIMS, f"initializer-{job}", namespace=namespace
    )
    volume = await client.get(PERSISTENT_VOLUMES, claim["spec"]["volumeName"])
    return Path(volume["spec"]["hostPath"]["path"]) / "output"


@pytest.mark.usefixtures("torch_installed", "torchtune_installed")
def test_the_official_sdks_builtin_trainer_fine_tunes_with_qlora_and_dora(
    kubeconfig: str, namespace: str, kubeflow_sdk: Path, tmp_path: Path, plane: str
) -> None:
    local_only(plane, "one SDK fine-tune in the suite; the runtimes install on both planes")
    tiny_llama().main([str(tmp_path)])
    dataset = sdk_dataset(tmp_path)
    tiny_site(tmp_path / "site")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTHONPATH")}
    env["PYTHONPATH"] = str(kubeflow_sdk)

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(
                kinds.TRAINING_RUNTIMES,
                cpu_runtime(namespace, tmp_path / "site"),
                namespace=namespace,
            )
            command = [
                sys.executable,
                str(driver),
                kubeconfig,
                namespace,
                RUNTIME,
                str(tmp_path / "model"),
                str(dataset),
            ]
            result = await asyncio.to_thread(
                subprocess.run,
                command,
                capture_output=True,
                text=True,
                timeout=DRIVER_TIMEOUT,
                env=env,
                cwd=tmp_path,
            )
            assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-4000:]}"
            report = json.loads(result.stdout.strip().splitlines()[-1])
            for kind, expected_config, flag in (
                ("qlora", "llama3_2/1B_qlora_single_device", "model.quantize_base=True"),
                ("dora", "llama3_2/1B_lora_single_device", "model.use_dora=True"),
            ):
                job = report[kind]
                assert job["status"] == "Complete", job
                assert job["steps"] == [
                    ["dataset-initializer", "Succeeded"],
                    ["model-initializer", "Succeeded"],
                    ["node-0", "Succeeded"],
                ], job
                argv = await node_command(client, namespace, job["name"])
                recipe = argv.index("lora_finetune_single_device")
                assert argv[recipe : recipe + 3][1:] == ["--config", expected_config], argv
                assert flag in argv, argv
                losses = [float(loss) for _, loss in STEP.findall("\n".join(job["logs"]))]
                assert len(losses) == 8, job["logs"][-20:]
                assert losses[-1] < losses[0], losses
                job["output"] = await output_dir(client, namespace, job["name"])
            dora = report["dora"]["output"] / "epoch_0" / "adapter_model.safetensors"
            from safetensors import safe_open

            with safe_open(str(dora), "pt") as adapter:
                keys = list(adapter.keys())
            assert any("magnitude" in k for k in keys), keys
            saved = yaml.safe_load(
                (report["qlora"]["output"] / "torchtune_config.yaml").read_text()
            )
            assert saved["model"]["quantize_base"] is True, saved["model"]

    run(body())
