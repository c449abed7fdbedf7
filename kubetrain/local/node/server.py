"""The node's HTTPS endpoint: container logs and exec, as the kubelet serves them to the API
server (the contract is in :mod:`kubetrain.local.apiserver.nodeproxy`'s docstring).

- ``GET /containerLogs/{namespace}/{pod}/{container}``: the container's log with ``follow``,
  ``previous``, ``timestamps``, ``sinceSeconds``, ``sinceTime``, ``tailLines`` and
  ``limitBytes``; which attempt is read follows the kubelet's ``validateContainerLogStatus``,
  and its refusals are the kubelet's plain-text 400 and 404 messages.
- ``GET /exec/{namespace}/{pod}/{container}``: a WebSocket speaking ``v5.channel.k8s.io`` or
  ``v4.channel.k8s.io``: stdin in, stdout and stderr out, one ``metav1.Status`` on channel 3
  when the command ends, then a close (1000). A client that goes away ends the command's whole
  process group.
- ``POST /portForward/{namespace}/{pod}``: connections to the pod's ports over SPDY/3.1
  (``portforward.k8s.io``) or a WebSocket (``v4.channel.k8s.io``), as :mod:`.portforward`
  says.
- ``GET /stats/summary``: the kubelet's Summary API (``statsapi.Summary`` JSON: the node's and
  each running container's CPU and memory) from the latest sample of :mod:`.stats`, which this
  server keeps taking every ``stats_interval`` seconds while it serves.

Every request must be authenticated, as the kubelet authenticates: by a client certificate
that the client CA (``client_ca_file``, the kubelet's ``--client-ca-file``) issued, verified in
the TLS handshake (kube-apiserver shows its ``--kubelet-client-certificate``), or by
``Authorization: Bearer <token>`` with the local API server's token, compared in constant time;
anything else gets 401. Any authenticated caller may ask anything (the kubelet's
``--authorization-mode=AlwaysAllow``). The serving certificate is the one given
(``tls_cert_file``, ``tls_key_file``), or else issued by the control plane's CA when the agent
is given it, or else by a CA of the node's own, which the API server must be told to trust
(:func:`tls_context`).

Owns: HTTP, the channel protocol, the choice of log attempt, and the sampler's task. Must not:
run processes, read log files or /proc itself (:mod:`.runtime`, :mod:`.logs` and :mod:`.stats`
do), or know how pods are synced.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import signal
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Final, Protocol, runtime_checkable

import aiohttp
from aiohttp import web

from kubetrain import _aio
from kubetrain.local import channels, errors, kubeletapi, podoptions, tls
from kubetrain.local.node import logs, portforward, runtime, settings, spdy, stats, status

log = logging.getLogger(__name__)

TEXT: Final = "text/plain; charset=utf-8"
HEARTBEAT: Final = 30.0
DRAIN: Final = 2.0  # seconds an exec's output may take to close after its process ended
READ_SIZE: Final = 64 * 1024
CERT_FILE: Final = "node.crt"
KEY_FILE: Final = "node.key"
PKI_DIR: Final = "pki"
OWN_CA_DIR: Final = "own-ca"
STREAM_PROTOCOL_HEADER: Final = "X-Stream-Protocol-Version"
# Exec over SPDY: v4 sends the exit as a JSON Status on the error stream; v5 (offered by
# kube-apiserver 1.30 and later, translating a WebSocket client's request) is v4 with
# half-close, which SPDY streams have anyway.
SPDY_PROTOCOLS: Final = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STREAM_CREATION_TIMEOUT: Final = 30.0  # the kubelet's streamCreationTimeout

LogReader = Callable[..., AsyncIterator[bytes]]


class Pods(Protocol):
    """What the server needs from the agent: the pods bound to this node, by name, with the
    status the agent last computed."""

    def pod_by_name(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...


@runtime_checkable
class Described(Protocol):
    """An agent that also tells its node's name and settings (:class:`~.agent.Agent` does):
    the statistics name the node and sample at its ``stats_interval``."""

    name: str
    settings: settings.Settings


class Refused(Exception):
    """A request the node answers with a plain-text error, as the kubelet does."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- TLS ----------------------------------------------------------------------------------------


def certificate_file(config: settings.Settings) -> str:
    """The serving certificate's file: the one given (``tls_cert_file``), else the one
    :func:`tls_context` issues under ``<root>/agent/pki``."""
    return config.tls_cert_file or os.path.join(config.root, "agent", PKI_DIR, CERT_FILE)


def tls_context(config: settings.Settings, node_name: str) -> ssl.SSLContext:
    """A server context serving the certificate given (``tls_cert_file`` and
    ``tls_key_file``, the kubelet's flags), or else one issued for the node's address and name
    by the control plane's CA (``ca_cert``/``ca_key``), or by a CA the node makes for itself
    under ``<root>/agent/pki/own-ca`` when none is given (then the API server must trust that
    CA's ``ca.crt``, or it refuses to send the node anything). With ``client_ca_file``, a
    client may show a certificate; one that CA did not issue fails the handshake. Blocking:
    run it in a thread."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if config.tls_cert_file:
        context.load_cert_chain(config.tls_cert_file, config.tls_key_file or None)
    else:
        cert_path, key_path = _issue(config, node_name)
        context.load_cert_chain(cert_path, key_path)
    if config.client_ca_file:
        context.load_verify_locations(cafile=config.client_ca_file)
        context.verify_mode = ssl.CERT_OPTIONAL  # the kubelet's VerifyClientCertIfGiven
    return context


def _issue(config: settings.Settings, node_name: str) -> tuple[str, str]:
    directory = os.path.join(config.root, "agent", PKI_DIR)
    names = [node_name, "localhost"]
    ips = ["127.0.0.1", "::1"]
    try:
        ipaddress.ip_address(config.address)
        if config.address not in ips:
            ips.append(config.address)
    except ValueError:
        names.append(config.address)
    if config.ca_cert and config.ca_key:
        cert, key = _issue_from(config.ca_cert, config.ca_key, node_name, names, ips)
    else:
        own = os.path.join(directory, OWN_CA_DIR)
        tls.ensure(own)
        cert, key = tls.issue_certificate(own, node_name, names, ips)
        log.warning(
            "no CA was given: node %s serves a certificate from its own CA %s; the API server "
            "must trust it to reach this node's logs and exec",
            node_name,
            os.path.join(own, tls.CA_CERT),
        )
    cert_path = certificate_file(config)
    key_path = os.path.join(directory, KEY_FILE)
    tls.write_private(cert_path, cert)
    tls.write_private(key_path, key)
    return cert_path, key_path


def _issue_from(
    ca_cert: str, ca_key: str, common_name: str, names: Sequence[str], ips: Sequence[str]
) -> tuple[bytes, bytes]:
    directory = os.path.dirname(os.path.abspath(ca_cert))
    standard = (
        os.path.basename(ca_cert) == tls.CA_CERT
        and os.path.basename(ca_key) == tls.CA_KEY
        and os.path.dirname(os.path.abspath(ca_key)) == directory
    )
    if standard:
        return tls.issue_certificate(directory, common_name, names, ips)
    with tempfile.TemporaryDirectory(prefix="kubetrain-ca-") as scratch:  # the names it reads
        os.symlink(os.path.abspath(ca_cert), os.path.join(scratch, tls.CA_CERT))
        os.symlink(os.path.abspath(ca_key), os.path.join(scratch, tls.CA_KEY))
        return tls.issue_certificate(scratch, common_name, names, ips)


# -- the server ---------------------------------------------------------------------------------


def _container_id(text: Any) -> runtime.ContainerId | None:
    """``kubetrain://<uid>/<name>/<attempt>`` back into an id."""
    prefix = f"{status.ID_SCHEME}://"
    if not isinstance(text, str) or not text.startswith(prefix):
        return None
    uid, _, rest = text[len(prefix) :].partition("/")
    name, _, attempt = rest.rpartition("/")
    if not uid or not name or not attempt.isdigit():
        return None
    return runtime.ContainerId(uid, name, int(attempt))


class NodeServer:
    """The endpoint of one node. ``read`` is the log reader (:func:`logs.read`; tests give
    another). The node's name and sampling interval are given, or else read from ``pods``
    when it is the agent (:class:`Described`)."""

    def __init__(
        self,
        node_runtime: runtime.Runtime,
        pods: Pods,
        *,
        token: str,
        read: LogReader = logs.read,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        node_name: str = "",
        stats_interval: float | None = None,
    ) -> None:
        self.runtime = node_runtime
        self.pods = pods
        self.token = token
        self.read = read
        self.clock = clock
        described = pods if isinstance(pods, Described) else None
        self.node_name = node_name or (described.name if described else "")
        if stats_interval is None:
            stats_interval = (
                described.settings.stats_interval if described else settings.DEFAULT_STATS_INTERVAL
            )
        self.stats = stats.Sampler(node_runtime, interval=stats_interval, clock=clock)
        self._runner: web.AppRunner | None = None
        if not token:
            log.debug("the node endpoint has no token: only client certificates are accepted")

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._authenticate])
        app.router.add_get(kubeletapi.LOG_PATH, self._logs)
        app.router.add_get(kubeletapi.EXEC_PATH, self._exec)
        app.router.add_post(kubeletapi.EXEC_PATH, self._exec)  # the kubelet takes either
        app.router.add_get(kubeletapi.STATS_PATH, self._summary)
        app.router.add_post(kubeletapi.PORT_FORWARD_PATH, self._port_forward)
        app.router.add_get(kubeletapi.PORT_FORWARD_PATH, self._port_forward)
        app.cleanup_ctx.append(self._sampling)
        return app

    async def _sampling(self, app: web.Application) -> AsyncIterator[None]:
        """The sampler runs while the server does: started with it, cancelled (and waited
        for) when it closes."""
        task = asyncio.create_task(self.stats.run(), name="node stats")
        try:
            yield
        finally:
            task.cancel()
            await asyncio.wait({task})

    async def start(self, host: str, port: int, context: ssl.SSLContext | None) -> int:
        """Serve on ``host:port`` (0: a free port); returns the port."""
        self._runner = web.AppRunner(self.app(), handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=context)
        await site.start()
        return int(self._runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def caller(self, request: web.Request) -> str | None:
        """Who is asking, or None: the subject of a client certificate the TLS handshake
        verified against the client CA (the kubelet's x509 authenticator; kube-apiserver shows
        its ``--kubelet-client-certificate``), else the holder of the bearer token."""
        transport = request.transport
        peer = transport.get_extra_info("peercert") if transport is not None else None
        if peer:  # only a verified certificate is decoded (the context must ask for one)
            subject = {k: v for rdn in peer.get("subject") or () for k, v in rdn}
            return f"x509:{subject.get('commonName', '')}"
        # surrogateescape: a header of bytes that are not UTF-8 is a wrong token, not a 500
        given = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
        expected = f"Bearer {self.token}"
        if self.token and hmac.compare_digest(given, expected.encode()):
            return "token"
        return None

    @web.middleware
    async def _authenticate(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        # Authorization is the kubelet's AlwaysAllow: whoever is authenticated may ask.
        if self.caller(request) is None:
            return web.Response(status=401, text="Unauthorized", content_type="text/plain")
        try:
            return await handler(request)
        except Refused as exc:
            return web.Response(status=exc.code, text=exc.message, content_type="text/plain")

    # -- what a request names -----------------------------------------------------------------

    def _pod(self, request: web.Request) -> tuple[Mapping[str, Any], str]:
        namespace = request.match_info["namespace"]
        name = request.match_info["pod"]
        container = request.match_info["container"]
        pod = self.pods.pod_by_name(namespace, name)
        if pod is None:
            raise Refused(404, f'pod "{name}" does not exist')
        if container not in kubeletapi.container_names(pod):
            raise Refused(404, f'container "{container}" not found in pod "{name}"')
        return pod, container

    # -- logs ---------------------------------------------------------------------------------

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        pod, container = self._pod(request)
        name = request.match_info["pod"]
        try:
            options = podoptions.log_options(request.query, name)
        except errors.ApiError as exc:
            raise Refused(exc.code if exc.code in (400, 422) else 400, exc.message) from exc
        cid = await self._log_attempt(pod, container, previous=options.previous)
        since = options.since_time
        if options.since_seconds is not None:
            since = self.clock() - timedelta(seconds=options.since_seconds)

        def running() -> bool:
            state = self.runtime.state(cid)
            return state is not None and state.running

        response = web.StreamResponse(status=200, headers={"Content-Type": TEXT})
        response.enable_chunked_encoding()
        await response.prepare(request)
        chunks = self.read(
            [self.runtime.log_path(cid)],
            follow=options.follow,
            timestamps=options.timestamps,
            tail_lines=options.tail_lines,
            since=since,
            limit_bytes=options.limit_bytes,
            running=running,
        )
        try:
            async with contextlib.aclosing(chunks) as stream:
                async for chunk in stream:
                    await response.write(chunk)
        except ConnectionError:
            log.debug("log reader of %s/%s went away", name, container)
            return response
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response

    async def _log_attempt(
        self, pod: Mapping[str, Any], container: str, *, previous: bool
    ) -> runtime.ContainerId:
        """Which attempt's log to read: the kubelet's ``validateContainerLogStatus`` over the
        pod's status, with the runtime's disk as the fallback when the status lags."""
        name = str((pod.get("metadata") or {}).get("name") or "")
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        pod_status = pod.get("status") or {}
        entry: Mapping[str, Any] | None = None
        for section in ("containerStatuses", "initContainerStatuses"):
            for s in pod_status.get(section) or []:
                if isinstance(s, Mapping) and s.get("name") == container:
                    entry = s
        states = [
            s
            for s in await asyncio.to_thread(self.runtime.containers, uid)
            if s.id.name == container
        ]
        state = (entry or {}).get("state") or {}
        last = ((entry or {}).get("lastState") or {}).get("terminated") or {}
        if previous:
            cid = _container_id(last.get("containerID"))
            if cid is None:
                raise Refused(
                    400, f'previous terminated container "{container}" in pod "{name}" not found'
                )
            return cid
        for key in ("running", "terminated"):
            if key in state:
                cid = _container_id(state[key].get("containerID")) or _container_id(
                    (entry or {}).get("containerID")
                )
                if cid is not None:
                    return cid
        cid = _container_id(last.get("containerID"))
        if cid is not None:
            return cid
        if states:  # the status has not caught up with a container that ran
            return states[-1].id
        reason = ((state.get("waiting") or {}).get("reason")) if state else None
        if reason:
            raise Refused(
                400, f'container "{container}" in pod "{name}" is waiting to start: {reason}'
            )
        raise Refused(
            400, f'container "{container}" in pod "{name}" is waiting to start - no logs yet'
        )

    # -- stats --------------------------------------------------------------------------------

    async def _summary(self, request: web.Request) -> web.StreamResponse:
        snapshot = await self.stats.current()
        body = stats.summary(self.node_name, self.stats.started, snapshot)
        return web.json_response(body)

    # -- port-forward -------------------------------------------------------------------------

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        """``/portForward/{namespace}/{pod}`` over SPDY/3.1 or WebSocket (see
        :mod:`.portforward`); an unknown pod is a plain-text 404 before any upgrade."""
        name = request.match_info["pod"]
        pod = self.pods.pod_by_name(request.match_info["namespace"], name)
        if pod is None:
            raise Refused(404, f'pod "{name}" does not exist')
        dial = portforward.dialer(str((pod.get("metadata") or {}).get("uid") or name))
        if spdy.requested(request.headers):
            return await self._port_forward_spdy(request, dial)
        ws, _ = _websocket(request, portforward.WEBSOCKET_PROTOCOLS)
        try:
            ports = portforward.websocket_ports(request.query)
        except ValueError as exc:
            raise Refused(400, str(exc)) from exc
        await ws.prepare(request)
        await portforward.serve_websocket(ws, ports, dial)
        return ws

    async def _port_forward_spdy(
        self, request: web.Request, dial: portforward.Dial
    ) -> web.StreamResponse:
        async with _spdy_upgrade(request, (portforward.PROTOCOL,)) as (response, session):
            await portforward.serve_spdy(session, dial)
        return response

    # -- exec ---------------------------------------------------------------------------------

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        if spdy.requested(request.headers):
            return await self._exec_spdy(request)
        ws, protocol = _websocket(request, channels.SUBPROTOCOLS)
        await ws.prepare(request)
        options = podoptions.node_exec_options(request.query)
        try:
            pod, container = self._pod(request)
            uid = str((pod.get("metadata") or {}).get("uid") or "")
            if not options.command:
                raise runtime.StartError(runtime.CONTAINER_CANNOT_RUN, "no command to run")
            process = await self.runtime.exec(
                uid, container, options.command, stdin=options.stdin, tty=options.tty
            )
        except (Refused, runtime.StartError) as exc:
            code = exc.code if isinstance(exc, Refused) else 500
            error = errors.ApiError(
                code, "NotFound" if code == 404 else "InternalError", exc.message
            )
            with contextlib.suppress(ConnectionError):
                await ws.send_bytes(channels.status_message(error))
            await ws.close()
            return ws
        await _session(ws, process, options, v5=protocol == channels.SUBPROTOCOLS[0])
        return ws

    async def _exec_spdy(self, request: web.Request) -> web.StreamResponse:
        """Exec over SPDY/3.1, as the kubelet serves it (``remotecommand.ServeExec``): the
        pod is looked up before the upgrade (404 in plain text, as the kubelet's); after it,
        the client opens one stream per channel, and the command's end is a ``metav1.Status``
        on the error stream, then the connection closes."""
        pod, container = self._pod(request)
        options = podoptions.node_exec_options(request.query)
        async with _spdy_upgrade(request, SPDY_PROTOCOLS) as (response, session):
            streams = await _expected_streams(session, options)
            if streams is None:
                return response
            uid = str((pod.get("metadata") or {}).get("uid") or "")
            try:
                if not options.command:
                    raise runtime.StartError(runtime.CONTAINER_CANNOT_RUN, "no command to run")
                process = await self.runtime.exec(
                    uid, container, options.command, stdin=options.stdin, tty=options.tty
                )
            except runtime.StartError as exc:
                error = errors.ApiError(500, "InternalError", exc.message)
                await _end_spdy(session, streams, error.body())
                return response
            await _spdy_session(session, streams, process)
        return response


def _websocket(request: web.Request, protocols: Sequence[str]) -> tuple[web.WebSocketResponse, str]:
    """The client's WebSocket, not yet prepared, and the subprotocol both sides speak; a 400
    in the kubelet's words for a request that is no upgrade or offers none of ``protocols``."""
    ws = web.WebSocketResponse(protocols=protocols, heartbeat=HEARTBEAT)
    ready = ws.can_prepare(request)
    if not ready.ok:
        raise Refused(400, "Upgrade request required")
    if ready.protocol is None:
        offered = request.headers.get("Sec-WebSocket-Protocol", "") or "none"
        raise Refused(
            400,
            f"none of the subprotocols offered ({offered}) is served; "
            f"accepted: {', '.join(protocols)}",
        )
    return ws, ready.protocol


@contextlib.asynccontextmanager
async def _spdy_upgrade(
    request: web.Request, supported: Sequence[str]
) -> AsyncIterator[tuple[web.StreamResponse, spdy.Session]]:
    """Switch the connection to SPDY/3.1 with a stream protocol both sides speak (a 403 in
    the kubelet's words when there is none), and close the session when the caller is done:
    exec and port-forward differ only in what they do with the session."""
    offered = request.headers.getall(STREAM_PROTOCOL_HEADER, [])
    protocol = spdy.negotiate(offered, supported)
    if not protocol:
        raise Refused(
            403,
            "unable to upgrade: unable to negotiate protocol: client supports "
            f"{', '.join(offered) or 'none'}, server supports {', '.join(supported)}",
        )
    response = web.StreamResponse(
        status=101,
        headers={
            "Connection": "Upgrade",
            "Upgrade": spdy.UPGRADE,
            STREAM_PROTOCOL_HEADER: protocol,
        },
    )
    response.force_close()
    session = spdy.Session()
    await response.prepare(request)
    request.protocol.set_parser(session)  # type: ignore[arg-type]  # feed_data/feed_eof
    pump = asyncio.create_task(session.pump(response.write), name="spdy writer")
    try:
        yield response, session
    finally:
        await spdy.close_quietly(session, pump)


async def _pump(
    stream: asyncio.StreamReader | None, ws: web.WebSocketResponse, channel: int, send: bool
) -> None:
    if stream is None:
        return
    while True:
        chunk = await stream.read(READ_SIZE)
        if not chunk:
            return
        if send and not ws.closed:
            with contextlib.suppress(ConnectionError):
                await ws.send_bytes(bytes([channel]) + chunk)


async def _input(ws: web.WebSocketResponse, process: asyncio.subprocess.Process, v5: bool) -> None:
    """Client messages until the client goes: stdin to the process, ``[255, 0]`` (v5) ends
    it; resize messages are accepted and ignored (there is no terminal to size)."""
    stdin = process.stdin
    async for message in ws:
        if message.type is not aiohttp.WSMsgType.BINARY or not message.data:
            if message.type is aiohttp.WSMsgType.ERROR:
                return
            continue
        data: bytes = message.data
        channel = data[0]
        if channel == channels.STDIN and stdin is not None and not stdin.is_closing():
            try:
                stdin.write(data[1:])
                await stdin.drain()
            except (ConnectionError, BrokenPipeError):
                stdin = None
        elif (
            v5
            and channel == channels.CLOSE_CHANNEL
            and data[1:2] == bytes([channels.STDIN])
            and stdin is not None
            and not stdin.is_closing()
        ):
            stdin.close()


# -- exec over SPDY ---------------------------------------------------------------------------


async def _expected_streams(
    session: spdy.Session, options: podoptions.ExecOptions
) -> dict[str, spdy.Stream] | None:
    """Accept the client's streams until those the options ask for are there (the error
    stream always; stdin, stdout, stderr as asked; resize with a tty), within
    :data:`STREAM_CREATION_TIMEOUT`; None when the client went or took too long."""
    wanted = {"error"}
    for kind, on in (
        ("stdin", options.stdin),
        ("stdout", options.stdout),
        ("stderr", options.stderr and not options.tty),  # a tty merges stderr into stdout
        ("resize", options.tty),
    ):
        if on:
            wanted.add(kind)
    streams: dict[str, spdy.Stream] = {}
    try:
        async with _aio.timeout(STREAM_CREATION_TIMEOUT):
            while not wanted <= set(streams):
                stream = await session.accept()
                if stream is None:
                    return None
                session.reply(stream)
                streams[stream.kind] = stream
    except _aio.TIMEOUT_ERRORS:
        log.info("exec: the client opened %s of streams %s in time", sorted(streams), wanted)
        return None
    return streams


async def _spdy_output(stream: asyncio.StreamReader | None, out: spdy.Stream | None) -> None:
    if stream is None:
        return
    while True:
        chunk = await stream.read(READ_SIZE)
        if not chunk:
            break
        if out is not None:
            await out.write(chunk)
    if out is not None:
        await out.close()


async def _spdy_input(stdin: spdy.Stream | None, process: asyncio.subprocess.Process) -> None:
    """The client's stdin to the process; its end closes the process's stdin."""
    sink = process.stdin
    if stdin is None or sink is None:
        return
    while True:
        data = await stdin.read()
        if not data:
            break
        try:
            sink.write(data)
            await sink.drain()
        except (ConnectionError, BrokenPipeError):
            return
    if not sink.is_closing():
        sink.close()


async def _drain(stream: spdy.Stream | None) -> None:
    """Read and drop what the client sends on a stream (resize: there is no terminal)."""
    while stream is not None and await stream.read():
        pass


async def _end_spdy(
    session: spdy.Session, streams: Mapping[str, spdy.Stream], status: bytes
) -> None:
    """The Status on the error stream, every stream of this side ended, then GOAWAY."""
    error = streams["error"]
    await error.write(status)
    for stream in streams.values():
        await stream.close()
    session.goaway()


async def _spdy_session(
    session: spdy.Session,
    streams: Mapping[str, spdy.Stream],
    process: asyncio.subprocess.Process,
) -> None:
    """Relay over SPDY: output on the client's streams, its stdin in, resize read and
    dropped, the Status on the error stream at the end."""

    async def finish(status: bytes) -> None:
        await _end_spdy(session, streams, status)

    await _relay(
        process,
        outputs=(
            _spdy_output(process.stdout, streams.get("stdout")),
            _spdy_output(process.stderr, streams.get("stderr")),
        ),
        inputs=(_spdy_input(streams.get("stdin"), process), _drain(streams.get("resize"))),
        client_gone=session.ended.wait(),
        finish=finish,
    )


async def _relay(
    process: asyncio.subprocess.Process,
    *,
    outputs: Sequence[Awaitable[None]],
    inputs: Sequence[Awaitable[None]],
    client_gone: Awaitable[Any],
    finish: Callable[[bytes], Awaitable[None]],
) -> None:
    """One exec's life, whatever the protocol: relay until the process ends (then what is
    left of its output, within :data:`DRAIN`, and its Status through ``finish``) or the
    client goes (then the process group is killed). Every task ends with it."""
    pumps = [asyncio.ensure_future(o) for o in outputs]
    helpers = [asyncio.ensure_future(i) for i in inputs]
    gone = asyncio.ensure_future(client_gone)
    exited = asyncio.ensure_future(process.wait())
    try:
        await asyncio.wait({gone, exited}, return_when=asyncio.FIRST_COMPLETED)
        if not exited.done():  # the client went away first
            _kill_group(process)
            await process.wait()
            return
        with contextlib.suppress(*_aio.TIMEOUT_ERRORS):
            async with _aio.timeout(DRAIN):
                await asyncio.gather(*pumps)
        status = channels.exit_status(_exit_code(process.returncode))
        await finish(json.dumps(status).encode())
    finally:
        if process.returncode is None:
            _kill_group(process)
            with contextlib.suppress(ProcessLookupError):
                await process.wait()
        for task in (*pumps, *helpers, gone, exited):
            task.cancel()
        await asyncio.gather(*pumps, *helpers, gone, exited, return_exceptions=True)


def _exit_code(returncode: int | None) -> int:
    if returncode is None:
        return 1
    return 128 - returncode if returncode < 0 else returncode


def _kill_group(process: asyncio.subprocess.Process) -> None:
    if process.pid > 0:  # 0: a command the container engine runs, no process group here
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


async def _session(
    ws: web.WebSocketResponse,
    process: asyncio.subprocess.Process,
    options: podoptions.ExecOptions,
    *,
    v5: bool,
) -> None:
    """Relay over a WebSocket: output on its channels, the client's input in (its end is
    the client's going), the Status on channel 3 and a close at the end."""

    async def finish(status: bytes) -> None:
        with contextlib.suppress(ConnectionError):
            await ws.send_bytes(bytes([channels.STATUS]) + status)
            await ws.close()

    await _relay(
        process,
        outputs=(
            _pump(process.stdout, ws, channels.STDOUT, options.stdout),
            _pump(process.stderr, ws, channels.STDERR, options.stderr),
        ),
        inputs=(),
        client_gone=_input(ws, process, v5),
        finish=finish,
    )
