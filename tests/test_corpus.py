"""The manifest corpus, run through ``kubetrain validate`` exactly as a user would run it.

- ``corpus/invalid/*.yaml``: rejected (exit 1), and every ``# expect: <line>`` comment in the
  file is a whole line of stderr. A file without one fails, so no case goes unchecked.
- ``corpus/valid/*.yaml``: accepted (exit 0), and the printed YAML validates again to the same
  output, so defaulting is idempotent and what we print is what we accept.
- ``corpus/seeds/*.yaml``: manifests taken from articles users learn from; with ``# expect:``
  lines they are judged like invalid files, without them like valid ones.

Files are run from their own directory, so messages name them by their bare file name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrain.cli import main

CORPUS = Path(__file__).parent / "corpus"
EXPECT = "# expect:"


def corpus(folder: str) -> list[Path]:
    return sorted((CORPUS / folder).glob("*.yaml"))


def expectations(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line[len(EXPECT) :].strip() for line in lines if line.startswith(EXPECT)]


def validate(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main.main(["validate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def check_rejected(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = expectations(path)
    assert expected, f"{path.name} has no '{EXPECT} <line>' comment saying how it must fail"
    code, out, err = validate(["-f", path.name], capsys)
    assert code == 1, err
    assert out == ""
    missing = [line for line in expected if line not in err.splitlines()]
    assert not missing, f"missing from stderr:\n{err}"


def check_accepted(path: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = validate(["-f", path.name], capsys)
    assert code == 0, err
    assert out.strip(), "an accepted manifest prints its defaulted objects"
    printed = tmp_path / "defaulted.yaml"
    printed.write_text(out, encoding="utf-8")
    again_code, again, again_err = validate(["-f", str(printed)], capsys)
    assert again_code == 0, again_err
    assert again == out, "defaulting the printed objects again changed them"


@pytest.fixture
def capsys_in_dir(
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> pytest.CaptureFixture[str]:
    """capsys, with the working directory set to the folder of the corpus file under test."""
    monkeypatch.chdir(request.getfixturevalue("path").parent)
    return capsys


@pytest.mark.parametrize("path", corpus("invalid"), ids=lambda p: p.name)
def test_invalid_manifest_is_rejected_with_its_expected_messages(
    path: Path, capsys_in_dir: pytest.CaptureFixture[str]
) -> None:
    check_rejected(path, capsys_in_dir)


@pytest.mark.parametrize("path", corpus("valid"), ids=lambda p: p.name)
def test_valid_manifest_is_accepted_and_its_defaulted_form_round_trips(
    path: Path, capsys_in_dir: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert not expectations(path), f"{path.name} is valid and must not carry '{EXPECT}' lines"
    check_accepted(path, capsys_in_dir, tmp_path)


@pytest.mark.parametrize("path", corpus("seeds"), ids=lambda p: p.name)
def test_seed_manifest_is_judged_as_its_expectations_say(
    path: Path, capsys_in_dir: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if expectations(path):
        check_rejected(path, capsys_in_dir)
    else:
        check_accepted(path, capsys_in_dir, tmp_path)


def test_every_corpus_folder_has_cases() -> None:
    """An empty glob would pass silently; the corpus must not vanish unnoticed."""
    assert len(corpus("invalid")) >= 40
    assert len(corpus("valid")) >= 10
    assert corpus("seeds")
