"""The directory ``submit`` and ``run -f`` were typed in, written into the job
(kubetrain.cli.workdir): host-image containers of a v1 job that name no ``workingDir`` get it;
a TrainJob of the host image gets the files its command names here by absolute path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.cli import workdir
from kubetrain.frameworks import hostimage


def container(image: str, **fields: Any) -> dict[str, Any]:
    return {"name": "pytorch", "image": image, "command": ["python3", "train.py"], **fields}


def pytorchjob(master: list[dict[str, Any]], init: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "j"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"template": {"spec": {"containers": master, "initContainers": init}}},
                "Worker": {
                    "template": {"spec": {"containers": [container("kubetrain/python:local")]}}
                },
            }
        },
    }


def test_host_image_containers_without_a_working_dir_get_the_directory() -> None:
    job = pytorchjob(
        [
            container(hostimage.HOST_IMAGE),
            container(hostimage.HOST_IMAGE, workingDir="/keep"),
            container("pytorch/pytorch:2.7.1"),
        ],
        [container("kubetrain.local/host-python")],
    )
    typed = workdir.typed_in(job, "/home/u/proj")
    master = typed["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    worker = typed["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert [c.get("workingDir") for c in master["containers"]] == ["/home/u/proj", "/keep", None]
    assert master["initContainers"][0]["workingDir"] == "/home/u/proj"
    assert worker["containers"][0]["workingDir"] == "/home/u/proj"  # the examples' old name
    assert (
        "workingDir"
        not in job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    )  # the given manifest is left as it was


def trainjob(image: str | None) -> dict[str, Any]:
    trainer: dict[str, Any] = {"args": ["train.py", "--data", "data", "--out", "out", "/abs"]}
    if image:
        trainer["image"] = image
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer},
    }


def test_a_host_image_trainjob_names_the_files_here_by_absolute_path(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("")
    (tmp_path / "data").mkdir()
    typed = workdir.typed_in(trainjob(hostimage.HOST_IMAGE), str(tmp_path))
    assert typed["spec"]["trainer"]["args"] == [
        str(tmp_path / "train.py"),
        "--data",
        str(tmp_path / "data"),
        "--out",
        "out",  # not here: left for the program to make where it runs
        "/abs",
    ]
    runtime_image = workdir.typed_in(trainjob(None), str(tmp_path))
    assert runtime_image["spec"]["trainer"]["args"][0] == "train.py"  # its image has the files


def test_anything_but_a_job_is_left_as_it_is() -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert workdir.typed_in(config, "/x") == config


def test_dry_runs_show_the_directory_typed_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--dry-run`` of ``submit`` and ``run -f`` prints the job with it, touching no server
    (no kubeconfig is reachable here)."""
    from kubetrain.cli import main

    monkeypatch.setenv("KUBETRAIN_HOME", str(tmp_path / "no-plane"))
    monkeypatch.chdir(tmp_path)
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(pytorchjob([container(hostimage.HOST_IMAGE)], [])))
    assert main.main(["run", "-f", str(job), "--dry-run"]) == 0
    ran = yaml.safe_load(capsys.readouterr().out)
    assert main.main(["submit", "tf", "--dry-run", "--", "python3", "hello.py"]) == 0
    submitted = yaml.safe_load(capsys.readouterr().out)
    master = ran["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    worker = submitted["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert master["workingDir"] == worker["workingDir"] == str(tmp_path)
    assert worker["image"] == hostimage.HOST_IMAGE
    assert not (tmp_path / "no-plane").exists()
