"""Helpers for the end-to-end tests of the examples under examples/: a shipped manifest made
ready for a test's namespace, run through ``kubetrain run`` as a user would, and the skip for a
framework that is not installed.

The examples name their scripts relative to the repository (``examples/xgboost/train.py``),
which works when ``kubetrain run -f`` is typed there, as ``make run`` does: it gives the pods
of the host image that directory. A test cannot rely on the directory pytest was started in,
so the copy it submits names the same scripts by their absolute path; nothing else in the
manifest changes. The control plane is the session's one from tests/e2e/conftest.py.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import kube
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import run
from tests.integration.operator.jobs_fixtures import condition, get

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLES = REPOSITORY / "examples"
RUN_TIMEOUT = 90.0  # seconds for `kubetrain run` to return: the examples take 5 to 15


def require(module: str, extra: str) -> None:
    """Skip the test, saying how to install it, when ``module`` cannot be imported."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[{extra}]')")


def _anchored(value: Any) -> Any:
    """``value`` with every string naming a file under examples/ made absolute."""
    if isinstance(value, dict):
        return {k: _anchored(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_anchored(v) for v in value]
    if isinstance(value, str) and value.startswith("examples/") and (REPOSITORY / value).is_file():
        return str(REPOSITORY / value)
    return value


def manifest(example: str, namespace: str, directory: Path) -> Path:
    """A copy of ``examples/<example>`` for ``namespace``, written under ``directory``."""
    source = EXAMPLES / example
    documents = [d for d in yaml.safe_load_all(source.read_text(encoding="utf-8")) if d]
    for document in documents:
        document.setdefault("metadata", {})["namespace"] = namespace
    copy = directory / source.name
    copy.write_text(yaml.safe_dump_all([_anchored(d) for d in documents]), encoding="utf-8")
    return copy


def kubetrain_run(
    path: Path, namespace: str, kubeconfig: str, home: Path
) -> subprocess.CompletedProcess[str]:
    """``kubetrain run -f path -n namespace`` against ``kubeconfig``; stdout holds the logs."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(KUBETRAIN_KUBECONFIG=kubeconfig, KUBETRAIN_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "kubetrain", "run", "-f", str(path), "-n", namespace],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=env,
    )


def output(done: subprocess.CompletedProcess[str]) -> str:
    """What ``kubetrain run`` printed, clipped, for an assertion message."""
    return f"exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"


def number(pattern: str, text: str) -> float:
    """The first group of ``pattern`` in ``text`` as a number; fails if it is not there."""
    found = re.search(pattern, text, re.MULTILINE)
    assert found is not None, f"no line matches {pattern!r} in:\n{text[-4000:]}"
    return float(found.group(1))


def assert_finished(kubeconfig: str, resource: kube.Resource, namespace: str, name: str) -> None:
    """The API reports the job done well: ``Complete`` for a TrainJob, ``Succeeded`` for the
    v1 kinds, with status True."""
    type_ = "Complete" if resource == kinds.TRAINJOBS else "Succeeded"

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            job = await get(client, resource, namespace, name)
            found = condition(job, type_)
            assert found is not None, job
            assert found["status"] == "True", job

    run(body())
