"""ssh to a pod of this node (:mod:`kubetrain.local.node.podssh`): ssh's command line as Open
MPI writes it, which names reach which pod, and what is refused with a message.

The pods are written on disk as the runtime lays them out (``sandbox.json``, a container's
``state.json``); "running" containers are this test's own process, so that the caller's pod is
found by its mount namespace as in a real pod."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kubetrain.local.node import podssh, proctree, sandbox, shim


def test_parse_skips_sshs_options_and_their_values() -> None:
    options = ["-o", "ConnectionAttempts=10", "-x", "-p22", "-l", "root"]
    call = podssh.parse([*options, "job-node-0-0.job", "orted", "-mca", "ess", '"env"'])
    assert call == podssh.Call("job-node-0-0.job", 'orted -mca ess "env"')
    assert podssh.parse(["-Tq", "root@h", "true"]) == podssh.Call("h", "true")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no host given"),
        (["-o"], "option -o needs a value"),
        (["-o", "X=1", "h"], "h: no command given"),
    ],
)
def test_parse_refuses_what_it_cannot_serve(argv: list[str], message: str) -> None:
    with pytest.raises(podssh.Refused, match=message):
        podssh.parse(argv)


def test_a_pod_answers_to_the_names_its_hosts_file_gives_it() -> None:
    pod = podssh.Pod("u", "ns", "job-node-0-0", "job")
    for name in (
        "job-node-0-0",
        "job-node-0-0.job",
        "job-node-0-0.job.ns",
        "job-node-0-0.job.ns.svc",
        "job-node-0-0.job.ns.svc.cluster.local",
    ):
        assert pod.answers_to(name), name
    for name in ("job-node-0-1.job", "job-node-0-0.other", "job-node-0-0.job.ns2"):
        assert not pod.answers_to(name), name
    assert not podssh.Pod("u", "ns", "h", "").answers_to("h.job")


def pod(root: Path, uid: str, namespace: str, hostname: str, subdomain: str) -> None:
    base = Path(sandbox.pod_dir(str(root), uid))
    base.mkdir(parents=True)
    about = {"namespace": namespace, "hostname": hostname, "subdomain": subdomain}
    (base / sandbox.SANDBOX_FILE).write_text(json.dumps(about))


def container(root: Path, uid: str, name: str, attempt: int, pid: int | None) -> str:
    directory = Path(sandbox.pod_dir(str(root), uid), podssh.CONTAINERS, name, str(attempt))
    directory.mkdir(parents=True)
    state = {"pid": pid, "start": proctree.starttime(pid)} if pid else {"exitCode": 0}
    shim.write_state(str(directory), state)
    return str(directory)


def test_the_target_is_the_named_pods_running_node_container_in_the_callers_namespace(
    tmp_path: Path,
) -> None:
    me = os.getpid()
    # the caller: the first pod on disk that shares this process's mount namespace
    pod(tmp_path, "a-launcher", "ns", "job-launcher-0-0", "job")
    container(tmp_path, "a-launcher", "node", 0, me)
    pod(tmp_path, "node", "ns", "job-node-0-0", "job")
    container(tmp_path, "node", "node", 0, None)  # the first attempt ended
    running = container(tmp_path, "node", "node", 1, me)
    container(tmp_path, "node", "sidecar", 0, me)
    pod(tmp_path, "z-elsewhere", "other", "job-node-0-0", "job")
    container(tmp_path, "z-elsewhere", "node", 0, me)

    found = podssh.target(str(tmp_path), "job-node-0-0.job")
    assert (found.pod.uid, found.name, found.directory) == ("node", "node", running)

    with pytest.raises(podssh.Refused, match="no pod of namespace ns has this name"):
        podssh.target(str(tmp_path), "job-node-0-1.job")


def test_a_caller_outside_every_pod_and_a_pod_with_nothing_running_are_refused(
    tmp_path: Path,
) -> None:
    pod(tmp_path, "idle", "ns", "h", "")
    container(tmp_path, "idle", "node", 0, None)
    with pytest.raises(podssh.Refused, match="not run in a pod of this node"):
        podssh.target(str(tmp_path), "h")
    pod(tmp_path, "me", "ns", "me", "")
    container(tmp_path, "me", "node", 0, os.getpid())
    with pytest.raises(podssh.Refused, match="h: pod has no running container"):
        podssh.target(str(tmp_path), "h")


def test_every_container_gets_open_mpis_agent_and_no_host_judged_by_its_address() -> None:
    assert dict(podssh.environment("/node/bin/kubetrain-pod-ssh")) == {
        "OMPI_MCA_if_base_do_not_resolve": "1",
        "OMPI_MCA_plm_rsh_agent": "/node/bin/kubetrain-pod-ssh",
    }
