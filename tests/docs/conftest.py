"""Prints, at the end of a run, what the docs test did with the commands of the docs: per page,
how many ran and for how long; every command not run, with its reason; every command that
failed; and, with ``-v``, every command that ran."""

from __future__ import annotations

import pytest

from tests.docs import runner

OUTCOMES = pytest.StashKey[dict[str, list[runner.Outcome]]]()
SECONDS = pytest.StashKey[float]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    pages = terminalreporter.config.stash.get(OUTCOMES, None)
    if not pages:
        return
    write = terminalreporter.write_line
    terminalreporter.section("docs commands")
    verbose = terminalreporter.config.get_verbosity() > 0
    ran = skipped = 0
    for page, outcomes in pages.items():
        run = [o for o in outcomes if o.returncode is not None]
        not_run = len(outcomes) - len(run)
        seconds = sum(o.seconds for o in run)
        write(f"{page}: {len(run)} run in {seconds:.1f}s, {not_run} not run")
        for outcome in outcomes:
            if not outcome.ok:
                write("  FAILED " + outcome.describe())
            elif outcome.returncode is None or verbose:
                write("  " + outcome.describe())
        ran += len(run)
        skipped += not_run
    seconds_all = terminalreporter.config.stash.get(SECONDS, 0.0)
    write(f"{ran} commands run, {skipped} not run, in {seconds_all:.0f}s with the final stop")
