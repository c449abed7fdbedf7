"""The pure parts of the node proxy: request options, choosing the container, finding the
node's endpoint, the node's query, and the Status a node's failure becomes.

Expected values come from kube-apiserver: ``pkg/registry/core/pod/strategy.go``
(``validateContainer``, ``LogLocation``, ``streamLocation``), ``pkg/kubelet/client``
(``NodeConnectionInfoGetter``), ``ValidatePodLogOptions``, the generic registry's
``GenericHttpResponseChecker`` and ``NewGenericServerResponse``, and the kubelet's exit Status.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from multidict import MultiDict

from kubetrain.local import channels, errors, podoptions
from kubetrain.local.apiserver import nodeproxy, resources


def pod(
    containers: tuple[str, ...] = ("main",),
    init: tuple[str, ...] = (),
    ephemeral: tuple[str, ...] = (),
    node: str = "",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": c} for c in containers]}
    if init:
        spec["initContainers"] = [{"name": c} for c in init]
    if ephemeral:
        spec["ephemeralContainers"] = [{"name": c} for c in ephemeral]
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


def node(addresses: list[tuple[str, str]], port: Any = 10255) -> dict[str, Any]:
    status: dict[str, Any] = {"addresses": [{"type": t, "address": a} for t, a in addresses]}
    if port is not None:
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": port}}
    return {"metadata": {"name": "n"}, "status": status}


def raised(call: Any) -> errors.ApiError:
    with pytest.raises(errors.ApiError) as caught:
        call()
    return caught.value


# ------------------------------------------------------------------------------ flags


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({}, False, id="an absent flag is false"),
        pytest.param({"follow": "true"}, True, id="true is true"),
        pytest.param({"follow": "1"}, True, id="1 is true"),
        pytest.param({"follow": ""}, True, id="an empty value is true, as in kube"),
        pytest.param({"follow": "yes"}, True, id="any other word is true"),
        pytest.param({"follow": "false"}, False, id="false is false"),
        pytest.param({"follow": "False"}, False, id="False in any case is false"),
        pytest.param({"follow": "0"}, False, id="0 is false"),
    ],
)
def test_flags_read_as_kube_reads_them(query: dict[str, str], expected: bool) -> None:
    assert podoptions.flag(query, "follow") is expected


# ------------------------------------------------------------------------------ log options


@pytest.mark.parametrize(
    ("query", "node_query"),
    [
        pytest.param({}, [], id="no options, no query"),
        pytest.param({"container": "c"}, [], id="the container goes into the path, not the query"),
        pytest.param({"follow": "true"}, [("follow", "true")], id="follow"),
        pytest.param({"follow": "false"}, [], id="a false flag is left out"),
        pytest.param({"previous": "1"}, [("previous", "true")], id="previous, written as true"),
        pytest.param({"timestamps": "true"}, [("timestamps", "true")], id="timestamps"),
        pytest.param({"tailLines": "0"}, [("tailLines", "0")], id="no lines at all is allowed"),
        pytest.param({"limitBytes": "10"}, [("limitBytes", "10")], id="limitBytes"),
        pytest.param({"sinceSeconds": "5"}, [("sinceSeconds", "5")], id="sinceSeconds"),
        pytest.param(
            {"sinceTime": "2024-05-01T10:00:00+02:00"},
            [("sinceTime", "2024-05-01T08:00:00Z")],
            id="sinceTime is passed on in UTC",
        ),
        pytest.param(
            {"sinceTime": "2024-05-01T10:00:00.123456789Z"},
            [("sinceTime", "2024-05-01T10:00:00Z")],
            id="sinceTime is passed on to the second, as RFC3339 formats it",
        ),
        pytest.param(
            {"sinceTime": "2024-05-01t00:30:00-01:30"},
            [("sinceTime", "2024-05-01T02:00:00Z")],
            id="a negative offset and a lowercase t",
        ),
        pytest.param(
            {
                "timestamps": "true",
                "tailLines": "3",
                "follow": "true",
                "limitBytes": "9",
                "previous": "true",
                "sinceSeconds": "1",
            },
            [
                ("follow", "true"),
                ("limitBytes", "9"),
                ("previous", "true"),
                ("sinceSeconds", "1"),
                ("tailLines", "3"),
                ("timestamps", "true"),
            ],
            id="names are sorted as url.Values.Encode sorts them",
        ),
    ],
)
def test_log_options_become_the_kubelet_query(
    query: dict[str, str], node_query: list[tuple[str, str]]
) -> None:
    assert podoptions.log_options(query, "p").node_query() == node_query


def test_log_options_keep_the_container() -> None:
    assert podoptions.log_options({"container": "c"}, "p").container == "c"


@pytest.mark.parametrize(
    ("query", "causes"),
    [
        pytest.param(
            {"tailLines": "-1"},
            [("tailLines", "Invalid value: -1: must be greater than or equal to 0")],
            id="negative tail lines",
        ),
        pytest.param(
            {"limitBytes": "0"},
            [("limitBytes", "Invalid value: 0: must be greater than 0")],
            id="a limit of no bytes",
        ),
        pytest.param(
            {"sinceSeconds": "0"},
            [("sinceSeconds", "Invalid value: 0: must be greater than 0")],
            id="since no seconds",
        ),
        pytest.param(
            {"sinceSeconds": "5", "sinceTime": "2024-01-01T00:00:00Z"},
            [("", "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified")],
            id="since a time and since seconds at once",
        ),
        pytest.param(
            {"tailLines": "-1", "limitBytes": "-5"},
            [
                ("tailLines", "Invalid value: -1: must be greater than or equal to 0"),
                ("limitBytes", "Invalid value: -5: must be greater than 0"),
            ],
            id="every bad option is named at once",
        ),
    ],
)
def test_bad_log_options_are_invalid(query: dict[str, str], causes: list[tuple[str, str]]) -> None:
    error = raised(lambda: podoptions.log_options(query, "p"))
    assert error.code == 422
    assert error.reason == "Invalid"
    assert error.message.startswith('PodLogOptions "p" is invalid: ')
    assert error.details is not None
    assert [(c["field"], c["message"]) for c in error.details["causes"]] == causes


@pytest.mark.parametrize(
    ("query", "message"),
    [
        pytest.param(
            {"tailLines": "ten"},
            'strconv.ParseInt: parsing "ten": invalid syntax',
            id="a number that is not one",
        ),
        pytest.param(
            {"sinceTime": "yesterday"},
            'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": not an RFC 3339 time',
            id="a time that is not one",
        ),
        pytest.param(
            {"sinceTime": "2024-02-30T00:00:00Z"},
            'parsing time "2024-02-30T00:00:00Z" as "2006-01-02T15:04:05Z07:00": not an RFC 3339 '
            "time",
            id="a day that does not exist",
        ),
        pytest.param(
            {"sinceTime": "2024-01-01 00:00:00Z"},
            'parsing time "2024-01-01 00:00:00Z" as "2006-01-02T15:04:05Z07:00": not an RFC 3339 '
            "time",
            id="a blank instead of the T",
        ),
        pytest.param(
            {"sinceTime": "2024-01-01T00:00:00"},
            'parsing time "2024-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": not an RFC 3339 '
            "time",
            id="a time without its zone",
        ),
    ],
)
def test_unparsable_log_options_are_bad_requests(query: dict[str, str], message: str) -> None:
    error = raised(lambda: podoptions.log_options(query, "p"))
    assert (error.code, error.message) == (400, message)


def test_since_time_is_kept_as_an_aware_time() -> None:
    options = podoptions.log_options({"sinceTime": "2024-01-01T00:00:00Z"}, "p")
    assert options.since_time == datetime(2024, 1, 1, tzinfo=timezone.utc)


# ------------------------------------------------------------------------------ exec options


@pytest.mark.parametrize(
    ("items", "node_query"),
    [
        pytest.param(
            [("command", "echo"), ("command", "a b"), ("stdout", "true"), ("stderr", "true")],
            [("command", "echo"), ("command", "a b"), ("error", "1"), ("output", "1")],
            id="commands in order, then the kubelet's names of the streams as 1, sorted by name",
        ),
        pytest.param(
            [("command", "sh"), ("stdin", "true"), ("tty", "true"), ("stdout", "false")],
            [("command", "sh"), ("input", "1"), ("tty", "1")],
            id="a false flag is left out",
        ),
        pytest.param(
            [("container", "c"), ("command", "ls")],
            [("command", "ls")],
            id="the container goes into the path, not the query",
        ),
    ],
)
def test_exec_options_become_the_kubelet_query(
    items: list[tuple[str, str]], node_query: list[tuple[str, str]]
) -> None:
    assert podoptions.exec_options(MultiDict(items)).node_query() == node_query


def test_the_node_reads_the_kubelets_query_back() -> None:
    """What the node reads is what the API server wrote; like the kubelet, only ``1`` is on."""
    options = podoptions.ExecOptions(command=("sh", "-c", "x"), stdin=True, stdout=True, tty=True)
    assert podoptions.node_exec_options(MultiDict(options.node_query())) == options
    loose = MultiDict([("command", "ls"), ("output", "true"), ("stdout", "1")])
    assert podoptions.node_exec_options(loose) == podoptions.ExecOptions(command=("ls",))


def test_exec_options_keep_the_container_and_command() -> None:
    options = podoptions.exec_options(MultiDict([("command", "a"), ("container", "c")]))
    assert (options.command, options.container) == (("a",), "c")


# ------------------------------------------------------------------------------ the container


@pytest.mark.parametrize(
    ("the_pod", "asked", "chosen"),
    [
        pytest.param(pod(("main",)), "", "main", id="the only container when none is named"),
        pytest.param(pod(("a", "b")), "b", "b", id="the named container"),
        pytest.param(pod(("a",), init=("setup",)), "setup", "setup", id="an init container"),
        pytest.param(
            pod(("a",), init=("setup",)), "", "a", id="init containers do not count as choices"
        ),
        pytest.param(pod(("a",), ephemeral=("debug",)), "debug", "debug", id="an ephemeral one"),
    ],
)
def test_the_container_a_request_means(the_pod: dict[str, Any], asked: str, chosen: str) -> None:
    assert nodeproxy.select_container(the_pod, asked) == chosen


@pytest.mark.parametrize(
    ("the_pod", "asked", "message"),
    [
        pytest.param(
            pod(("a", "b")),
            "",
            "a container name must be specified for pod p, choose one of: [a b]",
            id="several containers and none named",
        ),
        pytest.param(
            pod(("a", "b"), init=("setup",), ephemeral=("debug",)),
            "",
            "a container name must be specified for pod p, choose one of: [setup a b debug]",
            id="the choices list init, regular and ephemeral containers in that order",
        ),
        pytest.param(
            pod(()),
            "",
            "a container name must be specified for pod p",
            id="no containers at all",
        ),
        pytest.param(pod(("a",)), "b", "container b is not valid for pod p", id="a wrong name"),
    ],
)
def test_a_container_that_cannot_be_chosen(
    the_pod: dict[str, Any], asked: str, message: str
) -> None:
    error = raised(lambda: nodeproxy.select_container(the_pod, asked))
    assert (error.code, error.reason, error.message) == (400, "BadRequest", message)


def test_a_pod_without_a_node() -> None:
    assert nodeproxy.assigned_node(pod()) == ""
    assert nodeproxy.assigned_node(pod(node="n1")) == "n1"
    error = nodeproxy.unassigned(pod())
    assert (error.code, error.message) == (400, "pod p does not have a host assigned")


# ------------------------------------------------------------------------------ the endpoint


@pytest.mark.parametrize(
    ("the_node", "endpoint"),
    [
        pytest.param(
            node([("InternalIP", "127.0.0.1")], 12345),
            nodeproxy.Endpoint("127.0.0.1", 12345),
            id="the internal address and the kubelet port",
        ),
        pytest.param(
            node([("Hostname", "box"), ("ExternalIP", "1.2.3.4"), ("InternalIP", "10.0.0.2")]),
            nodeproxy.Endpoint("10.0.0.2", 10255),
            id="the internal address comes first whatever the order of the list",
        ),
        pytest.param(
            node([("Hostname", "box"), ("ExternalIP", "1.2.3.4")]),
            nodeproxy.Endpoint("1.2.3.4", 10255),
            id="then the external address",
        ),
        pytest.param(
            node([("InternalDNS", "box.internal"), ("Hostname", "box")]),
            nodeproxy.Endpoint("box", 10255),
            id="then the hostname",
        ),
        pytest.param(
            node([("InternalIP", "10.0.0.2")], None),
            nodeproxy.Endpoint("10.0.0.2", 10250),
            id="the kubelet's port when the node does not say",
        ),
        pytest.param(
            node([("InternalIP", "10.0.0.2")], 0),
            nodeproxy.Endpoint("10.0.0.2", 10250),
            id="the kubelet's port when the node says 0",
        ),
    ],
)
def test_a_node_endpoint(the_node: dict[str, Any], endpoint: nodeproxy.Endpoint) -> None:
    assert nodeproxy.node_endpoint(the_node) == endpoint


def test_a_node_without_a_usable_address() -> None:
    error = raised(lambda: nodeproxy.node_endpoint(node([("InternalDNS", "box.internal")])))
    assert error.code == 500
    assert error.message == (
        "no preferred addresses found; known addresses: [{InternalDNS box.internal}]"
    )


@pytest.mark.parametrize(
    ("endpoint", "path", "query", "url"),
    [
        pytest.param(
            nodeproxy.Endpoint("127.0.0.1", 10250),
            nodeproxy.node_path(nodeproxy.LOG_PATH, "ns", "p", "c"),
            [("follow", "true"), ("tailLines", "3")],
            "https://127.0.0.1:10250/containerLogs/ns/p/c?follow=true&tailLines=3",
            id="a log request",
        ),
        pytest.param(
            nodeproxy.Endpoint("::1", 10250),
            nodeproxy.node_path(nodeproxy.EXEC_PATH, "ns", "p", "c"),
            [("command", "echo"), ("command", "a b&c"), ("output", "1")],
            "https://[::1]:10250/exec/ns/p/c?command=echo&command=a+b%26c&output=1",
            id="an exec request to an IPv6 node, the query escaped as Go escapes it",
        ),
        pytest.param(
            nodeproxy.Endpoint("box", 1),
            nodeproxy.node_path(nodeproxy.LOG_PATH, "ns", "p", "c"),
            [],
            "https://box:1/containerLogs/ns/p/c",
            id="no query, no question mark",
        ),
    ],
)
def test_node_urls(
    endpoint: nodeproxy.Endpoint, path: str, query: list[tuple[str, str]], url: str
) -> None:
    assert endpoint.url(path, query) == url


# ------------------------------------------------------------------------------ node errors


@pytest.mark.parametrize(
    ("status", "text", "code", "reason", "message"),
    [
        pytest.param(
            400,
            'container "c" in pod "p" is waiting to start: ContainerCreating',
            400,
            "BadRequest",
            'container "c" in pod "p" is waiting to start: ContainerCreating',
            id="a 400 keeps the node's message",
        ),
        pytest.param(
            500,
            "disk on fire",
            500,
            "InternalError",
            "Internal error occurred: disk on fire",
            id="a 500 is an internal error with the node's message",
        ),
        pytest.param(
            404,
            "no such pod",
            404,
            "NotFound",
            "the server could not find the requested resource ( pods/log p)",
            id="a 404 names the resource, not the node's words",
        ),
        pytest.param(
            401,
            "Unauthorized",
            401,
            "Unauthorized",
            "the server has asked for the client to provide credentials ( pods/log p)",
            id="a 401 from the node",
        ),
        pytest.param(
            403,
            "nodes/proxy is forbidden",
            403,
            "Forbidden",
            "nodes/proxy is forbidden ( pods/log p)",
            id="a 403 keeps the node's message",
        ),
        pytest.param(
            503,
            "busy",
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request ( pods/log p)",
            id="a 503",
        ),
        pytest.param(
            502,
            'bad "gateway"',
            502,
            "InternalError",
            'an error on the server ("bad \\"gateway\\"") has prevented the request from '
            "succeeding ( pods/log p)",
            id="another 5xx quotes the node's message",
        ),
        pytest.param(
            418,
            "teapot",
            418,
            "",
            "the server responded with the status code 418 but did not return more "
            "information ( pods/log p)",
            id="anything else",
        ),
    ],
)
def test_node_errors_become_kube_statuses(
    status: int, text: str, code: int, reason: str, message: str
) -> None:
    error = nodeproxy.node_error(status, text, "p")
    assert (error.code, error.reason, error.message) == (code, reason, message)


def test_a_generic_node_error_names_the_pod_log() -> None:
    assert nodeproxy.node_error(404, "", "p").details == {"name": "p", "kind": "pods/log"}


# ------------------------------------------------------------------------------ exit status


def test_a_zero_exit_is_success() -> None:
    assert channels.exit_status(0) == {"metadata": {}, "status": "Success"}


def test_a_non_zero_exit_carries_its_code_as_client_go_reads_it() -> None:
    status = channels.exit_status(3)
    assert status["status"] == "Failure"
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    assert status["message"] == "command terminated with non-zero exit code: exit status 3"


def test_a_status_message_is_on_channel_3() -> None:
    message = channels.status_message(errors.internal("boom"))
    assert message[:1] == b"\x03"
    assert b'"message":"Internal error occurred: boom"' in message


# ------------------------------------------------------------------------------ routing


def test_only_pod_subresources_of_the_node_are_proxied() -> None:
    catalog = resources.Catalog()
    pods = catalog.find("", "v1", "pods")
    nodes = catalog.find("", "v1", "nodes")
    assert pods is not None
    assert nodes is not None
    assert [
        s
        for s in ("log", "exec", "attach", "portforward", "status", "binding", "")
        if nodeproxy.serves(pods, s)
    ] == ["log", "exec", "attach", "portforward"]
    assert not nodeproxy.serves(nodes, "log")
