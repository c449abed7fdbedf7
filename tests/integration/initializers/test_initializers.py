"""The Hugging Face initializer without a network, run as the initializer container runs it (a
child Python): offline, or with a Hub that does not answer on a local port, its error names
the URI. The initializers' other behaviour is tested in tests/unit/initializers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "network",
    [
        pytest.param({"HF_HUB_OFFLINE": "1"}, id="offline mode"),
        pytest.param({"HF_ENDPOINT": "http://127.0.0.1:{port}"}, id="the hub does not answer"),
    ],
)
def test_without_network_the_hf_error_names_the_uri(
    tmp_path: Path, network: dict[str, str]
) -> None:
    pytest.importorskip("huggingface_hub", reason="huggingface_hub is in the test extra")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update({k: v.format(port=free_port()) for k, v in network.items()})
    env.update(
        STORAGE_URI="hf://tatsu-lab/alpaca",
        OUTPUT_PATH=str(tmp_path / "out"),
        HF_HOME=str(tmp_path / "hf"),
        HF_HUB_ETAG_TIMEOUT="2",
        HF_HUB_DOWNLOAD_TIMEOUT="2",
    )
    done = subprocess.run(
        [sys.executable, "-m", "kubetrain.initializers", "dataset"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "error: dataset initializer: hf://tatsu-lab/alpaca: cannot download dataset "
        "tatsu-lab/alpaca from the Hugging Face Hub: "
    ), done.stderr
