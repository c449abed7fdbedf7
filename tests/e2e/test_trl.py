"""TRL beyond upstream, end to end on the local control plane: a TrainJob on the built-in
``trl-sft`` runtime fine-tunes a tiny Llama (made offline, tests/e2e/tiny_hf_llama.py) with
LoRA on two nodes. The model and the alpaca-shaped dataset come through the model and dataset
initializers (``file://``) into the volume both nodes mount; the trainer's arguments are what
``TRLConfig`` in the SDK writes. The job completes, its loss falls, the adapter lands in the
volume, the initializers log their progress, and ``trainerStatus`` shows the run's progress and
metrics.

Local only, to keep the suite's time in budget: the runtime itself is checked on kube-apiserver
with the other built-in runtimes.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from kubetrain import kube
from kubetrain.operator.trainjob import builtin, kinds
from kubetrain.sdk import TRLConfig, _trl
from tests.apiserver.cascade import run
from tests.e2e import tiny_hf_llama
from tests.e2e.conftest import local_only
from tests.e2e.trainjob_fixtures import (
    API_VERSION,
    condition,
    explain,
    log_of,
    logs_of,
    wait_finished,
)

JOB = "tiny-sft"


@pytest.fixture
def llm_installed() -> None:
    missing = [
        m for m in ("trl", "peft", "transformers", "datasets") if not importlib.util.find_spec(m)
    ]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed (pip install -e '.[llm]'); on our machines"
        )


@pytest.mark.usefixtures("llm_installed")
def test_trl_sft_fine_tunes_a_tiny_llama_with_lora_on_two_nodes(
    kubeconfig: str, namespace: str, tmp_path: Path, plane: str
) -> None:
    local_only(plane, "one LoRA fine-tune in the suite; the runtime installs on both planes")
    model, dataset = tiny_hf_llama.write(tmp_path)
    runtime = yaml.safe_load(builtin.files()["trl_sft.yaml"])
    config = TRLConfig(epochs=3, batch_size=8, learning_rate=0.02, num_nodes=2, args=["--seed=0"])
    trainer = {**_trl.trainer_spec(config, runtime), "numProcPerNode": 1}
    job = {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": JOB},
        "spec": {
            "runtimeRef": {"name": "trl-sft"},
            "initializer": {
                "dataset": {"storageUri": f"file://{dataset}"},
                "model": {"storageUri": f"file://{model}"},
            },
            "trainer": trainer,
        },
    }

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            done = await wait_finished(client, namespace, JOB)
            logs = await logs_of(client, namespace, JOB)
            why = explain(done, logs)
            assert (condition(done, "Complete") or {}).get("status") == "True", why
            assert set(logs) == {f"{JOB}-node-0-0", f"{JOB}-node-0-1"}, why
            rank0 = logs[f"{JOB}-node-0-0"]
            assert (
                "fine-tuning /workspace/model on 64 records from /workspace/dataset with LoRA"
                in rank0
            ), why
            losses = re.search(r"^loss: first (\d+\.\d+), last (\d+\.\d+)$", rank0, re.M)
            assert losses is not None, why
            first, last = float(losses[1]), float(losses[2])
            print(f"TRL LoRA fine-tune on 2 nodes: loss {first} -> {last}")
            assert last < first, why
            saved = re.search(r"^saved to /workspace/output: (.*)$", rank0, re.M)
            assert saved is not None, why
            assert {"adapter_config.json", "adapter_model.safetensors"} <= set(
                saved[1].split(", ")
            ), why
            steps = re.findall(r"^step (\d+)/(\d+): loss ", rank0, re.M)
            assert steps, why
            assert steps[-1] == ("12", "12"), "3 epochs of 64 records, 8 a step on each of 2 nodes"

            status = done["status"]["trainerStatus"]
            assert status["progressPercentage"] == 100, status
            assert status["estimatedRemainingSeconds"] == 0, status
            names = {m["name"] for m in status["metrics"]}
            assert {"loss", "learning_rate", "epoch"} <= names, status

            for kind, files in (("model", 5), ("dataset", 1)):
                pod = f"{JOB}-{kind}-initializer-0-0"
                text = await log_of(client, namespace, pod, f"{kind}-initializer")
                assert f"{kind} initializer: {files} of {files} files" in text, text

    run(body())
