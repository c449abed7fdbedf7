"""Pod subresources the pod's node serves: ``pods/log``, ``pods/exec`` and ``pods/portforward``
forwarded to the node agent, as kube-apiserver forwards them to the kubelet; and the node's
usage statistics, which :mod:`.metrics` reads as metrics-server reads the kubelet's.

What it owns: finding where a container lives (the pod, the container, the pod's node, the
node's endpoint), translating the API request into the node's request (its options are read
by :mod:`kubetrain.local.podoptions`), relaying the answer (a log stream; WebSocket messages
both ways, :mod:`kubetrain.local.channels`; or upgraded bytes, :mod:`.upgrades`), and turning
the node's failures into the ``Status`` errors a Kubernetes client expects. It is the API
server's one HTTP *client*: ``kube/`` talks to API servers, this talks to nodes.

What it must not do: run commands, read log files, or keep state; the node agent does those.
It never sends its token to a node whose certificate the control plane's CA did not issue.

The node-facing contract
------------------------
The node agent implements exactly this. Paths, parameters and protocols are the kubelet's, so
anything shaped like a kubelet fits.

**Where.** From the Node object: the host is the first address in ``status.addresses`` whose
type comes first in :data:`ADDRESS_TYPES` (the local node registers ``InternalIP``
``127.0.0.1``); the port is ``status.daemonEndpoints.kubeletEndpoint.Port``
(:data:`DEFAULT_NODE_PORT` when unset, as in kube). Always HTTPS.

**Trust and authentication.**

- The node serves a certificate issued by the control plane's CA for the address it registers
  (:func:`kubetrain.local.tls.issue_certificate`; the local node agent runs on the
  control plane's machine, as the same user, and can read the CA in the state directory). The
  API server checks it against that CA and refuses any other, so the token below cannot be
  sent to a Node object that points somewhere else.
- Every request carries ``Authorization: Bearer <token>``, the API server's own token: the one
  in the local control plane's kubeconfig, which the node agent holds as an API client. The
  node compares it in constant time and answers 401 to anything else. (kube-apiserver shows a
  client certificate instead, and the kubelet authorizes ``nodes/proxy`` through a
  SubjectAccessReview; with one user and one token, the shared token does the same job.)

**Logs.** ``GET /containerLogs/{namespace}/{pod}/{container}`` with the query of
:meth:`.podoptions.LogOptions.node_query`: ``follow``, ``previous`` and ``timestamps``
(``=true``, sent only when true), ``sinceSeconds``, ``sinceTime`` (RFC 3339, UTC),
``tailLines``, ``limitBytes``. The node answers 200 with the log's bytes as ``text/plain``; with
``follow`` it writes (and flushes) lines as they come and ends when the container has stopped
and its log is drained, or when the API server closes the connection (which it does when its own
client goes). Errors are an HTTP status with a plain-text message, as the kubelet's are (e.g.
400 ``container "c" in pod "p" is waiting to start: ContainerCreating``); :func:`node_error`
turns them into the Status kube-apiserver would send.

**Exec.** ``GET /exec/{namespace}/{pod}/{container}`` with the query of
:meth:`.podoptions.ExecOptions.node_query`
(``command=a&command=b&error=1&input=1&output=1&tty=1``: the kubelet's names for stderr, stdin
and stdout; a flag present only when true), as a WebSocket upgrade offering one subprotocol, the
one the API server's client chose: ``v5.channel.k8s.io`` (all kubectl offers; required) or
``v4.channel.k8s.io``. A client's SPDY/3.1 upgrade (kubectl 1.29 and older, or
``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false``) goes to the node as the same upgrade, ``GET`` or
``POST`` with the kubelet's query and the client's ``X-Stream-Protocol-Version`` offers, and the
node's answer comes back as it is; after a 101 the bytes go both ways unchanged, as
kube-apiserver 1.28 passes them (the node speaks the kubelet's SPDY:
:mod:`kubetrain.local.node.spdy`). Every WebSocket message is binary and starts with its channel
(:mod:`.channels`): ``STDIN`` 0, ``STDOUT`` 1, ``STDERR`` 2, ``STATUS`` 3, ``RESIZE`` 4 (a JSON
``{"Width": w, "Height": h}``). In v5, ``[255, n]`` closes channel ``n``: ``[255, 0]`` is the
end of stdin. When the process ends, the node sends exactly one message on channel 3 holding a
JSON ``metav1.Status`` (:func:`.channels.exit_status`: ``Success``, or ``Failure`` with reason
``NonZeroExitCode`` and a cause ``{"reason": "ExitCode", "message": "<0-255>"}``; a process
killed by signal n exits 128+n), then closes with 1000. Anything that fails after the upgrade
(no such container, container not running, command not found) is reported the same way, as a
``Failure`` Status with its message, because the API server has already upgraded its own client
by then (kube-apiserver's stream translator does the same). Before an upgrade the node answers
only 401 (token), 404 (path) or 400 (not a WebSocket request). Each side answers pings. The API
server relays messages unchanged in both directions; when its client goes away it closes the
node's connection, and the node then ends the process (its whole process group).

**Stats.** ``GET /stats/summary`` answers 200 with the kubelet's ``statsapi.Summary`` as JSON:
``node`` (``nodeName``, ``startTime``, ``cpu``, ``memory``) and ``pods[]`` (``podRef`` with
``name``, ``namespace`` and ``uid``; ``startTime``; ``containers[]`` with ``name``,
``startTime``, ``cpu`` and ``memory``), where ``cpu`` is ``{time, usageNanoCores,
usageCoreNanoSeconds}`` and ``memory`` is ``{time, usageBytes, workingSetBytes, rssBytes}``
(the node's memory has ``availableBytes`` too), times as ``metav1.Time``. ``usageNanoCores`` is
the rate over the node's last sampling window and is absent until there is one. Only running
containers appear. :meth:`NodeProxy.summary` reads it within :data:`STATS_TIMEOUT`.

**Port-forward.** ``POST /portForward/{namespace}/{pod}`` (:data:`PORT_FORWARD_PATH`; ``GET``
too), with ``port=P`` once per port of the client's ``ports`` query. As a SPDY/3.1 upgrade
with ``X-Stream-Protocol-Version: portforward.k8s.io``: per forwarded connection the client
opens an ``error`` and a ``data`` stream (headers ``streamType``, ``port``, ``requestID``);
the node connects to the pod's port and copies the data stream's bytes both ways; a port it
cannot reach gets the kubelet's message on the error stream. Or as a WebSocket with the
kubelet's channels (``v4.channel.k8s.io``: port ``i`` on channels ``2i`` and ``2i+1``, each
opened by the port as two little-endian bytes). The API server passes a client's SPDY upgrade
through (kube-apiserver 1.28's way, and kubectl's fallback); a WebSocket asking for
``SPDY/3.1+portforward.k8s.io`` (kubectl 1.31 and later) is tunnelled: the API server upgrades
the node's connection to SPDY itself and carries its bytes in binary messages
(:mod:`.upgrades`); a ``v4.channel.k8s.io`` WebSocket is relayed message by message. The node
side is :mod:`kubetrain.local.node.portforward`.

``pods/attach`` is not in the contract yet; the API server answers it with 400.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import ipaddress
import json
import logging
import ssl
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, urlencode

import aiohttp
import yarl
from aiohttp import web

from kubetrain import _aio
from kubetrain.local import channels, errors, podoptions
from kubetrain.local.apiserver import registry, resources, upgrades
from kubetrain.local.kubeletapi import (
    EXEC_PATH,
    LOG_PATH,
    PORT_FORWARD_PATH,
    STATS_PATH,
    container_names,
)

log = logging.getLogger(__name__)

# -- the contract (its paths: kubetrain.local.kubeletapi) ---------------------------------

ADDRESS_TYPES: Final = ("InternalIP", "ExternalIP", "Hostname")  # kubeadm's preference order
DEFAULT_NODE_PORT: Final = 10250  # the kubelet's port, used when a Node does not say
PORT_FORWARD_PROTOCOL: Final = "portforward.k8s.io"  # over SPDY, and in the tunnel's name
# A port-forward WebSocket: SPDY tunnelled (kubectl 1.31+), or the kubelet's channels.
PORT_FORWARD_SUBPROTOCOLS: Final = (
    upgrades.TUNNEL_PREFIX + PORT_FORWARD_PROTOCOL,
    "v4.channel.k8s.io",
    PORT_FORWARD_PROTOCOL,
)

# -- how the API server behaves towards nodes ---------------------------------------------

PROXIED: Final = ("log", "exec", "attach", "portforward")
NODE_TIMEOUT: Final = 30.0  # seconds to connect and get headers; also the idle limit of a log
HEARTBEAT: Final = 30.0  # seconds between WebSocket pings to each side of an exec
DISCONNECT_TICK: Final = 1.0  # how often a quiet log stream checks that its client is there
_TIMEOUTS: Final = (TimeoutError, asyncio.TimeoutError)  # distinct classes before Python 3.11
STATS_TIMEOUT: Final = 10.0  # seconds a node may take to answer /stats/summary (metrics-server's)
MAX_ERROR_BODY: Final = upgrades.MAX_ERROR_BODY
TEXT: Final = "text/plain"
SPDY_REFUSED: Final = (
    "pods/exec: only SPDY/3.1 of the SPDY versions is served; this API server also speaks "
    "the WebSocket subprotocols v5.channel.k8s.io and v4.channel.k8s.io"
)


def serves(r: resources.Resource, subresource: str) -> bool:
    """Whether this module answers ``r/subresource`` (the pod subresources a node serves)."""
    return r.group == "" and r.plural == "pods" and subresource in PROXIED


# -- where a container lives -------------------------------------------------------------


def select_container(pod: Mapping[str, Any], container: str) -> str:
    """The container a request means, with kube's messages (``validateContainer``): the only
    container when none is named, else the named one, which must exist."""
    name = (pod.get("metadata") or {}).get("name", "")
    if container:
        if container not in container_names(pod):
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        return container
    regular = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, Mapping)]
    if len(regular) == 1:
        return str(regular[0].get("name", ""))
    if not regular:
        raise errors.bad_request(f"a container name must be specified for pod {name}")
    choices = " ".join(container_names(pod))
    raise errors.bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{choices}]"
    )


def assigned_node(pod: Mapping[str, Any]) -> str:
    """The node a pod is bound to, or ``""``."""
    return str((pod.get("spec") or {}).get("nodeName") or "")


def unassigned(pod: Mapping[str, Any]) -> errors.ApiError:
    """kube's answer to exec on a pod no node has yet (``streamLocation``)."""
    name = (pod.get("metadata") or {}).get("name", "")
    return errors.bad_request(f"pod {name} does not have a host assigned")


@dataclass(frozen=True)
class Endpoint:
    """Where a node serves logs and exec."""

    host: str
    port: int

    def url(self, path: str, query: Sequence[tuple[str, str]] = ()) -> str:
        """``https://host:port/path?query``, the query encoded as Go's ``url.Values`` does."""
        host = self.host
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(host).version == 6:
                host = f"[{host}]"
        text = f"https://{host}:{self.port}{path}"
        return f"{text}?{urlencode(list(query))}" if query else text


def node_endpoint(node: Mapping[str, Any]) -> Endpoint:
    """A node's endpoint from its status, as kube's ``NodeConnectionInfoGetter`` finds it."""
    status = node.get("status") or {}
    addresses = [a for a in status.get("addresses") or [] if isinstance(a, Mapping)]
    host = next(
        (
            str(a.get("address"))
            for kind in ADDRESS_TYPES
            for a in addresses
            if a.get("type") == kind and a.get("address")
        ),
        None,
    )
    if host is None:
        known = " ".join(f"{{{a.get('type', '')} {a.get('address', '')}}}" for a in addresses)
        raise errors.ApiError(500, "", f"no preferred addresses found; known addresses: [{known}]")
    endpoint = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
    port = endpoint.get("Port")
    if not isinstance(port, int) or isinstance(port, bool) or port <= 0:
        port = DEFAULT_NODE_PORT
    return Endpoint(host, port)


def node_path(template: str, namespace: str, pod: str, container: str) -> str:
    """:data:`LOG_PATH` or :data:`EXEC_PATH` filled in, each name escaped as a path segment."""
    return template.format(
        namespace=quote(namespace, safe=""),
        pod=quote(pod, safe=""),
        container=quote(container, safe=""),
    )


# -- what the node says -------------------------------------------------------------------

# kube's NewGenericServerResponse: status → (reason, message); None keeps the node's message.
_GENERIC: Final[Mapping[int, tuple[str, str | None]]] = {
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    403: ("Forbidden", None),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    406: ("NotAcceptable", None),
    409: ("Conflict", "the server reported a conflict"),
    415: ("UnsupportedMediaType", None),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: (
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
    ),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted, but may still be "
        "processing the request",
    ),
}


def node_error(status: int, text: str, pod: str) -> errors.ApiError:
    """The Status a client gets when the node answers a log request with ``status`` and
    ``text``: kube-apiserver's ``GenericHttpResponseChecker`` for ``pods/log``."""
    if status == 500:
        return errors.internal(text)
    if status == 400:
        return errors.bad_request(text)
    reason, message = _GENERIC.get(status, ("", ""))
    if message is None:
        message = text
    elif not message:
        message = (
            f"the server responded with the status code {status} but did not return more "
            "information"
        )
        if status >= 500:
            reason = "InternalError"
            message = (
                f"an error on the server ({json.dumps(text)}) has prevented the request "
                "from succeeding"
            )
    return errors.ApiError(
        status, reason, f"{message} ( pods/log {pod})", {"name": pod, "kind": "pods/log"}
    )


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _TIMEOUTS) and not str(exc):
        return f"no answer within {NODE_TIMEOUT:.0f}s"
    return str(exc) or type(exc).__name__


# -- the proxy ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """Where a request goes: the node's name (for messages), its endpoint, the container."""

    node: str
    endpoint: Endpoint
    container: str


class NodeProxy:
    """Serves the proxied pod subresources for one API server; owns its connection pool to
    the nodes (open it lazily, close it with :meth:`close`)."""

    def __init__(
        self,
        reg: registry.Registry,
        *,
        token: str,
        ssl_context: ssl.SSLContext | None = None,
        timeout: float = NODE_TIMEOUT,
        tick: float = DISCONNECT_TICK,
    ) -> None:
        self.registry = reg
        self.token = token
        self.ssl_context = ssl_context
        self.timeout = timeout
        self.tick = tick
        self._client: aiohttp.ClientSession | None = None
        self._closed = False
        # Log bodies being relayed: closing the connector does not wake their readers.
        self._streams: set[aiohttp.ClientResponse] = set()
        # Connections to nodes carrying an upgraded (SPDY) exec, ended on close().
        self._relays: set[asyncio.StreamWriter] = set()

    async def close(self) -> None:
        """Close every node connection: open log streams end, and exec sessions end with a
        Status saying so. Called when the API server shuts down; later requests get 503."""
        self._closed = True
        for upstream in list(self._streams):
            upstream.close()
        for relay in list(self._relays):
            relay.transport.abort()
        if self._client is not None:
            connector = self._client.connector
            if connector is not None:  # a TLS goodbye would wait for nodes that never answer
                await connector.close(abort_ssl=True)
            await self._client.close()
            self._client = None

    def _session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise errors.unavailable("the API server is shutting down")
        if self._client is None:
            # No pool limit: every `logs -f` and exec holds a connection for as long as it runs.
            connector = aiohttp.TCPConnector(ssl=self.ssl_context or True, limit=0)
            self._client = aiohttp.ClientSession(
                connector=connector,
                headers={"Authorization": f"Bearer {self.token}"},
                # Each call bounds its own wait; a follow or an exec session has no total.
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout),
            )
        return self._client

    async def serve(
        self, request: web.Request, namespace: str, name: str, subresource: str
    ) -> web.StreamResponse:
        """Answer ``pods/<subresource>`` of ``namespace/name``."""
        if subresource == "log":
            if request.method != "GET":
                raise errors.method_not_allowed("", "pods/log", _verb(request.method))
            return await self._log(request, namespace, name)
        if subresource == "exec":
            if request.method not in ("GET", "POST"):
                raise errors.method_not_allowed("", "pods/exec", _verb(request.method))
            return await self._exec(request, namespace, name)
        if subresource == "portforward":
            if request.method not in ("GET", "POST"):
                raise errors.method_not_allowed("", "pods/portforward", _verb(request.method))
            return await self._port_forward(request, namespace, name)
        raise errors.bad_request(
            f"pods/{subresource} is not served by this API server yet; pods/log, pods/exec and "
            "pods/portforward are"
        )

    # -- reads ----------------------------------------------------------------------------

    async def _object(self, plural: str, namespace: str | None, name: str) -> dict[str, Any]:
        r = self.registry.catalog.find("", "v1", plural)
        assert r is not None, plural
        return (await self.registry.get(r, namespace, name)).obj

    async def _endpoint(self, node: str) -> Endpoint:
        return node_endpoint(await self._object("nodes", None, node))

    # -- stats ----------------------------------------------------------------------------

    async def summary(self, node: Mapping[str, Any]) -> dict[str, Any]:
        """The node's ``/stats/summary`` (see the contract); an :class:`errors.ApiError`
        (500, or 503 while shutting down) says why there is none."""
        name = str((node.get("metadata") or {}).get("name") or "")
        url = node_endpoint(node).url(STATS_PATH)
        limit = min(self.timeout, STATS_TIMEOUT)
        try:
            async with _aio.timeout(limit):
                response = await self._session().get(
                    yarl.URL(url, encoded=True), allow_redirects=False
                )
                try:
                    if response.status != 200:
                        text = await self._error_text(response)
                        raise errors.internal(
                            f"node {name} answered {response.status} to {STATS_PATH}: "
                            f"{text.strip()[:200]}"
                        )
                    doc = await response.json(content_type=None)
                finally:
                    response.release()
        except _TIMEOUTS as exc:
            raise errors.internal(f'Get "{url}": no answer within {limit:.0f}s') from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise errors.internal(f'Get "{url}": {_describe(exc)}') from exc
        if not isinstance(doc, dict):
            raise errors.internal(f"node {name}: {STATS_PATH} is not a Summary object")
        return doc

    # -- log ------------------------------------------------------------------------------

    async def _log(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        options = podoptions.log_options(request.query, name)
        pod = await self._object("pods", namespace, name)
        container = select_container(pod, options.container)
        node = assigned_node(pod)
        if not node:  # kube: no node, no log location, no content (204)
            return web.Response(status=204)
        endpoint = await self._endpoint(node)
        url = endpoint.url(node_path(LOG_PATH, namespace, name, container), options.node_query())
        upstream = await self._open_log(url, follow=options.follow)
        self._streams.add(upstream)
        try:
            if not 200 <= upstream.status <= 206:
                text = await self._error_text(upstream)
                raise node_error(upstream.status, text, name)
            response = web.StreamResponse(status=200, headers={"Content-Type": TEXT})
            response.enable_chunked_encoding()
            await response.prepare(request)
            copy = _copy_body(upstream.content, response, f"{namespace}/{name}")
            await _while_connected(request, copy, self.tick)
            with contextlib.suppress(ConnectionError):
                await response.write_eof()
            return response
        finally:
            self._streams.discard(upstream)
            upstream.close()  # ends the node's side too when the client left mid-stream

    async def _open_log(self, url: str, *, follow: bool) -> aiohttp.ClientResponse:
        """Send the request and wait for the node's headers, within the timeout. A follow's
        body has no idle limit; any other body may be idle for at most the timeout."""
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.timeout, sock_read=None if follow else self.timeout
        )
        try:
            async with _aio.timeout(self.timeout):
                return await self._session().get(
                    yarl.URL(url, encoded=True), timeout=timeout, allow_redirects=False
                )
        except (aiohttp.ClientError, OSError, *_TIMEOUTS) as exc:
            raise errors.ApiError(500, "", f'Get "{url}": {_describe(exc)}') from exc

    async def _error_text(self, upstream: aiohttp.ClientResponse) -> str:
        chunks: list[bytes] = []
        size = 0
        with contextlib.suppress(aiohttp.ClientError, OSError, *_TIMEOUTS):
            async with _aio.timeout(self.timeout):
                while size < MAX_ERROR_BODY:
                    chunk = await upstream.content.read(MAX_ERROR_BODY - size)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
        return b"".join(chunks).decode("utf-8", errors="replace")

    # -- exec -----------------------------------------------------------------------------

    async def _exec(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        options = podoptions.exec_options(request.query)
        where = await self._locate(namespace, name, options.container)
        if upgrades.spdy_requested(request):
            return await self._exec_spdy(request, where, options, namespace, name)
        client, protocol = _websocket(request, "pods/exec", channels.SUBPROTOCOLS)
        # Upgrade first, then dial the node: what fails from here on reaches the client as a
        # Status on channel 3, as with kube-apiserver's stream translator.
        await client.prepare(request)
        path = node_path(EXEC_PATH, namespace, name, where.container)
        url = where.endpoint.url(path, options.node_query())
        try:
            node = await self._dial(url, protocol, where.node)
        except errors.ApiError as exc:
            await channels.finish(client, exc)
            return client
        try:
            await channels.relay(client, node, where.node)
        finally:
            await node.close()
        return client

    async def _exec_spdy(
        self,
        request: web.Request,
        where: Location,
        options: podoptions.ExecOptions,
        namespace: str,
        name: str,
    ) -> web.StreamResponse:
        """Pass a SPDY upgrade through to the node (kube-apiserver's UpgradeAwareHandler):
        a refusal comes back as the node sent it; after a 101, bytes both ways until either
        side closes."""
        path = node_path(EXEC_PATH, namespace, name, where.container)
        url = yarl.URL(where.endpoint.url(path, options.node_query()), encoded=True)
        offers = request.headers.getall(upgrades.STREAM_PROTOCOL_HEADER, [])
        answer = await self._upgrade(url, request.method, offers)
        try:
            if answer.status != 101:
                return await answer.refusal(self.timeout)
            return await upgrades.pass_through(
                request, answer, self._relays, f"exec of {namespace}/{name}"
            )
        finally:
            answer.writer.close()

    async def _upgrade(
        self, url: yarl.URL, method: str, protocols: Sequence[str]
    ) -> upgrades.Answer:
        if self._closed:
            raise errors.unavailable("the API server is shutting down")
        return await upgrades.dial(
            url,
            method=method,
            token=self.token,
            protocols=protocols,
            ssl_context=self.ssl_context,
            timeout=self.timeout,
        )

    # -- port-forward ---------------------------------------------------------------------

    async def _port_forward(
        self, request: web.Request, namespace: str, name: str
    ) -> web.StreamResponse:
        """SPDY passed through, SPDY tunnelled in a WebSocket, or the kubelet's WebSocket
        channels relayed; each ends at the node's ``/portForward``."""
        ports = podoptions.port_forward_ports(request.query)
        pod = await self._object("pods", namespace, name)
        node = assigned_node(pod)
        if not node:
            raise unassigned(pod)
        endpoint = await self._endpoint(node)
        path = node_path(PORT_FORWARD_PATH, namespace, name, "")
        url = endpoint.url(path, [("port", str(p)) for p in ports])
        what = f"port-forward to {namespace}/{name}"
        if upgrades.spdy_requested(request):
            offers = request.headers.getall(upgrades.STREAM_PROTOCOL_HEADER, [])
            answer = await self._upgrade(yarl.URL(url, encoded=True), request.method, offers)
            try:
                if answer.status != 101:
                    return await answer.refusal(self.timeout)
                return await upgrades.pass_through(request, answer, self._relays, what)
            finally:
                answer.writer.close()
        client, chosen = _websocket(
            request, "pods/portforward", PORT_FORWARD_SUBPROTOCOLS, also=", and SPDY/3.1"
        )
        if chosen.startswith(upgrades.TUNNEL_PREFIX):
            protocol = chosen[len(upgrades.TUNNEL_PREFIX) :]
            answer = await self._upgrade(yarl.URL(url, encoded=True), "POST", [protocol])
            if answer.status != 101:  # before the client's upgrade: it sees the node's answer
                answer.writer.close()
                return await answer.refusal(self.timeout)
            await client.prepare(request)
            await upgrades.tunnel(client, answer, self._relays, what)
            return client
        await client.prepare(request)
        try:
            upstream = await self._dial(url, chosen, node)
        except errors.ApiError as exc:
            log.info("%s: %s", what, exc.message)
            await client.close()
            return client
        await channels.relay(client, upstream, node, needs_status=False)
        return client

    async def _locate(self, namespace: str, name: str, container: str) -> Location:
        pod = await self._object("pods", namespace, name)
        chosen = select_container(pod, container)
        node = assigned_node(pod)
        if not node:
            raise unassigned(pod)
        return Location(node, await self._endpoint(node), chosen)

    async def _dial(self, url: str, protocol: str, node: str) -> aiohttp.ClientWebSocketResponse:
        """Open the node's WebSocket within the timeout, speaking ``protocol``."""
        try:
            async with _aio.timeout(self.timeout):
                ws = await self._session().ws_connect(
                    yarl.URL(url, encoded=True), protocols=(protocol,), heartbeat=HEARTBEAT
                )
        except aiohttp.WSServerHandshakeError as exc:
            phrase = _phrase(exc.status)
            raise errors.internal(
                f"unable to upgrade connection to node {node}: {exc.status} {phrase}".rstrip()
            ) from exc
        except (aiohttp.ClientError, OSError, *_TIMEOUTS) as exc:
            raise errors.internal(f"error dialing backend: {_describe(exc)}") from exc
        if ws.protocol != protocol:
            await ws.close()
            raise errors.internal(f"node {node} does not speak the subprotocol {protocol}")
        return ws


def _verb(method: str) -> str:
    return {"POST": "create", "PUT": "update"}.get(method, method.lower())


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _websocket(
    request: web.Request, what: str, subprotocols: Sequence[str], *, also: str = ""
) -> tuple[web.WebSocketResponse, str]:
    """The client's WebSocket, not yet prepared, and the subprotocol both sides speak: exec
    and port-forward refuse alike a request that is no upgrade, or offers none of theirs (a
    400 that names what this server speaks, ``also`` included)."""
    client = web.WebSocketResponse(protocols=subprotocols, heartbeat=HEARTBEAT)
    ready = client.can_prepare(request)
    if not ready.ok:
        raise _not_upgraded(request)
    if ready.protocol is None:
        offered = request.headers.get("Sec-WebSocket-Protocol", "")
        raise errors.bad_request(
            f"{what}: none of the WebSocket subprotocols offered ({offered or 'none'}) "
            f"is served; this API server speaks {', '.join(subprotocols)}{also}"
        )
    return client, ready.protocol


def _not_upgraded(request: web.Request) -> errors.ApiError:
    """What a request to exec that is not a WebSocket upgrade gets."""
    if request.headers.get("Upgrade", "").upper().startswith("SPDY/"):
        return errors.bad_request(SPDY_REFUSED)
    return errors.bad_request("Upgrade request required")  # kube's UpgradeAwareHandler


def _client_gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _while_connected(request: web.BaseRequest, work: Awaitable[None], tick: float) -> None:
    """Run ``work`` until it ends or the client goes away. aiohttp does not cancel a handler
    whose client left, and a quiet follow writes nothing that would notice, so the client's
    connection is looked at every ``tick``."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=tick)
            if done:
                task.result()
                return
            if _client_gone(request):
                return
    finally:
        task.cancel()


async def _copy_body(content: aiohttp.StreamReader, response: web.StreamResponse, pod: str) -> None:
    """Chunk by chunk as the node writes them; a break on either side ends the copy (and the
    response, as kube-apiserver ends it: the client cannot be told after the headers)."""
    try:
        async for chunk in content.iter_any():
            await response.write(chunk)
    except ConnectionError as exc:  # the client went away
        log.debug("log of pod %s: client gone: %s", pod, exc)
    except (aiohttp.ClientError, *_TIMEOUTS) as exc:  # node gone or quiet, or shutting down
        log.info("log of pod %s ended early: %s", pod, _describe(exc))
