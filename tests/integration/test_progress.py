"""``kubetrain.report`` seen from a child Python: ``import kubetrain`` stays light, and the last
report is sent when a script exits at once."""

from __future__ import annotations

import subprocess
import sys

import kubetrain
from kubetrain import progress


def test_kubetrain_report_is_the_function_and_import_kubetrain_stays_light() -> None:
    assert kubetrain.report is progress.report
    code = (
        "import sys, kubetrain; "
        "print(sorted(m for m in ('kubetrain.progress', 'kubetrain.kube', 'kubernetes', 'aiohttp')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


EXIT_SCRIPT = """
import asyncio, concurrent.futures.thread
from kubetrain import progress

def send(target, status):  # as the client does: a worker thread of asyncio's executor
    asyncio.run(asyncio.to_thread(print, "sent", status["progressPercentage"], flush=True))

reporter = progress.Reporter(progress.Target("ns", "job"), send, interval=60.0)
progress._at_exit(reporter.close)
reporter.report(progress=10)
reporter.report(progress=100)  # pending when the script ends (the interval): sent at exit
"""


def test_the_last_report_is_sent_when_a_script_exits_at_once() -> None:
    out = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    sent = out.stdout.split()
    assert sent[-2:] == ["sent", "100"], out.stderr
    assert sent in (["sent", "100"], ["sent", "10", "sent", "100"]), "10 may be replaced"
