"""TorchTune end to end, offline, on CPU: examples/llm/trainjob.yaml as a user submits it, a LoRA
fine-tune of a tiny Llama 3.2 on two nodes of the built-in ``torchtune-llama3.2-1b`` runtime.

The model and dataset are made here (examples/llm/tiny_llama.py: random weights of a few MB in
Hugging Face's layout, a tiktoken tokenizer learned offline, alpaca-shaped records) and reach
the pods through the runtime's own initializers as ``file://`` URIs. What must hold:

- the upstream initializer images of the runtime run kubetrain's initializer and fill the
  volume; the two nodes rendezvous at rank 0 and run torchtune's ``lora_finetune_distributed``
  (through kubetrain's CPU fixes, this torch having no NCCL) to Complete;
- the loss falls: rank 0's log has every step (the metric logger prints them), and the last
  steps' mean is well under the first steps';
- the LoRA adapter lands in the output directory of the shared volume (the claim's path on
  this node);
- while it trains, ``trainerStatus`` shows progress under 100% with an ETA and the loss (a
  watch sees every update), and at the end 100% and 0 seconds.

Local only, to keep the suite's time in budget (one torchtune fine-tune): the runtimes
themselves install on kube-apiserver too (tests/apiserver/test_torchtune_runtimes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import kube
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import run
from tests.e2e.conftest import local_only
from tests.e2e.trainjob_fixtures import REPOSITORY, condition, explain, log_of, logs_of, wait_job

EXAMPLE = REPOSITORY / "examples" / "llm"
JOB = "tiny-llama-lora"
EXAMPLE_ROOT = "/tmp/kubetrain-tiny-llama"
TIMEOUT = 420.0  # seconds: two torchtune processes start on two busy cores
STEP = re.compile(r"Step (\d+) \| loss:([0-9.]+)")
PERSISTENT_VOLUMES = kube.Resource("", "v1", "persistentvolumes", namespaced=False)


def tiny_llama() -> Any:
    """examples/llm/tiny_llama.py as a module."""
    spec = importlib.util.spec_from_file_location("tiny_llama", EXAMPLE / "tiny_llama.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def torchtune_installed() -> None:
    if importlib.util.find_spec("torchtune") is None:
        pytest.skip("torchtune is not installed (pip install -e '.[llm]'); it is on our machines")


def example_job(root: Path, namespace: str) -> dict[str, Any]:
    """The example's TrainJob with its initializers pointed at ``root`` instead of /tmp."""
    text = (EXAMPLE / "trainjob.yaml").read_text(encoding="utf-8")
    doc: dict[str, Any] = yaml.safe_load(text.replace(EXAMPLE_ROOT, str(root)))
    doc["metadata"]["namespace"] = namespace
    return doc


async def watch_status(client: kube.Client, namespace: str, seen: list[dict[str, Any]]) -> None:
    """Append every distinct ``trainerStatus`` the job shows, until cancelled."""
    async for event in client.watch(kinds.TRAINJOBS, namespace=namespace):
        items = event.object.get("items") if event.type == "SYNC" else [event.object]
        for obj in items or []:
            if obj.get("metadata", {}).get("name") != JOB:
                continue
            status = (obj.get("status") or {}).get("trainerStatus")
            if status and (not seen or seen[-1] != status):
                seen.append(status)


async def volume_path(client: kube.Client, namespace: str) -> Path:
    """Where the job's ``initializer`` claim lives on this node."""
    claim = await client.get(
        kinds.PERSISTENT_VOLUME_CLAIMS, f"initializer-{JOB}", namespace=namespace
    )
    volume = await client.get(PERSISTENT_VOLUMES, claim["spec"]["volumeName"])
    spec = volume["spec"]
    return Path((spec.get("hostPath") or spec.get("local"))["path"])


@pytest.mark.usefixtures("torch_installed", "torchtune_installed")
def test_the_example_fine_tunes_a_tiny_llama_with_lora_on_two_nodes(
    kubeconfig: str, namespace: str, tmp_path: Path, plane: str
) -> None:
    local_only(plane, "one torchtune fine-tune in the suite; the runtimes install on both")
    tiny_llama().main([str(tmp_path)])
    job = example_job(tmp_path, namespace)

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            seen: list[dict[str, Any]] = []
            watcher = asyncio.create_task(watch_status(client, namespace, seen))
            try:
                await client.create(kinds.TRAINJOBS, job, namespace=namespace)

                def finished(obj: dict[str, Any]) -> bool:
                    return any(
                        (condition(obj, t) or {}).get("status") == "True"
                        for t in ("Complete", "Failed")
                    )

                done = await wait_job(client, namespace, JOB, finished, "finished", timeout=TIMEOUT)
                await asyncio.sleep(0)  # let the watch take the last update
            finally:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            logs = await logs_of(client, namespace, JOB)
            assert (condition(done, "Complete") or {}).get("status") == "True", explain(done, logs)

            initializer = await log_of(
                client, namespace, f"{JOB}-dataset-initializer-0-0", "dataset-initializer"
            )
            assert f"file://{tmp_path}/dataset" in initializer, initializer

            rank0 = logs[f"{JOB}-node-0-0"]
            losses = [float(loss) for _, loss in STEP.findall(rank0)]
            steps = [int(step) for step, _ in STEP.findall(rank0)]
            assert steps == list(range(1, 97)), explain(
                done, logs
            )  # 128 records, 4 a step, 3 epochs
            first, last = statistics.mean(losses[:4]), statistics.mean(losses[-4:])
            assert last < first - 0.5, f"loss {first:.3f} -> {last:.3f}: {losses}"

            output = await volume_path(client, namespace) / "output" / "epoch_2"
            adapter = output / "adapter_model.safetensors"
            assert adapter.stat().st_size > 0, sorted(p.name for p in output.iterdir())
            adapter_config = json.loads((output / "adapter_config.json").read_text())
            assert adapter_config["r"] == 8
            assert adapter_config["lora_alpha"] == 16

            during = [
                s
                for s in seen
                if 0 < (s.get("progressPercentage") or 0) < 100
                and s.get("estimatedRemainingSeconds") is not None
            ]
            assert during, seen
            names = {m["name"] for m in during[-1].get("metrics") or []}
            assert {"loss", "lr", "step"} <= names, during[-1]
            final = done["status"]["trainerStatus"]
            assert final["progressPercentage"] == 100, final
            assert final["estimatedRemainingSeconds"] == 0, final

    run(body())
