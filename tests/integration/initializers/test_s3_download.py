"""The s3:// initializer against a real S3-compatible server: moto's (tests/integration/
initializers/moto_s3.py), started once for this module in the environment ``make test``
installs it in, with request authentication on, so that every request must carry a valid
AWS Signature Version 4 made with a key the server issued.

The initializer runs as its program (``python -m kubetrain.initializers``), as in an
initializer pod, and its files and log are checked.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]
SERVER = Path(__file__).with_name("moto_s3.py")
MOTO_PYTHON = Path(
    os.environ.get("KUBETRAIN_TEST_MOTO_PYTHON") or REPOSITORY / ".venv" / "moto" / "bin" / "python"
)
START_TIMEOUT = 60.0
REGION = "eu-central-1"
BIG = bytes(range(256)) * 10_000  # 2.56 MB: several chunks, and a progress line on the way

BUCKET = {
    "data/train.csv": b"a,b\n1,2\n",
    "data/a b+c.txt": b"spaces and plus",
    "data/\u00e9/\u00fc.txt": b"utf-8 key",
    "data/sub/big.bin": BIG,
    "data/sub/deep/x.json": b"{}",
    "data/empty/": b"",
    "data2/not-under.txt": b"sibling",
    "other/skip.txt": b"elsewhere",
    "llm/config.json": b'{"model_type": "llama"}',
    "llm/model.safetensors": b"weights",
    "llm/pytorch_model.bin": b"duplicate weights",
    "ignored/w.bin": b"x",
}
# a bucket in another region than the one the server's clients are set up for
ELSEWHERE = {"region": "us-west-2", "objects": {"d/x.txt": b"far away"}}


@pytest.fixture(scope="module")
def s3_server() -> Iterator[dict[str, str]]:
    """moto's server with :data:`BUCKET` as ``bucket`` and :data:`ELSEWHERE` as ``far``: its
    endpoint, an access key with S3 rights, a role that key may assume and one it may not."""
    if not MOTO_PYTHON.exists():
        pytest.skip(
            f"moto's server is not installed at {MOTO_PYTHON} (make test installs it: "
            "python3 -m venv .venv/moto && .venv/moto/bin/pip install 'moto[s3]' flask "
            "flask-cors)"
        )

    def objects(given: dict[str, bytes]) -> dict[str, str]:
        return {k: base64.b64encode(v).decode() for k, v in given.items()}

    scenario = {
        "region": REGION,
        "buckets": {
            "bucket": {"region": REGION, "objects": objects(BUCKET)},
            "far": {"region": ELSEWHERE["region"], "objects": objects(ELSEWHERE["objects"])},
        },
    }
    process = subprocess.Popen(
        [str(MOTO_PYTHON), str(SERVER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(json.dumps(scenario) + "\n")
    process.stdin.flush()
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(process.stdout.readline()))
    reader.start()
    reader.join(START_TIMEOUT)
    try:
        if not first or not first[0]:
            process.kill()
            _, errors = process.communicate(timeout=10)
            pytest.fail(f"moto's server did not start:\n{errors[-4000:]}")
        yield json.loads(first[0])
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def initializer(kind: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m kubetrain.initializers <kind>`` with ``env`` over a clean environment."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run(
        [sys.executable, "-m", "kubetrain.initializers", kind],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def signed(server: dict[str, Any], uri: str, out: Path, **env: str) -> dict[str, str]:
    return {
        "STORAGE_URI": uri,
        "OUTPUT_PATH": str(out),
        "ENDPOINT": server["endpoint"],
        "ACCESS_KEY_ID": server["access_key_id"],
        "SECRET_ACCESS_KEY": server["secret_access_key"],
        **env,
    }


def test_a_signed_download_fetches_every_object_under_the_prefix_with_progress(
    s3_server: dict[str, str], tmp_path: Path
) -> None:
    done = initializer("dataset", signed(s3_server, "s3://bucket/data", tmp_path, REGION=REGION))

    assert done.returncode == 0, done.stderr
    assert files(tmp_path) == {
        "a b+c.txt": b"spaces and plus",
        "sub/big.bin": BIG,
        "sub/deep/x.json": b"{}",
        "train.csv": b"a,b\n1,2\n",
        "\u00e9/\u00fc.txt": b"utf-8 key",
    }, "siblings that share the letters (data2/) and folder markers stay out"
    log = done.stdout
    assert "dataset initializer: 5 files to fetch, 2.6 MB" in log, log
    assert "dataset initializer: 5 of 5 files, 2.6 MB of 2.6 MB (100%)" in log, log
    assert "dataset initializer: fetched 5 files, 2.6 MB in" in log, log
    assert s3_server["secret_access_key"] not in log + done.stderr


def test_a_model_keeps_upstream_s_patterns_and_the_aws_variables_work(
    s3_server: dict[str, str], tmp_path: Path
) -> None:
    env = {
        "STORAGE_URI": "s3://bucket/llm",
        "OUTPUT_PATH": str(tmp_path),
        "AWS_ENDPOINT_URL": s3_server["endpoint"],
        "AWS_ACCESS_KEY_ID": s3_server["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": s3_server["secret_access_key"],
    }

    done = initializer("model", env)

    assert done.returncode == 0, done.stderr
    assert files(tmp_path) == {
        "config.json": b'{"model_type": "llama"}',
        "model.safetensors": b"weights",
    }, "no region given: the client asks the server where the bucket is; *.bin ignored"


def test_a_bucket_in_another_region_is_found_there(
    s3_server: dict[str, str], tmp_path: Path
) -> None:
    done = initializer("dataset", signed(s3_server, "s3://far/d", tmp_path))

    assert done.returncode == 0, done.stderr
    assert files(tmp_path) == {"x.txt": b"far away"}


def test_a_role_is_assumed_and_its_temporary_keys_sign(
    s3_server: dict[str, str], tmp_path: Path
) -> None:
    env = signed(s3_server, "s3://bucket/data/sub/deep", tmp_path, ROLE_ARN=s3_server["role_arn"])

    done = initializer("dataset", env)

    assert done.returncode == 0, done.stderr
    assert files(tmp_path) == {"x.json": b"{}"}


def test_a_role_the_keys_may_not_assume_is_refused(
    s3_server: dict[str, str], tmp_path: Path
) -> None:
    role = s3_server["locked_role_arn"]
    done = initializer("dataset", signed(s3_server, "s3://bucket/data", tmp_path, ROLE_ARN=role))

    assert done.returncode == 1
    endpoint = s3_server["endpoint"]
    assert done.stderr.strip() == (
        f"error: dataset initializer: s3://bucket/data: cannot download from S3 at {endpoint}: "
        f"cannot assume role {role} through STS at {endpoint}: ValueError: {endpoint} failed "
        "with HTTP status code 403"
    )
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("uri", "env", "message"),
    [
        pytest.param(
            "s3://bucket/data",
            {"SECRET_ACCESS_KEY": "not-the-secret"},
            "cannot download from S3 at <endpoint>: 403 SignatureDoesNotMatch: The request "
            "signature we calculated does not match the signature you provided. Check your key "
            "and signing method. (bucket)",
            id="a wrong secret: refused by the server, and never printed",
        ),
        pytest.param(
            "s3://missing/data",
            {},
            "cannot download from S3 at <endpoint>: 404 NoSuchBucket: The specified bucket "
            "does not exist (missing)",
            id="a bucket that does not exist",
        ),
        pytest.param(
            "s3://bucket/dat",
            {},
            "no objects under s3://bucket/dat at <endpoint>",
            id="a prefix that is only the start of names is not a folder",
        ),
        pytest.param(
            "s3://bucket/ignored",
            {"IGNORE_PATTERNS": "*.bin,*.tmp"},
            "no objects under s3://bucket/ignored at <endpoint> (1 skipped by IGNORE_PATTERNS)",
            id="everything ignored",
        ),
    ],
)
def test_errors_name_the_uri_and_the_endpoint(
    s3_server: dict[str, str], tmp_path: Path, uri: str, env: dict[str, str], message: str
) -> None:
    done = initializer("dataset", signed(s3_server, uri, tmp_path, REGION=REGION, **env))

    assert done.returncode == 1
    text = done.stderr.strip().replace(s3_server["endpoint"], "<endpoint>")
    assert text == f"error: dataset initializer: {uri}: {message}"
    assert "not-the-secret" not in done.stdout + done.stderr


def test_an_endpoint_that_does_not_answer_is_named(tmp_path: Path) -> None:
    env = {"STORAGE_URI": "s3://bucket/data", "OUTPUT_PATH": str(tmp_path)}
    done = initializer("dataset", {**env, "ENDPOINT": "http://127.0.0.1:9", "REGION": REGION})

    assert done.returncode == 1
    assert done.stderr.startswith(
        "error: dataset initializer: s3://bucket/data: cannot download from S3 at "
        "http://127.0.0.1:9: MaxRetryError: "
    ), done.stderr
    assert "Connection refused" in done.stderr, done.stderr
