"""How the docs test runs a page's commands: in a scratch copy of the repository root, one
shell per command with the page's exports and directory carried over, each with a time limit.
No control plane: the commands here are plain shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs import blocks, runner

FENCE = "```"


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repository"
    (root / "examples").mkdir(parents=True)
    (root / "examples" / "job.yaml").write_text("kind: Job\n", encoding="utf-8")
    return root


def run(
    repository: Path, scratch: Path, *lines: str, timeout: float = 30.0
) -> list[runner.Outcome]:
    text = "\n".join(lines) + "\n"
    pages = runner.Runner(repository, scratch, command_timeout=timeout)
    return pages.run_page(blocks.blocks(text, "p.md"))


def test_exports_and_directory_carry_from_one_command_to_the_next(
    repository: Path, tmp_path: Path
) -> None:
    outcomes = run(
        repository,
        tmp_path / "scratch",
        f"{FENCE}sh",
        "export GREETING=hello",
        "mkdir -p work && cd work",
        FENCE,
        f"{FENCE}sh",
        'test "$GREETING" = hello && test "$(basename "$PWD")" = work',
        FENCE,
    )
    assert [o.returncode for o in outcomes] == [0, 0, 0], [o.output for o in outcomes]


def test_commands_see_the_repository_and_write_beside_it(repository: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    outcomes = run(
        repository,
        scratch,
        f"{FENCE}sh",
        "cat examples/job.yaml",
        "echo made > made.txt",
        'test "$KUBETRAIN_HOME" != "" && test ! -e "$KUBECONFIG"',
        FENCE,
    )
    assert [o.returncode for o in outcomes] == [0, 0, 0], [o.output for o in outcomes]
    assert outcomes[0].output == "kind: Job\n"
    assert (scratch / "repository" / "made.txt").read_text(encoding="utf-8") == "made\n"
    assert not (repository / "made.txt").exists()


def test_a_failure_is_reported_with_its_output_and_the_page_goes_on(
    repository: Path, tmp_path: Path
) -> None:
    outcomes = run(repository, tmp_path / "s", f"{FENCE}sh", "echo oops >&2; exit 3", "true", FENCE)
    assert [(o.returncode, o.ok) for o in outcomes] == [(3, False), (0, True)]
    assert outcomes[0].output == "oops\n"


def test_a_failure_shown_on_purpose_passes_and_a_skipped_command_does_not_run(
    repository: Path, tmp_path: Path
) -> None:
    outcomes = run(
        repository,
        tmp_path / "s",
        "<!-- the docs test expects `false` to exit 1 -->",
        "<!-- not run by the docs test: `touch`: why -->",
        f"{FENCE}sh",
        "false",
        "touch never",
        FENCE,
    )
    assert [(o.returncode, o.ok) for o in outcomes] == [(1, True), (None, True)]
    assert not (tmp_path / "s" / "repository" / "never").exists()


def test_a_saved_block_is_there_for_the_commands_after_it(repository: Path, tmp_path: Path) -> None:
    outcomes = run(
        repository,
        tmp_path / "s",
        "<!-- the docs test saves this block as `conf/x.yaml` -->",
        f"{FENCE}yaml",
        "a: 1",
        FENCE,
        f"{FENCE}sh",
        "grep -qx 'a: 1' conf/x.yaml",
        FENCE,
    )
    assert [o.returncode for o in outcomes] == [0]


def test_a_command_that_does_not_end_is_killed_at_its_time_limit(
    repository: Path, tmp_path: Path
) -> None:
    outcomes = run(
        repository, tmp_path / "s", f"{FENCE}sh", "echo started; sleep 60", FENCE, timeout=1
    )
    (outcome,) = outcomes
    assert not outcome.ok
    assert outcome.seconds < 30
    assert outcome.output.startswith("started\n")
    assert "no exit within 1s; killed" in outcome.output
