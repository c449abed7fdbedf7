"""``kubetrain crds``: the CRDs as one YAML stream on stdout, or as files plus a kustomization."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubetrain import api
from kubetrain.cli import main

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: the CRDs are megabytes


def test_prints_every_crd_as_one_yaml_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["crds"]) == 0
    out = capsys.readouterr().out
    documents = [d for d in yaml.load_all(out, Loader=LOADER) if d is not None]
    assert len(documents) == 10
    assert {d["kind"] for d in documents} == {"CustomResourceDefinition"}
    assert documents == api.crds()


def test_the_stream_has_no_yaml_anchors_and_no_wrapped_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Anchors and folded lines are valid YAML but unreadable in a diff of deploy/crds."""
    main.main(["crds"])
    out = capsys.readouterr().out
    assert "&id" not in out
    assert "*id" not in out
    assert (
        "rule: self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']"
        in out
    )


def test_output_dir_writes_one_file_per_crd_and_a_kustomization(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "crds"
    assert main.main(["crds", "--output-dir", str(target)]) == 0
    assert capsys.readouterr().out == ""
    names = [api.crd_filename(crd) for crd in api.crds()]
    assert sorted(p.name for p in target.iterdir()) == sorted([*names, "kustomization.yaml"])
    for name, crd in zip(names, api.crds(), strict=True):
        assert yaml.load((target / name).read_text(), Loader=LOADER) == crd
    assert yaml.safe_load((target / "kustomization.yaml").read_text()) == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": names,
    }


def test_output_dir_overwrites_what_an_earlier_run_wrote(tmp_path: Path) -> None:
    stale = tmp_path / "kubeflow.org_tfjobs.yaml"
    stale.write_text("old: content\n")
    assert main.main(["crds", "--output-dir", str(tmp_path)]) == 0
    assert yaml.load(stale.read_text(), Loader=LOADER)["spec"]["names"]["kind"] == "TFJob"


def test_an_unwritable_output_dir_is_a_message_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main.main(["crds", "--output-dir", str(blocker / "crds")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kubetrain crds: ")
    assert str(blocker) in err
    assert "Traceback" not in err
