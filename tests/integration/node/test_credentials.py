"""The kubectl a pod gets on its PATH is the one of the node's PATH, copied and run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kubetrain.local.node import tools


def test_kubectl_delivery_copies_kubectl_from_the_path(tmp_path: Path) -> None:
    directory = tools.install(str(tmp_path / "node"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubectl"
    fake.write_text("#!/bin/sh\necho fake kubectl\n")
    fake.chmod(0o755)
    target = tmp_path / "opt-kube"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "TARGET_DIR": str(target)}
    program = os.path.join(directory, tools.KUBECTL_DELIVERY)
    done = subprocess.run([program], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    copied = target / "kubectl"
    assert copied.read_text() == fake.read_text()
    assert os.access(copied, os.X_OK)

    missing = subprocess.run(
        [program],
        env={"PATH": "/nonexistent", "TARGET_DIR": str(target)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert missing.returncode == 1
    assert "no kubectl on this node" in missing.stderr
