"""The node's own tools on a pod's PATH: ``nslookup`` answers from the resolver the pod's
processes use (its /etc/hosts), exits 0 for a known name and 1 for an unknown one, as the
init containers that wait with it expect."""

from __future__ import annotations

import os
from pathlib import Path

from kubetrain.local.node import tools


def test_installing_twice_leaves_one_working_copy(tmp_path: Path) -> None:
    first = tools.install(str(tmp_path))
    second = tools.install(str(tmp_path))
    assert first == second
    assert sorted(os.listdir(first)) == ["kubectl-delivery", "kubetrain-pod-ssh", "nslookup"]
