"""The dashboard in a real browser: headless Chromium (Debian's), driven by Playwright, loads
``kubetrain dashboard`` (the real command, a child process) against the session's local
control plane, and follows a TrainJob and a PyTorchJob from their creation to their end.

One browser session, one scenario: the Jobs page sees both jobs appear, the TrainJob finish
(Complete) and the PyTorchJob fail with its failing replica and exit code, and its streams
reconnect by themselves when the dashboard is restarted (same port, same token from
``KUBETRAIN_DASHBOARD_TOKEN``); the TrainJob's page
streams its logs, shows its conditions, replicas and pods over time, its YAML and runtime;
its training curves hold the three reports its script made, value for value; the Nodes page
shows the node; and the PyTorchJob is deleted from its page. Every text the jobs control
(annotations, log lines, a metric's name, a pod's output) carries ``<script>`` and ``<img
onerror>`` payloads: the page must show them as text and run none of them. The page must also
run under its own Content-Security-Policy without a single console error.

A screenshot of each page is taken; with ``KUBETRAIN_DASHBOARD_SCREENSHOTS=DIR`` they are
written there (``docs/images`` is where docs/dashboard.md finds them). The test skips, saying
why, where Chromium or Playwright is missing (``make test`` installs both).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import queue
import re
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubetrain import kube
from kubetrain.cli import jobkinds
from kubetrain.kube import resource
from tests import processes
from tests.apiserver.cascade import eventually, run
from tests.e2e.conftest import ControlPlane

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking"]
JOB_TIMEOUT = 120_000  # milliseconds for a job to finish on two busy cores
WAIT = 30_000  # milliseconds for anything else to show
SCREENSHOTS = os.environ.get("KUBETRAIN_DASHBOARD_SCREENSHOTS")
XSS = "<script>window.__xss=1</script><img src=x onerror=window.__xss=1>"
METRIC_XSS = "<img src=x onerror=window.__xss=2>"  # a metric's name has at most 64 bytes
TRAINJOBS = jobkinds.TRAINJOB.resource
PYTORCHJOBS = jobkinds.find("pytorchjob").resource

REPORTER = """
import time
import kubetrain
XSS, METRIC_XSS = {xss!r}, {metric!r}
for step, loss in enumerate((2.5, 0.75, 0.25), start=1):
    kubetrain.report(progress=100 * step / 3, metrics={{"loss": loss, METRIC_XSS: step}})
    print(f"step {{step}} loss {{loss}} " + XSS, flush=True)
    time.sleep(2.2)  # reports closer than 2 s apart replace one another
"""


def beside(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run an API call's coroutine to its end in a thread of its own: Playwright's sync API
    keeps an event loop of its own in the test's thread."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(run, coro).result()


@pytest.fixture(scope="module")
def sync_playwright() -> Any:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (it is in the test extra: pip install -e .[test])")
    return sync_playwright


class Dashboard:
    """``kubetrain dashboard``, the real command, as a child process; :meth:`start` again
    after :meth:`stop` serves the same address (port and token) anew."""

    def __init__(self, kubeconfig: str, home: Path) -> None:
        self.kubeconfig = kubeconfig
        self.env = {
            k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBETRAIN_KUBECONFIG")
        }
        self.env.update(
            KUBETRAIN_HOME=str(home),
            PYTHONUNBUFFERED="1",
            KUBETRAIN_DASHBOARD_TOKEN=secrets.token_urlsafe(24),
        )
        self.port = 0
        self.url = ""
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> str:
        command = [sys.executable, "-m", "kubetrain", "dashboard", "--kubeconfig", self.kubeconfig]
        self.process = subprocess.Popen(
            [*command, "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        stdout = self.process.stdout
        threading.Thread(target=lambda: [lines.put(x) for x in stdout or ()], daemon=True).start()
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            pytest.fail("kubetrain dashboard printed no address within 60 s")
        prefix = "kubetrain dashboard: "
        assert first.startswith(prefix), first
        url = first[len(prefix) :].strip()
        printed = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", url)
        assert printed is not None, url
        assert printed.group(2) == self.env["KUBETRAIN_DASHBOARD_TOKEN"], url
        assert self.port in (0, int(printed.group(1))), "the same port again"
        self.port, self.url = int(printed.group(1)), url
        return url

    def stop(self) -> None:
        if self.process is not None:
            processes.stop(self.process, timeout=10)  # type: ignore[arg-type]  # text mode
            self.process = None


@contextlib.contextmanager
def dashboard(kubeconfig: str, home: Path) -> Iterator[Dashboard]:
    served = Dashboard(kubeconfig, home)
    served.start()
    try:
        yield served
    finally:
        served.stop()


def pytorchjob(name: str) -> dict[str, Any]:
    script = f"import sys; print({XSS!r}, flush=True); sys.exit(3)"
    container = {"name": "pytorch", "image": "local", "command": [sys.executable, "-c", script]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "annotations": {"description": XSS}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container]}},
                }
            },
        },
    }


def trainjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "annotations": {"description": XSS}},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "numNodes": 1,
                "command": [sys.executable, "-c", REPORTER.format(xss=XSS, metric=METRIC_XSS)],
            },
        },
    }


@pytest.fixture
def scene(controlplane: ControlPlane) -> Iterator[tuple[str, str]]:
    """A namespace of the test's own, with a client; deleted afterwards."""
    name = "dash-" + secrets.token_hex(3)

    async def create() -> None:
        async with await kube.Client.from_kubeconfig(controlplane.kubeconfig) as client:
            await client.create(
                resource.NAMESPACES,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            )

    async def delete() -> None:
        async with await kube.Client.from_kubeconfig(controlplane.kubeconfig) as client:
            with contextlib.suppress(kube.NotFound):
                await client.delete(resource.NAMESPACES, name)

    run(create())
    try:
        yield controlplane.kubeconfig, name
    finally:
        run(delete())


def test_the_dashboard_follows_jobs_to_their_end_in_a_real_browser(
    sync_playwright: Any, scene: tuple[str, str], tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    kubeconfig, ns = scene
    shots = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)

    async def submit() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(TRAINJOBS, trainjob("curves-demo"), namespace=ns)
            await client.create(PYTORCHJOBS, pytorchjob("fails"), namespace=ns)

    async def deleted() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:

            async def gone() -> bool:
                try:
                    await client.get(PYTORCHJOBS, "fails", namespace=ns)
                except kube.NotFound:
                    return True
                return False

            await eventually(gone, "the PyTorchJob deleted", timeout=30)

    problems: list[str] = []
    with dashboard(kubeconfig, tmp_path / "home") as served, sync_playwright() as playwright:
        url = served.url
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.set_default_timeout(WAIT)
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("dialog", lambda dialog: dialog.accept())

            # Jobs: both appear, one completes, the other fails with its replica's exit code.
            page.goto(url + "#/")
            expect(page.get_by_test_id("status")).to_have_text("live")
            beside(submit())
            trainjob_row = page.locator(f'tr[data-job="{ns}/TrainJob/curves-demo"]')
            failing_row = page.locator(f'tr[data-job="{ns}/PyTorchJob/fails"]')
            expect(trainjob_row).to_be_visible()
            expect(failing_row).to_be_visible()
            expect(failing_row.locator(".failure")).to_have_text(
                "worker-0: exit code 3 (Error)", timeout=JOB_TIMEOUT
            )
            expect(trainjob_row.locator(".state")).to_have_text("Complete", timeout=JOB_TIMEOUT)
            expect(trainjob_row.locator(".progress-text")).to_have_text("100%")
            page.get_by_placeholder("Filter by name").fill(ns)
            page.screenshot(path=str(shots / "dashboard-jobs.png"))

            # A dashboard that went away and came back: the page reconnects by itself.
            before = len(problems)
            served.stop()
            expect(page.get_by_test_id("status")).to_have_text("reconnecting")
            served.start()
            expect(page.get_by_test_id("status")).to_have_text("live")
            lost = problems[before:]  # the browser says its streams broke: as it should
            assert all("net::ERR_" in text for text in lost), lost
            del problems[before:]
            expect(trainjob_row.locator(".state")).to_have_text("Complete")

            # The TrainJob's page: overview, logs (streamed, escaped), YAML, runtime.
            trainjob_row.get_by_role("link", name="curves-demo").click()
            expect(page.locator(".timeline li").first).to_be_visible()
            expect(page.locator("table.replicas tbody tr")).to_have_count(1)
            expect(page.locator("svg.gantt .gantt-row")).to_have_count(1)
            page.screenshot(path=str(shots / "dashboard-job.png"), full_page=True)
            page.get_by_role("link", name="logs").click()
            lines = page.get_by_test_id("log-lines").locator(".log-line")
            expect(lines).to_have_count(3)
            expect(lines.nth(0)).to_have_text(f"[node-0] step 1 loss 2.5 {XSS}")
            expect(lines.nth(2)).to_have_text(f"[node-0] step 3 loss 0.25 {XSS}")
            page.get_by_label("search logs").fill("loss 0.75")
            expect(lines).to_have_count(1)
            page.get_by_label("search logs").fill("")
            page.screenshot(path=str(shots / "dashboard-logs.png"))
            page.get_by_role("link", name="yaml").click()
            expect(page.locator("pre.yaml")).to_contain_text(XSS)
            page.get_by_role("link", name="runtime").click()
            expect(page.locator(".runtime")).to_contain_text(
                "ClusterTrainingRuntime torch-distributed"
            )

            # Training curves: the three reports, value for value.
            page.goto(url + f"#/curves/{ns}/curves-demo")
            expect(page.locator('.chart[data-metric="loss"] canvas')).to_be_visible()
            expect(page.locator(".chart h3").nth(2)).to_have_text(METRIC_XSS)
            page.get_by_role("button", name="Show values").click()
            rows = page.locator("table.values tbody tr")
            expect(rows).to_have_count(3)
            loss = [rows.nth(i).locator("td").nth(3).inner_text() for i in range(3)]
            assert loss == ["2.5", "0.75", "0.25"]
            progress = [rows.nth(i).locator("td").nth(1).inner_text() for i in range(3)]
            assert progress == ["33", "66", "100"]
            page.screenshot(path=str(shots / "dashboard-curves.png"), full_page=True)

            # Nodes: the control plane's node with what it offers.
            page.goto(url + "#/nodes")
            expect(page.locator("table.nodes tbody tr").first).to_contain_text("Ready")
            page.screenshot(path=str(shots / "dashboard-nodes.png"))

            # The failed PyTorchJob: its page names the failure; Delete deletes it.
            page.goto(url + f"#/job/{ns}/PyTorchJob/fails")
            expect(page.locator(".facts .failure")).to_have_text("worker-0: exit code 3 (Error)")
            page.get_by_role("button", name="Delete").click()
            expect(page.locator(".flash")).to_have_text(
                f"pytorchjob/fails in namespace {ns} deleted"
            )
            beside(deleted())
            expect(page.get_by_text("This job does not exist")).to_be_visible()
            page.goto(url + "#/")
            expect(failing_row).to_have_count(0)

            assert page.evaluate("window.__xss") is None, "a payload ran"
            assert page.locator("main script, main img").count() == 0, "a payload became markup"
        finally:
            browser.close()
    assert problems == [], "the page logged errors"
