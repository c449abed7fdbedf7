"""The dataset and model initializers: upstream's env contract, file:// and pvc:// copies, the
Hugging Face download (for real, offline), and errors that name the URI. No network: nothing
here reaches beyond this machine. The S3 source's pure parts are in test_s3.py; downloads from
a real S3-compatible server and from a Hub of the tests' own are in
tests/integration/initializers."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

from kubetrain.initializers import InitializerError, fetch, huggingface
from kubetrain.initializers import __main__ as program
from kubetrain.initializers import config as cfg


def configured(kind: str = "dataset", **env: str) -> cfg.Config:
    return cfg.from_env(kind, env)


def fetched(config: cfg.Config) -> None:
    asyncio.run(fetch.fetch(config), debug=True)


@pytest.mark.parametrize(
    ("kind", "env", "message"),
    [
        pytest.param(
            "dataset",
            {},
            "dataset initializer: STORAGE_URI is not set; accepted: a URI of hf://, s3://, "
            "file://, pvc://",
            id="no URI",
        ),
        pytest.param(
            "model",
            {"STORAGE_URI": "cache://schema/table"},
            "model initializer: cache://schema/table: unsupported model storage URI scheme "
            "'cache'; accepted: hf://, s3://, file://, pvc://",
            id="a scheme kubetrain does not fetch",
        ),
        pytest.param(
            "checkpoint",
            {"STORAGE_URI": "hf://a/b"},
            "initializer kind 'checkpoint'; accepted: dataset, model",
            id="an unknown initializer",
        ),
    ],
)
def test_configuration_errors_say_what_is_accepted(
    kind: str, env: dict[str, str], message: str
) -> None:
    with pytest.raises(InitializerError) as caught:
        cfg.from_env(kind, env)
    assert str(caught.value) == message


def test_the_env_contract_is_upstream_s() -> None:
    config = configured(
        "model",
        STORAGE_URI="s3://bucket/llm",
        IGNORE_PATTERNS=" *.bin, ,*.pt",
        ENDPOINT="http://127.0.0.1:9000",
        ACCESS_KEY_ID="key",
        SECRET_ACCESS_KEY="secret",
        REGION="eu-1",
        ACCESS_TOKEN="",
    )
    assert config == cfg.Config(
        kind="model",
        storage_uri="s3://bucket/llm",
        output_path="/workspace/model",
        access_token=None,
        ignore_patterns=("*.bin", "*.pt"),
        endpoint="http://127.0.0.1:9000",
        access_key_id="key",
        secret_access_key="secret",
        region="eu-1",
    )
    assert configured(STORAGE_URI="hf://a/b").output_path == "/workspace/dataset"
    assert configured(STORAGE_URI="hf://a/b", OUTPUT_PATH="/out").output_path == "/out"


def tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def listing(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_file_directory_is_copied_into_the_destination(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source, out = tmp_path / "data", tmp_path / "out"
    tree(source, {"a.csv": "1", "sub/b.csv": "2", "sub/skip.bin": "x"})
    (source / "sub" / "b.csv").chmod(0o640)
    config = configured(
        STORAGE_URI=f"file://{source}", OUTPUT_PATH=str(out), IGNORE_PATTERNS="*.bin"
    )
    caplog.set_level(logging.INFO, logger="kubetrain.initializers")
    fetched(config)
    assert listing(out) == {"a.csv": "1", "sub/b.csv": "2"}
    assert (out / "sub" / "b.csv").stat().st_mode & 0o777 == 0o640, "modes are kept"
    assert caplog.messages[0] == "dataset initializer: 2 files to fetch, 2 B"
    assert "dataset initializer: 2 of 2 files, 2 B of 2 B (100%)" in caplog.messages
    fetched(config)  # a restarted initializer finishes the same copy
    assert listing(out) == {"a.csv": "1", "sub/b.csv": "2"}


def test_a_single_file_lands_under_its_name(tmp_path: Path) -> None:
    tree(tmp_path, {"weights.safetensors": "w"})
    out = tmp_path / "out"
    fetched(
        configured(
            "model", STORAGE_URI=f"file://{tmp_path}/weights.safetensors", OUTPUT_PATH=str(out)
        )
    )
    assert listing(out) == {"weights.safetensors": "w"}


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        pytest.param(
            "file:///no/such/data",
            "dataset initializer: file:///no/such/data: /no/such/data does not exist",
            id="file: a missing path",
        ),
        pytest.param(
            "pvc://claim/digits",
            "dataset initializer: pvc://claim/digits: /mnt/source/digits does not exist "
            "(the claim is mounted at /mnt/source)",
            id="pvc: the claim's path, where the controller mounts it",
        ),
        pytest.param(
            "file://host/data",
            "dataset initializer: file://host/data: a file:// URI names a path on this node: "
            "file:///<path>",
            id="file: another host",
        ),
        pytest.param(
            "s3:///prefix",
            "dataset initializer: s3:///prefix: an s3:// URI names a bucket: "
            "s3://<bucket>/<prefix>",
            id="s3: no bucket",
        ),
        pytest.param(
            "hf://",
            "dataset initializer: hf://: an hf:// URI names a repository: hf://<org>/<name>",
            id="hf: no repository",
        ),
    ],
)
def test_source_errors_name_the_uri(uri: str, message: str) -> None:
    with pytest.raises(InitializerError) as caught:
        fetched(configured(STORAGE_URI=uri, OUTPUT_PATH="/nonexistent/out"))
    assert str(caught.value) == message


def test_a_pvc_uri_reads_from_the_mounted_claim() -> None:
    config = configured(STORAGE_URI="pvc://shared/sets/digits")
    assert cfg.local_source(config) == "/mnt/source/sets/digits"


def test_a_missing_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(InitializerError) as caught:
        fetched(configured("model", STORAGE_URI="hf://a/b"))
    assert str(caught.value) == f"model initializer: hf://a/b: {huggingface.INSTALL_HINT}"


def test_the_program_exits_1_with_the_error_and_2_for_a_wrong_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert program.main(["checkpoint"], {}) == 2
    assert capsys.readouterr().err.strip() == program.USAGE
    assert program.main(["dataset"], {"STORAGE_URI": "gs://b/p"}) == 1
    assert capsys.readouterr().err.strip() == (
        "error: dataset initializer: gs://b/p: unsupported dataset storage URI scheme 'gs'; "
        "accepted: hf://, s3://, file://, pvc://"
    )
    tree(tmp_path / "src", {"x.txt": "x"})
    env = {"STORAGE_URI": f"file://{tmp_path}/src", "OUTPUT_PATH": str(tmp_path / "out")}
    assert program.main(["dataset"], env) == 0
    assert listing(tmp_path / "out") == {"x.txt": "x"}
