"""Every command in the docs' shell blocks runs, for real, and exits as the page says.

The pages run in the order a reader takes them (:mod:`tests.docs.pages`), each in a fresh
shell, against one local control plane that the pages' own commands start in a temporary
``KUBETRAIN_HOME`` (:mod:`tests.docs.runner`); it is stopped with ``kubetrain down`` at the
end. A page can therefore rely on what the pages before it left, as a reader can: the main
example's job, ``pytorch-ddp``, from ``make run``. Two pages that create a job of the same
name must not trip over each other: the first deletes it, or the second applies it
idempotently (``kubectl apply``). Selecting one page's test (``-k``) runs the pages before it
first.

A command that cannot run here (it needs a cluster, or it is the test suite itself) is marked
in the page, right before its block, and reported with its reason at the end of the run; any
other command that does not exit as expected fails its page's test, with its output
(:mod:`tests.docs.blocks` has the markers). Python blocks (docs/sdk.md) are not run here.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

import pytest

from kubetrain.local.node import runtime as node_runtime
from tests.docs import blocks, conftest, pages, runner

PAGES: Final = pages.pages()
TEST_PATH: Final = re.compile(r"\btests/[\w/]+\.py\b")  # a test a marker's reason names


def test_every_page_of_the_guide_has_its_place_in_the_reading_order() -> None:
    """A new page is run too: it must be placed where its commands find what they need."""
    assert pages.guide_on_disk() == set(pages.GUIDE), "add it to GUIDE, after what it relies on"


@pytest.mark.parametrize("page", PAGES)
def test_the_page_markers_name_commands_of_their_blocks_and_tests_that_exist(page: str) -> None:
    for block in pages.page_blocks(page):
        for command in blocks.commands(block):  # raises for a marker that names no command
            for test in TEST_PATH.findall(command.skipped or ""):
                assert (pages.REPOSITORY / test).is_file(), (
                    f"{command.where}: the marker names {test}"
                )


def _skip_reason(page: str) -> str | None:
    commands = [c for b in pages.page_blocks(page) for c in blocks.commands(b) if c.skipped is None]
    if shutil.which("kubectl") is None and any("kubectl" in c.run_as for c in commands):
        return "kubectl is not installed (it is on CI and on our machines)"
    return None


@dataclass
class Docs:
    runner: runner.Runner
    outcomes: dict[str, list[runner.Outcome]] = field(default_factory=dict)

    def run_through(self, page: str) -> list[runner.Outcome]:
        """The outcomes of ``page``, after those of every page before it."""
        for earlier in PAGES[: PAGES.index(page) + 1]:
            if earlier not in self.outcomes and _skip_reason(earlier) is None:
                self.outcomes[earlier] = self.runner.run_page(pages.page_blocks(earlier))
        return self.outcomes[page]


@pytest.fixture(scope="module")
def docs(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Docs]:
    scratch = tmp_path_factory.mktemp("docs")
    probe = node_runtime.Runtime(node_runtime.Settings(root=str(scratch / "probe")))
    if probe.isolation != "namespace":
        pytest.skip(
            "this host gives pods no private mount namespace (needs root or unprivileged user "
            "namespaces), so the service names of the docs' jobs cannot resolve in their pods"
        )
    if not (pages.REPOSITORY / ".venv" / "bin" / "kubetrain").is_file():
        pytest.skip("no .venv/bin/kubetrain, which the docs' commands name (make run creates it)")
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install -e '.[train]'); the docs' jobs use it")
    began = time.monotonic()
    state = Docs(runner.Runner(pages.REPOSITORY, scratch))
    request.config.stash[conftest.OUTCOMES] = state.outcomes
    try:
        yield state
    finally:
        stopped = state.runner.stop()
        request.config.stash[conftest.SECONDS] = time.monotonic() - began
        assert stopped.returncode == 0, f"kubetrain down: {stopped.stdout}{stopped.stderr}"


@pytest.mark.parametrize("page", PAGES)
def test_every_command_of_the_page_exits_as_the_page_says(docs: Docs, page: str) -> None:
    reason = _skip_reason(page)
    if reason is not None:
        pytest.skip(reason)
    outcomes = docs.run_through(page)
    failed = [o for o in outcomes if not o.ok]
    assert not failed, "\n\n".join(
        f"{o.describe()} (expected exit {o.command.expected_exit}):\n{o.command.run_as}\n"
        f"--- output ---\n{o.output}"
        for o in failed
    )
