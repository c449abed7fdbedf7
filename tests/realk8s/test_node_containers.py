"""``kubetrain node --container-runtime docker`` joined to a real control plane: a user's node
next to a cluster, running every image but the host image in a Docker-API engine.

The node (:func:`tests.realk8s.test_node_agent.running_node`) finds the session's engine
(:mod:`tests.fixtures.containers`) through ``DOCKER_HOST``, as docker's own client would, and
kube-scheduler binds a busybox pod to it. Then, through kube-apiserver only:

- the pod runs in a container of that image in the engine, labelled with the pod's uid, with
  its command and its env (a value, and downward-API fields kube-apiserver's pod carries);
- ``kubectl logs`` (``--tail``, ``-f`` until the container ends) reads its output, and
  ``kubectl exec`` runs commands in the running container, exit codes passed back;
- it ends Failed with the exit code it chose, as kube-apiserver reports it;
- deleting the pod removes its container from the engine, and the node confirms the deletion.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from kubetrain import envtest
from kubetrain.local.node import engine as node_engine
from tests import engines
from tests.apiserver.test_pod_log_exec import following
from tests.fixtures import containers
from tests.realk8s.test_node_agent import (
    POD_TIMEOUT,
    Agent,
    make_pod,
    pod_is,
    running,
    running_node,
    wait_for,
)

# Says who it is, then waits for a go that only `kubectl exec` can give, and fails by choice.
SCRIPT = r"""
echo "$GREETING from $POD_NAME on $NODE_NAME"
echo "second line"
until [ -f /tmp/go ]; do sleep 0.05; done
echo "leaving with 3"
exit 3
"""
EXIT_CODE = 3


@pytest.fixture(scope="module")
def node(
    real_control_plane: envtest.ControlPlane,
    engine: engines.Engine,
    image: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Agent]:
    home = tmp_path_factory.mktemp("kubetrain-node-containers")
    with running_node(
        real_control_plane,
        home,
        container_runtime=containers.kind(),
        environ={"DOCKER_HOST": engine.host},
    ) as started:
        yield started


@pytest.fixture
def namespace(node: Agent) -> Iterator[str]:
    name = "kt-ct-" + secrets.token_hex(4)
    node.core.create_namespace({"metadata": {"name": name}})
    try:
        yield name
    finally:
        try:
            node.core.delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise


def in_engine(engine: engines.Engine, uid: str) -> list[str]:
    """The id of each container labelled with the pod's uid in the engine, running or not."""
    return engine.docker(
        "ps", "-a", "-q", "--filter", f"label={node_engine.LABEL_POD}={uid}"
    ).split()


def inspect(engine: engines.Engine, id: str) -> dict[str, Any]:
    return dict(json.loads(engine.docker("inspect", id))[0])


def test_a_pod_runs_in_a_container_of_the_engine_through_kube_apiserver(
    node: Agent, namespace: str, engine: engines.Engine, image: str
) -> None:
    def field(path: str) -> dict[str, Any]:
        return {"valueFrom": {"fieldRef": {"fieldPath": path}}}

    main = {
        "name": "main",
        "image": image,
        "command": ["sh", "-c"],
        "args": [SCRIPT],
        "env": [
            {"name": "GREETING", "value": "hello"},
            {"name": "POD_NAME", **field("metadata.name")},
            {"name": "NODE_NAME", **field("spec.nodeName")},
        ],
    }
    make_pod(node, namespace, "busy", "", containers=[main], restartPolicy="Never")
    pod = pod_is(node, namespace, "busy", running())
    assert pod.spec.node_name == node.name  # bound by kube-scheduler
    uid = pod.metadata.uid

    [cid] = in_engine(engine, uid)
    container = inspect(engine, cid)
    assert container["State"]["Running"], container["State"]
    assert container["Config"]["Image"] == image
    assert container["Config"]["Entrypoint"] == ["sh", "-c", SCRIPT]
    labels = container["Config"]["Labels"]
    assert (labels[node_engine.LABEL_NAMESPACE], labels[node_engine.LABEL_NAME]) == (
        namespace,
        "busy",
    )
    env = dict(e.split("=", 1) for e in container["Config"]["Env"])
    assert (env["GREETING"], env["POD_NAME"], env["NODE_NAME"]) == ("hello", "busy", node.name)

    logs = ("logs", "-n", namespace, "busy")
    said = f"hello from busy on {node.name}\nsecond line\n"
    wait_for("both lines", lambda: node.kubectl(*logs).stdout == said, POD_TIMEOUT, node)
    assert node.kubectl(*logs, "--tail=1").stdout == "second line\n"

    exec_ = ("exec", "-n", namespace, "busy", "--")
    shown = node.kubectl(*exec_, "sh", "-c", 'echo "$POD_NAME $GREETING"; cat /proc/1/cmdline')
    assert shown.stdout == f"busy hello\nsh\0-c\0{SCRIPT}\0"
    missing = node.kubectl(*exec_, "no-such-tool", check=False)
    assert missing.returncode != 0
    assert "no-such-tool" in missing.stdout + missing.stderr  # the engine's own words
    failed = node.kubectl(*exec_, "sh", "-c", "echo out; echo err >&2; exit 4", check=False)
    assert (failed.returncode, failed.stdout) == (4, "out\n"), failed.stderr
    assert "err\n" in failed.stderr

    with following(["kubectl", "--kubeconfig", node.kubeconfig, *logs, "-f"]) as (follow, output):
        output.wait_for("second line\n")
        assert follow.poll() is None, "the follow ended while the container ran"
        node.kubectl(*exec_, "touch", "/tmp/go")  # in the container's own filesystem
        output.wait_for("leaving with 3\n")
        assert follow.wait(timeout=30) == 0
    assert output.text == said + "leaving with 3\n"

    ended = pod_is(node, namespace, "busy", lambda p: p.status.phase == "Failed")
    terminated = ended.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (EXIT_CODE, "Error"), terminated
    assert in_engine(engine, uid) == [cid]  # kept until the pod is deleted, as a kubelet does
    container = inspect(engine, cid)
    assert container["State"]["ExitCode"] == EXIT_CODE, container["State"]

    node.core.delete_namespaced_pod("busy", namespace)

    def gone() -> bool:
        try:
            node.core.read_namespaced_pod("busy", namespace)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for("the pod's deletion confirmed by the node", gone, POD_TIMEOUT, node)
    wait_for("no container of the pod", lambda: not in_engine(engine, uid), POD_TIMEOUT, node)
