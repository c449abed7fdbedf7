"""The hf:// initializer against a Hub of the test's own (tests/integration/initializers/
hubserver.py) named by ``HF_ENDPOINT``, offline: huggingface_hub's real download path (repo
info, tree, resolve URLs), run as the initializer's program, as in an initializer pod."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.initializers import hubserver

pytest.importorskip("huggingface_hub", reason="pip install 'kubetrain[initializers]'")

TOKEN = "hf_test-token-value"
WEIGHTS = bytes(range(256)) * 4096  # 1 MB

MODEL = {
    "config.json": b'{"model_type": "llama"}',
    "model.safetensors": WEIGHTS,
    "tokenizer/tokenizer.json": b"{}",
    "pytorch_model.bin": b"the same weights again",
    "flax_model.msgpack": b"and again",
    "README.md": b"# not a model file",
}
DATASET = {"train.jsonl": b'{"instruction": "a", "output": "b"}\n', "README.md": b"# card"}


@pytest.fixture
def hub() -> Iterator[hubserver.Hub]:
    repos = {
        ("model", "org/private-model"): hubserver.Repo(MODEL, token=TOKEN),
        ("dataset", "org/data"): hubserver.Repo(DATASET),
    }
    with hubserver.serving(hubserver.Hub(repos)) as served:
        yield served


def initializer(
    kind: str, hub: hubserver.Hub, home: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m kubetrain.initializers <kind>`` asking ``hub``, with no Hugging Face
    settings of this machine's (token, cache) in its way."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    base.update(HF_ENDPOINT=hub.url, HF_HOME=str(home / "hf-home"), **env)
    return subprocess.run(
        [sys.executable, "-m", "kubetrain.initializers", kind],
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def files(root: Path) -> dict[str, bytes]:
    """What landed, without huggingface_hub's bookkeeping folder."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".cache" not in p.relative_to(root).parts
    }


def test_a_private_model_comes_from_hf_endpoint_with_the_token_and_upstream_s_patterns(
    hub: hubserver.Hub, tmp_path: Path
) -> None:
    out = tmp_path / "model"
    done = initializer(
        "model",
        hub,
        tmp_path,
        STORAGE_URI="hf://org/private-model",
        OUTPUT_PATH=str(out),
        ACCESS_TOKEN=TOKEN,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert files(out) == {
        "config.json": MODEL["config.json"],
        "model.safetensors": WEIGHTS,
        "tokenizer/tokenizer.json": b"{}",
    }, "weights as safetensors, configs and tokenizer files; no duplicates, no README"
    repo_requests = [(m, p, a) for m, p, a in hub.seen if "org/private-model" in p]
    assert {p.split("/resolve/")[0] for _, p, _ in repo_requests} >= {
        "/api/models/org/private-model/revision/main",
        "/org/private-model",
    }, "repo info, then the files' resolve URLs, on the server HF_ENDPOINT names"
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in repo_requests)
    assert "model initializer: 3 of 3 files" in done.stdout, done.stdout
    assert "model initializer: 1.0 MB of 1.0 MB" in done.stdout, done.stdout
    assert TOKEN not in done.stdout + done.stderr
    assert "HTTP Request" not in done.stdout, "the HTTP client's own lines are kept out"


def test_a_public_dataset_keeps_ignore_patterns_and_sends_no_token(
    hub: hubserver.Hub, tmp_path: Path
) -> None:
    out = tmp_path / "dataset"
    done = initializer(
        "dataset",
        hub,
        tmp_path,
        STORAGE_URI="hf://org/data",
        OUTPUT_PATH=str(out),
        IGNORE_PATTERNS="*.md",
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert files(out) == {"train.jsonl": DATASET["train.jsonl"]}
    paths = [p for _, p, _ in hub.seen]
    assert "/api/datasets/org/data/revision/main" in paths
    assert any(p.startswith("/datasets/org/data/resolve/") for p in paths)
    assert all(auth is None for _, _, auth in hub.seen)


@pytest.mark.parametrize(
    ("token", "why"),
    [
        pytest.param(None, "no token", id="without the token"),
        pytest.param("hf_wrong", "a wrong one", id="with a wrong token"),
    ],
)
def test_a_private_model_without_its_token_fails_naming_the_uri(
    hub: hubserver.Hub, tmp_path: Path, token: str | None, why: str
) -> None:
    env = {"ACCESS_TOKEN": token} if token else {}
    done = initializer(
        "model",
        hub,
        tmp_path,
        STORAGE_URI="hf://org/private-model",
        OUTPUT_PATH=str(tmp_path / "model"),
        **env,
    )

    assert done.returncode == 1, why
    assert done.stderr.startswith(
        "error: model initializer: hf://org/private-model: cannot download model "
        "org/private-model from the Hugging Face Hub: RepositoryNotFoundError: 401 "
    ), done.stderr
    assert not (tmp_path / "model").exists() or not files(tmp_path / "model")
