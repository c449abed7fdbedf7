"""The local API server, and the node agent's logs/exec endpoint beside it, accept only their
bearer token, only over TLS, and only on loopback.

- no token, a wrong one, one of the right length, another scheme, the token in the query, or
  a header that is not even UTF-8: 401 ``Unauthorized`` and nothing else; the health
  endpoints answer without one (as kube-apiserver's defaults do) and say nothing but "ok";
- plain HTTP on the TLS port gets no answer but a closed connection (or a 400), never data;
- the certificate is the control plane's own CA's, and the kubeconfig trusts that CA only;
- the sockets listen on 127.0.0.1 alone: another loopback address (127.0.0.2) is refused,
  and ``/proc/net/tcp*`` shows no wildcard or non-loopback listener on their ports.

Always against ``kubetrain up``'s control plane: these are the local control plane's rules.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest
import yaml

from kubetrain import kube
from tests.apiserver.cascade import run

if TYPE_CHECKING:  # imported by pytest as a plugin, before this module (see below)
    from tests.reliability.security_fixtures import Plane

# One control plane for every module of the suite: fixtures from a plugin are shared, those
# imported into a module would be started again for each.
pytest_plugins = ["tests.reliability.security_fixtures"]

NODES: Final = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")
TIMEOUT: Final = 10.0
RESOURCE: Final = "/api/v1/namespaces"


@dataclass(frozen=True)
class Endpoint:
    """A TLS endpoint of the plane: where, and a path that needs the token."""

    name: str
    host: str
    port: int
    path: str


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


def tls(plane: Plane) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=plane.ca_cert)


def request(
    plane: Plane, endpoint: Endpoint, headers: dict[str, str | bytes], path: str = ""
) -> Answer:
    connection = http.client.HTTPSConnection(
        endpoint.host, endpoint.port, context=tls(plane), timeout=TIMEOUT
    )
    try:
        connection.putrequest("GET", path or endpoint.path)
        for key, value in headers.items():
            connection.putheader(key, value)
        connection.endheaders()
        response = connection.getresponse()
        return Answer(response.status, response.read())
    finally:
        connection.close()


def node_endpoint(plane: Plane) -> Endpoint:
    async def read() -> dict:
        async with await kube.Client.from_kubeconfig(plane.kubeconfig) as client:
            return await client.list(NODES)

    nodes = run(read())["items"]
    assert len(nodes) == 1, [n["metadata"]["name"] for n in nodes]
    status = nodes[0]["status"]
    address = next(a["address"] for a in status["addresses"] if a["type"] == "InternalIP")
    port = status["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    return Endpoint("node", address, int(port), "/containerLogs/default/absent/c")


@pytest.fixture(scope="module", params=["apiserver", "node"])
def endpoint(plane: Plane, request: pytest.FixtureRequest) -> Iterator[Endpoint]:
    if request.param == "apiserver":
        yield Endpoint("apiserver", "127.0.0.1", plane.port, RESOURCE)
    else:
        yield node_endpoint(plane)


def refused(answer: Answer) -> bool:
    return answer.status == 401 and b"items" not in answer.body


WRONG_CREDENTIALS: Final = [
    pytest.param({}, id="no token"),
    pytest.param({"Authorization": "Bearer "}, id="empty token"),
    pytest.param({"Authorization": "Bearer not-the-token"}, id="wrong token"),
    pytest.param({"Authorization": "Basic YWRtaW46YWRtaW4="}, id="basic auth"),
    pytest.param({"Authorization": b"Bearer \xff\xfe"}, id="token not UTF-8"),
]


@pytest.mark.parametrize("headers", WRONG_CREDENTIALS)
def test_without_the_token_every_request_is_401(
    plane: Plane, endpoint: Endpoint, headers: dict[str, str | bytes]
) -> None:
    answer = request(plane, endpoint, headers)
    assert refused(answer), (answer.status, answer.body[:300])


def test_a_token_of_the_right_length_or_nearly_right_is_401(
    plane: Plane, endpoint: Endpoint
) -> None:
    token = plane.token
    for near in (
        "x" * len(token),
        token[:-1],
        token + "x",
        token[:-1] + chr(ord(token[-1]) ^ 1),
        token.upper() if token.upper() != token else token.lower(),
    ):
        answer = request(plane, endpoint, {"Authorization": f"Bearer {near}"})
        assert refused(answer), (answer.status, answer.body[:300])
    answer = request(plane, endpoint, {}, path=f"{endpoint.path}?access_token={token}")
    assert refused(answer), "a token in the query is no credential"


def test_with_the_token_the_same_request_is_served(plane: Plane, endpoint: Endpoint) -> None:
    answer = request(plane, endpoint, {"Authorization": f"Bearer {plane.token}"})
    assert answer.status != 401, answer.body[:300]
    if endpoint.name == "apiserver":
        assert answer.status == 200
        assert b'"items"' in answer.body


def test_health_answers_without_a_token_and_reveals_nothing(plane: Plane) -> None:
    endpoint = Endpoint("apiserver", "127.0.0.1", plane.port, RESOURCE)
    for path in ("/healthz", "/livez", "/readyz"):
        answer = request(plane, endpoint, {}, path=path)
        assert (answer.status, answer.body) == (200, b"ok"), path


def test_plain_http_on_the_tls_port_gets_no_answer(plane: Plane, endpoint: Endpoint) -> None:
    with socket.create_connection((endpoint.host, endpoint.port), timeout=TIMEOUT) as raw:
        raw.sendall(
            f"GET {endpoint.path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {plane.token}"
            "\r\nConnection: close\r\n\r\n".encode()
        )
        received = b""
        try:
            while chunk := raw.recv(65536):
                received += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    served = received.startswith(b"HTTP/") and received.split()[1:2] != [b"400"]
    assert not served, received[:300]
    assert b"items" not in received


def test_the_certificate_is_the_planes_own_and_the_kubeconfig_trusts_only_it(
    plane: Plane, endpoint: Endpoint
) -> None:
    with (
        socket.create_connection((endpoint.host, endpoint.port), timeout=TIMEOUT) as raw,
        tls(plane).wrap_socket(raw, server_hostname=endpoint.host) as secure,
    ):
        assert secure.version() in ("TLSv1.2", "TLSv1.3")
    default = ssl.create_default_context()  # the system's CAs: they never issued it
    with (
        socket.create_connection((endpoint.host, endpoint.port), timeout=TIMEOUT) as raw,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        default.wrap_socket(raw, server_hostname=endpoint.host)
    config = yaml.safe_load(Path(plane.kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == plane.url
    assert plane.url.startswith("https://127.0.0.1:")
    assert not cluster.get("insecure-skip-tls-verify")
    assert (
        base64.b64decode(cluster["certificate-authority-data"]) == Path(plane.ca_cert).read_bytes()
    )


def test_it_listens_on_loopback_only(plane: Plane, endpoint: Endpoint) -> None:
    assert endpoint.host == "127.0.0.1"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", endpoint.port), timeout=TIMEOUT).close()
    listeners = listening(endpoint.port)
    if listeners is None:
        pytest.skip("no /proc/net/tcp on this platform; 127.0.0.2 was refused all the same")
    assert listeners == {"127.0.0.1"}, listeners


def listening(port: int) -> set[str] | None:
    """The local addresses with a socket listening on ``port`` (TCP, v4 and v6)."""
    found: set[str] = set()
    seen = False
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        seen = True
        for line in lines:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] != "0A" or int(hex_port, 16) != port:  # 0A: LISTEN
                continue
            found.add(_address(address) if width == 8 else f"v6:{address}")
    return found if seen else None


def _address(little_endian_hex: str) -> str:
    return socket.inet_ntoa(bytes.fromhex(little_endian_hex)[::-1])


def test_the_status_file_says_where_it_listens(plane: Plane) -> None:
    status = json.loads((plane.home / "status.json").read_text())
    assert status["url"] == plane.url == f"https://127.0.0.1:{plane.port}"
