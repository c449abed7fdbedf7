"""``kubetrain validate``: inputs, output formats, messages and exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import api
from kubetrain.cli import main, validate
from tests.builders import job

Run = tuple[int, str, str]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    capsys.readouterr()
    code = main.main(["validate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, *docs: Any) -> Path:
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(docs[0]), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return path


def pytorch(name: str = "p") -> dict[str, Any]:
    return job("PyTorchJob", name).replica("Master").replica("Worker", 2).doc()


def jax(name: str = "j") -> dict[str, Any]:
    return job("JAXJob", name).replica("Worker", 2).doc()


TORCH_RUNTIME: dict[str, Any] = yaml.safe_load(
    """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: torch-distributed
  labels:
    trainer.kubeflow.org/framework: torch
spec:
  mlPolicy:
    numNodes: 1
    torch:
      numProcPerNode: auto
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime
                      command: [torchrun, train.py]
"""
)


def trainjob(runtime: str = "torch-distributed", kind: str | None = None, ns: str | None = None):
    ref: dict[str, Any] = {"name": runtime}
    if kind is not None:
        ref["kind"] = kind
    meta: dict[str, Any] = {"name": "tj"}
    if ns is not None:
        meta["namespace"] = ns
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": meta,
        "spec": {"runtimeRef": ref, "trainer": {"numNodes": 2}},
    }


def training_runtime(ns: str | None) -> dict[str, Any]:
    runtime = json.loads(json.dumps(TORCH_RUNTIME))
    runtime["kind"] = "TrainingRuntime"
    if ns is not None:
        runtime["metadata"]["namespace"] = ns
    return runtime


# --- inputs -------------------------------------------------------------------------------


def test_a_valid_file_prints_the_defaulted_object_and_exits_0(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "-f", str(write(tmp_path, "p.yaml", pytorch())))
    assert (code, err) == (0, "")
    printed = yaml.safe_load(out)
    assert printed == api.review(pytorch()).obj.to_dict()  # type: ignore[union-attr]
    assert printed["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] == "OnFailure"


def test_stdin_is_read_when_the_file_is_a_dash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(jax())))
    code, out, _ = run(capsys, "-f", "-", "-o", "name")
    assert (code, out) == (0, "jaxjob.kubeflow.org/j\n")


def test_every_document_of_a_multi_document_file_is_printed_in_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(
        yaml.safe_dump(pytorch("a")) + "---\n---\n" + yaml.safe_dump(jax("b")) + "---\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "-f", str(path))
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("PyTorchJob", "a"),
        ("JAXJob", "b"),
    ]
    assert "\n---\n" in out


def test_several_files_are_read_in_the_order_given(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = write(tmp_path, "z.yaml", jax("z"))
    second = write(tmp_path, "a.yaml", jax("a"))
    code, out, _ = run(capsys, "-f", str(first), "-f", str(second), "-o", "name")
    assert (code, out) == (0, "jaxjob.kubeflow.org/z\njaxjob.kubeflow.org/a\n")


def test_a_json_file_holding_one_object_is_accepted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "-f", str(write(tmp_path, "j.json", jax())), "-o", "name")
    assert (code, out) == (0, "jaxjob.kubeflow.org/j\n")


def test_a_list_is_expanded_into_its_items(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": [jax("a"), pytorch("b")]}
    path = write(tmp_path, "list.json", listing)
    code, out, _ = run(capsys, "-f", str(path), "-o", "name")
    assert (code, out) == (0, "jaxjob.kubeflow.org/a\npytorchjob.kubeflow.org/b\n")


def test_a_directory_means_its_manifest_files_in_name_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write(tmp_path, "b.yaml", jax("b"))
    write(tmp_path, "a.json", jax("a"))
    write(tmp_path, "c.yml", jax("c"))
    (tmp_path / "notes.txt").write_text("not a manifest", encoding="utf-8")
    (tmp_path / "nested.yaml").mkdir()
    code, out, _ = run(capsys, "-f", str(tmp_path), "-o", "name")
    assert code == 0
    assert out.split() == [f"jaxjob.kubeflow.org/{n}" for n in ("a", "b", "c")]


def test_unquoted_timestamps_stay_strings_as_kubernetes_reads_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "t.yaml"
    doc = yaml.safe_dump(jax()).replace(
        "metadata:\n", "metadata:\n  creationTimestamp: 2025-01-02T03:04:05Z\n"
    )
    path.write_text(doc, encoding="utf-8")
    code, out, err = run(capsys, "-f", str(path), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["metadata"]["creationTimestamp"] == "2025-01-02T03:04:05Z"


def test_replica_keys_in_any_case_are_printed_camel_cased(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = job("TFJob", "t").replica("ps").replica("WORKER", 2).doc()
    code, out, _ = run(capsys, "-f", str(write(tmp_path, "t.yaml", doc)))
    assert code == 0
    assert list(yaml.safe_load(out)["spec"]["tfReplicaSpecs"]) == ["PS", "Worker"]


# --- output formats -----------------------------------------------------------------------


def test_json_output_of_one_object_is_that_object(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "-f", str(write(tmp_path, "j.yaml", jax())), "-o", "json")
    assert code == 0
    assert json.loads(out) == api.review(jax()).obj.to_dict()  # type: ignore[union-attr]


def test_json_output_of_several_objects_is_a_list(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "two.yaml", jax("a"), jax("b"))
    code, out, _ = run(capsys, "-f", str(path), "-o", "json")
    assert code == 0
    printed = json.loads(out)
    assert (printed["apiVersion"], printed["kind"]) == ("v1", "List")
    assert [item["metadata"]["name"] for item in printed["items"]] == ["a", "b"]


def test_quiet_prints_nothing_when_everything_is_valid(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mx = job("MXJob", "m").replica("Scheduler").doc()
    assert run(capsys, "-q", "-f", str(write(tmp_path, "m.yaml", mx))) == (0, "", "")


def test_quiet_still_reports_problems(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = job("JAXJob", "j").replica("Worker", -1).doc()
    code, out, err = run(capsys, "-q", "-f", str(write(tmp_path, "j.yaml", bad)))
    assert (code, out) == (1, "")
    assert "JAXJob/j: spec.jaxReplicaSpecs[Worker].replicas" in err


# --- warnings and errors ------------------------------------------------------------------


def test_an_mxjob_is_accepted_with_a_deprecation_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mx = job("MXJob", "m").replica("Scheduler").doc()
    code, out, err = run(capsys, "-f", str(write(tmp_path, "m.yaml", mx)))
    assert code == 0
    assert out
    lines = err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("Warning: MXJob/m: MXJob is deprecated")


def test_the_deprecated_elastic_nproc_field_is_accepted_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = job("PyTorchJob", "p").replica("Worker", 2).spec(elasticPolicy={"nProcPerNode": 2}).doc()
    code, _, err = run(capsys, "-f", str(write(tmp_path, "p.yaml", doc)))
    assert code == 0
    assert err.splitlines() == [
        "Warning: PyTorchJob/p: spec.elasticPolicy.nProcPerNode is deprecated, "
        "use spec.nprocPerNode instead"
    ]


def test_an_invalid_object_prints_every_problem_and_nothing_on_stdout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = (
        job("PyTorchJob", "Bad_Name")
        .replica("Master", 2, containers=[{"name": "main", "image": "x"}])
        .doc()
    )
    path = write(tmp_path, "jobs.yaml", jax("fine"), bad)
    code, out, err = run(capsys, "-f", str(path))
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines == api.review(bad).messages()
    assert len(lines) == 3
    assert all(line.startswith("PyTorchJob/Bad_Name: ") for line in lines)


def test_problems_of_every_file_are_reported_together(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = write(tmp_path, "a.yaml", job("JAXJob", "a").replica("Worker", -1).doc())
    second = write(tmp_path, "b.yaml", job("JAXJob", "b").replica("Master").doc())
    code, _, err = run(capsys, "-f", str(first), "-f", str(second))
    assert code == 1
    assert [line.split(":")[0] for line in err.splitlines()] == ["JAXJob/a", "JAXJob/b"]


def test_malformed_yaml_names_the_line_and_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: kubeflow.org/v1\nkind: JAXJob\nmetadata:\n\tname: j\n")
    code, out, err = run(capsys, "-f", str(path))
    assert (code, out) == (1, "")
    assert err == f"{path}: line 4, column 1: found character '\\t' that cannot start any token\n"


def test_malformed_json_names_the_line_and_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "apiVersion": "kubeflow.org/v1",\n  "kind": JAXJob\n}\n')
    code, _, err = run(capsys, "-f", str(path))
    assert code == 1
    assert err == f"{path}: line 3, column 11: Expecting value\n"


def test_documents_before_a_syntax_error_are_still_judged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mixed.yaml"
    bad = job("JAXJob", "j").replica("Worker", -1).doc()
    path.write_text(yaml.safe_dump(bad) + "---\nkind: [\n", encoding="utf-8")
    code, _, err = run(capsys, "-f", str(path))
    assert code == 1
    lines = err.splitlines()
    assert lines[0].startswith(f"{path}: line ")
    assert lines[1:] == api.review(bad).messages()


def test_a_document_that_is_not_an_object_is_named_by_its_position(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump(jax()) + "---\n- a\n- b\n", encoding="utf-8")
    code, out, err = run(capsys, "-f", str(path))
    assert (code, out) == (1, "")
    assert err == f"{path}: document 2: must be an object with apiVersion and kind\n"


def test_a_missing_file_is_reported_without_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "nope.yaml"
    assert run(capsys, "-f", str(path)) == (1, "", f"{path}: No such file or directory\n")


def test_a_file_that_is_not_utf8_is_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"kind: caf\xe9\n")
    assert run(capsys, "-f", str(path)) == (1, "", f"{path}: not UTF-8 text (byte 10)\n")


def test_input_without_any_object_is_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("# only a comment\n---\n"))
    assert run(capsys, "-f", "-") == (1, "", "no objects found in <stdin>\n")


def test_an_unknown_output_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main.main(["validate", "-f", "-", "-o", "wide"])
    assert exit_info.value.code == 2


# --- TrainJob runtimes ---------------------------------------------------------------------


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Records, per object name, the runtime lookup that ``validate`` passed to ``review``."""
    seen: dict[str, Any] = {}
    real = api.review

    def spy(raw: Any, old: Any = None, *, find_runtime: Any = None) -> api.Review:
        seen[api.subject(raw)] = find_runtime
        return real(raw, old, find_runtime=find_runtime)

    monkeypatch.setattr(api, "review", spy)
    return seen


def test_a_trainjob_sees_the_cluster_runtime_given_in_the_same_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lookups: dict[str, Any]
) -> None:
    path = write(tmp_path, "job.yaml", trainjob(), TORCH_RUNTIME)
    code, out, err = run(capsys, "-f", str(path), "-o", "name")
    assert "note:" not in err
    find_runtime = lookups["TrainJob/tj"]
    assert find_runtime is not None
    found = find_runtime("ClusterTrainingRuntime", None, "torch-distributed")
    assert isinstance(found, api.ClusterTrainingRuntime)
    assert find_runtime("ClusterTrainingRuntime", None, "other") is None
    assert code == 0, err
    assert out.split() == [
        "trainjob.trainer.kubeflow.org/tj",
        "clustertrainingruntime.trainer.kubeflow.org/torch-distributed",
    ]


def test_a_trainjob_sees_a_namespaced_runtime_from_another_file_in_its_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lookups: dict[str, Any]
) -> None:
    job_file = write(tmp_path, "job.yaml", trainjob(kind="TrainingRuntime", ns="team-a"))
    runtime_file = write(tmp_path, "rt.yaml", training_runtime("team-a"))
    _, _, err = run(capsys, "-f", str(job_file), "-f", str(runtime_file))
    assert "note:" not in err
    found = lookups["TrainJob/tj"]("TrainingRuntime", "team-a", "torch-distributed")
    assert isinstance(found, api.TrainingRuntime)


def test_a_namespaced_runtime_without_a_namespace_is_in_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lookups: dict[str, Any]
) -> None:
    path = write(tmp_path, "job.yaml", trainjob(kind="TrainingRuntime"), training_runtime(None))
    _, _, err = run(capsys, "-f", str(path))
    assert "note:" not in err
    assert lookups["TrainJob/tj"]("TrainingRuntime", "default", "torch-distributed") is not None


def test_a_runtime_in_another_namespace_does_not_count(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lookups: dict[str, Any]
) -> None:
    path = write(
        tmp_path, "job.yaml", trainjob(kind="TrainingRuntime", ns="team-a"), training_runtime("b")
    )
    _, _, err = run(capsys, "-f", str(path))
    assert lookups["TrainJob/tj"] is None
    assert (
        "note: TrainJob/tj: runtime TrainingRuntime/torch-distributed is not in the given files; "
        "checks that need it were skipped"
    ) in err.splitlines()


def test_a_trainjob_whose_runtime_is_absent_is_checked_without_it_and_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lookups: dict[str, Any]
) -> None:
    _, _, err = run(capsys, "-f", str(write(tmp_path, "job.yaml", trainjob())))
    assert lookups["TrainJob/tj"] is None
    assert (
        "note: TrainJob/tj: runtime ClusterTrainingRuntime/torch-distributed is not in the "
        "given files; checks that need it were skipped"
    ) in err.splitlines()


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        pytest.param(
            "spec: &s {again: *s}\n",
            "spec.again: contains itself (a recursive YAML alias)",
            id="a recursive alias",
        ),
        pytest.param(
            "spec: {blob: !!binary /w==}\n",
            "spec.blob: a !!binary value has no JSON form",
            id="binary data",
        ),
        pytest.param(
            "spec: {x: [1, .nan]}\n", "spec.x[1]: .nan has no JSON form", id="not a number"
        ),
        pytest.param(
            "spec: " + "{a: " * 101 + "1" + "}" * 101 + "\n",
            "spec" + ".a" * 99 + ": nested more than 100 levels deep",
            id="absurd nesting",
        ),
    ],
)
def test_yaml_that_json_cannot_hold_is_reported_by_document(
    yaml_text: str, problem: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text("apiVersion: kubeflow.org/v1\nkind: JAXJob\n" + yaml_text, encoding="utf-8")
    assert run(capsys, "-f", str(path)) == (1, "", f"{path}: document 1: {problem}\n")


def test_yaml_anchors_are_expanded_so_each_use_is_defaulted_on_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec:\n"
        "  pytorchReplicaSpecs:\n"
        "    Master: &replica\n"
        "      replicas: 1\n"
        "      template: {spec: {containers: [{name: pytorch, image: x}]}}\n"
        "    Worker: *replica\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "-f", str(path))
    assert code == 0
    assert "&" not in out
    assert "*" not in out


# --- objects of other groups ----------------------------------------------------------------

PVC: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


def test_a_core_object_beside_a_job_is_passed_on_as_given_with_a_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "job.yaml", PVC, pytorch("a"))
    code, out, err = run(capsys, "-f", str(path))
    assert code == 0
    pvc, job_ = list(yaml.safe_load_all(out))
    assert pvc == PVC
    assert job_["kind"] == "PyTorchJob"
    assert "PersistentVolumeClaim/data: not a kubetrain kind; passed on unchecked" in err
    code, out, _ = run(capsys, "-f", str(path), "-o", "name")
    assert out.splitlines() == ["persistentvolumeclaim/data", "pytorchjob.kubeflow.org/a"]


def test_a_misspelt_kind_of_a_kubeflow_group_is_still_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    wrong = {**pytorch("a"), "kind": "PytorchJob"}
    code, out, err = run(capsys, "-f", str(write(tmp_path, "job.yaml", wrong)))
    assert (code, out) == (1, "")
    assert "PytorchJob/a: kind: Unsupported value" in err


def test_an_object_without_api_version_is_an_error_not_passed_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bare = {k: v for k, v in PVC.items() if k != "apiVersion"}
    code, out, err = run(capsys, "-f", str(write(tmp_path, "pvc.yaml", bare)))
    assert (code, out) == (1, "")
    assert "PersistentVolumeClaim/data" in err


@pytest.mark.parametrize(
    ("api_version", "kind", "judged"),
    [
        ("kubeflow.org/v1", "PyTorchJob", True),
        ("trainer.kubeflow.org/v1alpha1", "TrainJob", True),
        ("kubeflow.org/v1", "NoSuchKind", True),
        ("v1", "Secret", False),
        ("scheduling.volcano.sh/v1beta1", "PodGroup", False),
        (" ", "Secret", True),
        ("Apps/V1", "Deployment", True),
        ("v1", "", True),
        (None, "Secret", True),
    ],
)
def test_what_validate_judges_and_what_it_passes_on(
    api_version: str | None, kind: str, judged: bool
) -> None:
    raw = {"kind": kind, "metadata": {"name": "x"}}
    if api_version is not None:
        raw["apiVersion"] = api_version
    assert validate.judged(raw) is judged
