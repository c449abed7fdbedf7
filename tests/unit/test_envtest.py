"""Where the real control plane's binaries are found: envtest's KUBEBUILDER_ASSETS, etcd also on
PATH, and a one-line reason naming what to set when something is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubetrain import envtest

BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_without_the_variable_the_reason_names_it() -> None:
    with pytest.raises(envtest.AssetsMissing, match="KUBEBUILDER_ASSETS is not set") as info:
        envtest.find_assets({"PATH": ""})
    assert "setup-envtest" in str(info.value)


def test_every_binary_comes_from_the_assets_directory(tmp_path: Path) -> None:
    for name in (*BINARIES, "etcd"):
        _executable(tmp_path / name)
    assets = envtest.find_assets({"KUBEBUILDER_ASSETS": str(tmp_path), "PATH": ""})
    assert assets.kube_apiserver == str(tmp_path / "kube-apiserver")
    assert assets.kube_controller_manager == str(tmp_path / "kube-controller-manager")
    assert assets.kube_scheduler == str(tmp_path / "kube-scheduler")
    assert assets.etcd == str(tmp_path / "etcd")


def test_etcd_may_come_from_path(tmp_path: Path) -> None:
    assets_dir, bin_dir = tmp_path / "assets", tmp_path / "bin"
    assets_dir.mkdir()
    bin_dir.mkdir()
    for name in BINARIES:
        _executable(assets_dir / name)
    etcd = _executable(bin_dir / "etcd")
    environ = {"KUBEBUILDER_ASSETS": str(assets_dir), "PATH": str(bin_dir)}
    assert envtest.find_assets(environ).etcd == str(etcd)


@pytest.mark.parametrize("missing", [*BINARIES, "etcd"])
def test_a_missing_binary_is_named(tmp_path: Path, missing: str) -> None:
    for name in (*BINARIES, "etcd"):
        if name != missing:
            _executable(tmp_path / name)
    with pytest.raises(envtest.AssetsMissing, match=f"has no {missing}:"):
        envtest.find_assets({"KUBEBUILDER_ASSETS": str(tmp_path), "PATH": ""})


def test_a_file_that_is_not_executable_does_not_count(tmp_path: Path) -> None:
    for name in (*BINARIES, "etcd"):
        _executable(tmp_path / name)
    os.chmod(tmp_path / "kube-apiserver", 0o644)
    with pytest.raises(envtest.AssetsMissing, match="has no kube-apiserver"):
        envtest.find_assets({"KUBEBUILDER_ASSETS": str(tmp_path), "PATH": ""})
