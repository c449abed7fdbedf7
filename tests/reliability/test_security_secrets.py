"""A Secret's value is never logged or shown: a job whose container got a Secret as an env var
(``secretKeyRef``), through ``envFrom`` and as a volume ran on a whole local control plane;
neither the value nor its base64 form appears in the daemon's log (the API server, scheduler,
node agent and operator all log there), in ``kubetrain get``/``describe``/``events``/``list``,
in ``kubectl describe pod``/``describe pytorchjob``, in the pod object, or in any event.

The container proves it received the value each way by printing its digest, so the value did
travel every path a leak could take. The same run checks that a command is handed over as
argv: an argument written in shell syntax arrives as written and no shell acts on it.
"""

from __future__ import annotations

import ast
import hashlib
import json
from typing import TYPE_CHECKING

from kubetrain import kube
from tests.apiserver.cascade import run

if TYPE_CHECKING:  # imported by pytest as a plugin, before this module (see below)
    from tests.reliability.security_fixtures import Plane, SecretRun

# One control plane for every module of the suite: fixtures from a plugin are shared, those
# imported into a module would be started again for each.
pytest_plugins = ["tests.reliability.security_fixtures"]

EVENTS = kube.Resource("", "v1", "events", kind="Event")
PODS = kube.resource.PODS


def test_the_container_got_the_secret_every_way(secret_run: SecretRun) -> None:
    expected = hashlib.sha256(secret_run.value.encode()).hexdigest()
    for way in ("env", "envFrom", "volume"):
        assert f"{way} {expected}" in secret_run.pod_log, secret_run.pod_log


def test_no_log_of_the_control_plane_holds_the_secret(plane: Plane, secret_run: SecretRun) -> None:
    text = plane.log.read_text(errors="replace")
    assert "local control plane serving at" in text, "not the daemon's log"
    # the operator's and the node agent's lines about this job are in it: they were looked at
    assert f"PyTorchJob {secret_run.namespace}/{secret_run.job}:" in text
    assert f"pod {secret_run.namespace}/{secret_run.pod}:" in text
    for form in secret_run.forms:
        assert form not in text


def test_nothing_shown_about_the_job_holds_the_secret(secret_run: SecretRun) -> None:
    assert secret_run.outputs
    for what, text in secret_run.outputs.items():
        assert secret_run.job in text or secret_run.pod in text or "Event" in text, what
        for form in secret_run.forms:
            assert form not in text, what


def test_describe_pod_names_where_the_value_comes_from_not_the_value(
    secret_run: SecretRun,
) -> None:
    shown = secret_run.outputs.get(f"kubectl describe pod {secret_run.pod}")
    if shown is None:
        return  # kubectl is not installed: the other outputs were still checked
    assert "<set to the key 'token' in secret 'creds'>" in shown


def test_no_event_and_no_pod_object_holds_the_secret(plane: Plane, secret_run: SecretRun) -> None:
    async def read() -> tuple[dict, dict]:
        async with await kube.Client.from_kubeconfig(plane.kubeconfig) as client:
            events = await client.list(EVENTS, namespace=secret_run.namespace)
            pod = await client.get(PODS, secret_run.pod, namespace=secret_run.namespace)
            return events, pod

    events, pod = run(read())
    assert events["items"], "the job's run left no event to check"
    for doc in (events, pod):
        text = json.dumps(doc)
        for form in secret_run.forms:
            assert form not in text


def test_a_command_is_argv_and_no_shell_acts_on_it(secret_run: SecretRun) -> None:
    line = next(line for line in secret_run.pod_log.splitlines() if "argv " in line)
    received = ast.literal_eval(line.split("argv ", 1)[1])
    assert received == [secret_run.bait]
    assert not secret_run.marker.exists()
