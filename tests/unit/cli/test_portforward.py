"""``kubetrain port-forward``'s choices without a server: which pod (the job's first replica,
or ``--replica``; running ones only), which port (a number, or a declared port's name), and
the ``[LOCAL:]PORT`` forms."""

from __future__ import annotations

import pytest

from kubetrain.cli import errors, portforward
from tests.unit.cli.jobobjects import pod, v1_job


def test_port_specs_read_as_kubectl_reads_them() -> None:
    parse = portforward.PortSpec.parse
    assert parse("6006") == portforward.PortSpec(None, "6006")
    assert parse("16006:6006") == portforward.PortSpec(16006, "6006")
    assert parse(":tensorboard") == portforward.PortSpec(0, "tensorboard")
    for bad in ("6006:", "x:6006", "70000", "0:1"):
        with pytest.raises(errors.UserError, match="accepted"):
            parse(bad)


def test_the_first_replica_or_the_one_asked_for_and_only_a_running_pod() -> None:
    job = v1_job()
    master, worker0, worker1 = pod("master", 0), pod("worker", 0), pod("worker", 1)
    pods = [worker1, worker0, master]
    assert portforward.choose_pod(job, pods, None) is master
    assert portforward.choose_pod(job, pods, "worker-1") is worker1
    assert portforward.choose_pod(job, pods, "worker") is worker0
    pending = pod("master", 0, phase="Pending", node=None)
    with pytest.raises(errors.UserError, match="master-0 is Pending; port-forward needs"):
        portforward.choose_pod(job, [pending, worker0], None)  # never another replica
    with pytest.raises(errors.UserError, match="has no replica 'chief'"):
        portforward.choose_pod(job, pods, "chief")


def test_a_port_by_number_or_by_a_declared_name() -> None:
    target = pod("master", 0)
    target["spec"]["containers"][0]["ports"] = [{"name": "tensorboard", "containerPort": 6006}]
    assert portforward.container_port(target, "tensorboard") == 6006
    assert portforward.container_port(target, "8888") == 8888
    with pytest.raises(errors.UserError, match=r"no port named 'tb'; .*tensorboard=6006"):
        portforward.container_port(target, "tb")
