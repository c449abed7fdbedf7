"""Every training manifest the docs show passes ``kubetrain validate``: each file under
``examples/``, and each fenced ``yaml`` block of the README, the guide and the examples' READMEs.

Only the documents of the training API groups (``kubeflow.org``, ``trainer.kubeflow.org``) are
checked; the others (a PersistentVolumeClaim beside a job, a Secret, RBAC) are Kubernetes' own
and ``kubetrain validate`` does not know them. A TrainJob is checked against its runtime: the
built-in runtimes of ``deploy/runtimes/`` and the runtimes the same page (or the same example
folder) defines are given to ``validate`` with it. A block without ``apiVersion`` and
``kind`` is a fragment of a manifest and is not checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from kubetrain.cli import main
from tests.docs import blocks, pages

REPOSITORY: Final = pages.REPOSITORY

GROUPS: Final = ("kubeflow.org", "trainer.kubeflow.org")
RUNTIME_KINDS: Final = ("TrainingRuntime", "ClusterTrainingRuntime")
BUILTIN_RUNTIMES: Final = tuple(
    sorted(
        p
        for p in (REPOSITORY / "deploy" / "runtimes").glob("*.yaml")
        if p.name != "kustomization.yaml"
    )
)


def training_documents(text: str) -> list[dict[str, Any]]:
    """The documents of the training API groups; a YAML error is the test's failure."""
    found = []
    for document in yaml.safe_load_all(text):
        if not isinstance(document, dict):
            continue
        group = str(document.get("apiVersion") or "").partition("/")[0]
        if group in GROUPS and document.get("kind"):
            found.append(document)
    return found


def example_files() -> list[Path]:
    return sorted((REPOSITORY / "examples").rglob("*.yaml"))


def yaml_blocks() -> list[blocks.Block]:
    found = []
    for page in pages.pages():
        text = (REPOSITORY / page).read_text(encoding="utf-8")
        found += [b for b in blocks.blocks(text, page) if b.language in ("yaml", "yml")]
    return found


def manifest_blocks() -> list[blocks.Block]:
    return [b for b in yaml_blocks() if training_documents(b.text)]


def validate(
    capsys: pytest.CaptureFixture[str], where: str, documents: list[dict[str, Any]], tmp: Path
) -> None:
    """``kubetrain validate -q -f <documents> -f <runtimes>...``, which must say nothing."""
    job = tmp / "documents.yaml"
    job.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    files = ["-f", str(job)]
    for runtime in BUILTIN_RUNTIMES:
        files += ["-f", str(runtime)]
    capsys.readouterr()
    code = main.main(["validate", "-q", *files])
    out, err = capsys.readouterr()
    assert (code, out) == (0, ""), f"{where}: kubetrain validate exited {code}:\n{err}{out}"
    assert "not in the given files" not in err, f"{where}: a TrainJob's runtime is unknown: {err}"


def test_the_examples_and_the_docs_show_training_manifests() -> None:
    """An empty glob would pass silently."""
    assert len(example_files()) >= 5
    assert len(manifest_blocks()) >= 5


@pytest.mark.parametrize(
    "path", example_files(), ids=lambda p: str(p.relative_to(REPOSITORY / "examples"))
)
def test_every_example_manifest_passes_validate(
    path: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    documents = training_documents(path.read_text(encoding="utf-8"))
    assert documents, f"{path}: no training manifest in it"
    # The runtimes that examples of the same folder define, for a TrainJob that names one.
    neighbours = [
        d
        for other in sorted(path.parent.glob("*.yaml"))
        if other != path
        for d in training_documents(other.read_text(encoding="utf-8"))
        if d["kind"] in RUNTIME_KINDS
    ]
    validate(capsys, str(path.relative_to(REPOSITORY)), neighbours + documents, tmp_path)


@pytest.mark.parametrize("block", manifest_blocks(), ids=lambda b: b.where())
def test_every_manifest_in_the_docs_passes_validate(
    block: blocks.Block, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    documents = training_documents(block.text)
    text = (REPOSITORY / block.path).read_text(encoding="utf-8")
    page_runtimes = [
        d
        for other in blocks.blocks(text, block.path)
        if other.language in ("yaml", "yml") and other.line != block.line
        for d in training_documents(other.text)
        if d["kind"] in RUNTIME_KINDS
    ]
    validate(capsys, block.where(), page_runtimes + documents, tmp_path)


def test_the_check_fails_for_a_misspelt_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The checks above can fail: a manifest with an unknown field does not pass."""
    documents = training_documents(
        (REPOSITORY / "examples" / "pytorch" / "pytorchjob.yaml").read_text(encoding="utf-8")
    )
    documents[0]["spec"]["pytorchReplicaSpecs"]["Master"]["replica"] = 1
    with pytest.raises(AssertionError, match=r'replica: Unknown field: did you mean "replicas"'):
        validate(capsys, "a misspelt field", documents, tmp_path)
