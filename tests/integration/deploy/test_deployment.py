"""The operator's Deployment runs ``kubetrain operator`` with flags the real command accepts,
its probes and metrics Service reach the ports those flags open, and the pod is locked down
(non-root, read-only root filesystem, no privilege escalation, no capabilities)."""

from __future__ import annotations

import argparse
from importlib import metadata
from typing import Any

import pytest

from kubetrain.cli import main
from kubetrain.cli import operator as operator_cli
from kubetrain.operator.runtime import manager, server
from kubetrain.operator.runtime import metrics as metrics_
from tests.unit.deploy.manifests import OPERATOR, one, render


def objects() -> list[dict[str, Any]]:
    return render(OPERATOR)


def pod_spec() -> dict[str, Any]:
    return one(objects(), "Deployment")["spec"]["template"]["spec"]


def container() -> dict[str, Any]:
    (only,) = pod_spec()["containers"]
    return only


def parsed() -> argparse.Namespace:
    """The container's arguments, parsed by the real ``kubetrain`` command line."""
    return main.build_parser().parse_args(container()["args"])


def pod_environ() -> dict[str, str]:
    """The environment the pod's downward API gives the operator."""
    namespace = one(objects(), "Deployment")["metadata"]["namespace"]
    fields = {"metadata.namespace": namespace}
    environ = {}
    for var in container()["env"]:
        field = var["valueFrom"]["fieldRef"]["fieldPath"]
        environ[var["name"]] = fields[field]
    return environ


def container_port(port: int | str) -> int:
    """A probe's or Service's target port: a number, or the name of a container port."""
    if isinstance(port, int):
        return port
    (found,) = [p["containerPort"] for p in container()["ports"] if p["name"] == port]
    return int(found)


def test_the_container_runs_the_kubetrain_command_installed_by_the_package() -> None:
    assert container()["command"] == ["kubetrain"]
    scripts = {e.name: e.value for e in metadata.entry_points(group="console_scripts")}
    assert scripts["kubetrain"] == "kubetrain.cli.main:main"


def test_the_args_are_flags_kubetrain_operator_accepts() -> None:
    args = parsed()
    assert args.func is operator_cli.run
    options = operator_cli.options(args, pod_environ())
    assert options.manager.leader_election is True
    assert options.manager.namespace is None  # every namespace
    assert options.trainjobs is True


def test_an_unknown_flag_would_be_caught() -> None:
    with pytest.raises(SystemExit):
        main.build_parser().parse_args([*container()["args"], "--leader-elektion"])


def test_the_lease_role_names_the_lease_the_operator_uses_in_its_namespace() -> None:
    options = operator_cli.options(parsed(), pod_environ())
    role = one(objects(), "Role", "kubetrain-operator-leader-election")
    assert options.manager.lease_namespace == role["metadata"]["namespace"]
    assert options.manager.lease_name == manager.LEASE_NAME
    by_verb = {
        verb: rule.get("resourceNames")
        for rule in role["rules"]
        for verb in rule["verbs"]
        if rule["resources"] == ["leases"]
    }
    assert by_verb == {
        "create": None,  # RBAC cannot limit a create by name
        "get": [options.manager.lease_name],
        "update": [options.manager.lease_name],
    }


def test_the_probes_reach_the_health_probe_port_and_paths() -> None:
    bound = server.parse_address(parsed().health_probe_bind_address)
    assert bound is not None
    served = {route.path for route in server.probe_routes(list)}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container()[probe]["httpGet"]
        assert get["path"] == path
        assert path in served
        assert container_port(get["port"]) == bound[1]


def test_the_metrics_service_reaches_the_metrics_port() -> None:
    bound = server.parse_address(parsed().metrics_bind_address)
    assert bound is not None
    service = one(objects(), "Service")
    (port,) = [p for p in service["spec"]["ports"] if p["name"] == "metrics"]
    assert container_port(port["targetPort"]) == bound[1]
    assert service["metadata"]["annotations"]["prometheus.io/port"] == str(port["port"])
    served = {route.path for route in server.metrics_routes(metrics_.Registry())}
    assert service["metadata"]["annotations"]["prometheus.io/path"] in served


def test_the_pod_namespace_comes_from_the_downward_api() -> None:
    (var,) = [v for v in container()["env"] if v["name"] == "POD_NAMESPACE"]
    assert var["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"


def test_the_pod_runs_as_non_root_without_privileges() -> None:
    pod = pod_spec()["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["runAsUser"] != 0
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container()["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security.get("privileged", False) is False
    assert pod_spec().get("hostNetwork", False) is False


def test_the_only_writable_path_is_an_empty_dir_for_tmp() -> None:
    (mount,) = container()["volumeMounts"]
    (volume,) = pod_spec()["volumes"]
    assert (mount["mountPath"], mount["name"]) == ("/tmp", volume["name"])
    assert volume["emptyDir"] == {}


def test_requests_and_limits_are_set() -> None:
    resources = container()["resources"]
    for bound in ("requests", "limits"):
        assert set(resources[bound]) == {"cpu", "memory"}


def test_one_replica_with_leader_election() -> None:
    deployment = one(objects(), "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert "--leader-elect" in container()["args"]
