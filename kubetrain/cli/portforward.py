"""``kubetrain port-forward NAME [LOCAL:]PORT ...``: a job's port on this machine.

Opens a local port for each ``[LOCAL:]PORT`` and forwards every connection to it to ``PORT``
of the job's first replica (master, chief, launcher, node-0: the framework's order) or of
``--replica``, the way ``kubectl port-forward`` does: through the API server's
``pods/portforward``, so it works the same on the local control plane and on a cluster, and
never guesses which host port a pod listens on. ``PORT`` is a number or the name of a port the
pod's containers declare (``tensorboard``); ``LOCAL`` defaults to the same number, ``:PORT``
lets the system pick one. Each connection is one WebSocket (the kubelet's port-forward
channels, ``v4.channel.k8s.io``): channel 0 carries the bytes, channel 1 the node's error, and
each begins with the port as two little-endian bytes.

Owns: the command line, choosing the pod and port, and the local listener. Must not: know how
the API server or the node reach the pod.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import aiohttp

from kubetrain import kube
from kubetrain.cli import errors, jobkinds, jobs, logstream, replicas, target

PROTOCOL: Final = "v4.channel.k8s.io"
DATA, ERROR = 0, 1
PORT_PREFIX: Final = 2  # bytes of port number that begin each channel
READ_SIZE: Final = 32 * 1024


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "port-forward",
        help="forward local ports to a port of a job's pod (TensorBoard, a notebook, ...)",
        description="Listen on local ports and forward each connection to a port of the "
        "job's first replica (master, chief, launcher or node-0), or of --replica, through "
        "the API server as `kubectl port-forward` does. Runs until interrupted (Ctrl-C).",
        epilog="Example: kubetrain port-forward mnist 6006 (TensorBoard on "
        "http://127.0.0.1:6006); kubetrain port-forward mnist 16006:6006; kubetrain "
        "port-forward mnist :tensorboard (a free local port, printed).",
    )
    parser.add_argument("name", metavar="NAME", help="the job: NAME or KIND/NAME")
    parser.add_argument(
        "ports",
        nargs="+",
        metavar="[LOCAL:]PORT",
        help="the pod's port (a number, or the name of a containerPort), and the local port "
        "(default: the same number; empty: any free port)",
    )
    parser.add_argument(
        "-r",
        "--replica",
        metavar="REPLICA",
        help="the replica (worker-1) or type (worker, its first running pod); default: the "
        "job's first replica",
    )
    parser.add_argument(
        "--address",
        default="127.0.0.1",
        help="the local address to listen on (default: 127.0.0.1)",
    )
    target.add_arguments(parser)
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class PortSpec:
    """One ``[LOCAL:]PORT``: ``local`` None means the same number as the pod's port, 0 any."""

    local: int | None
    remote: str

    @classmethod
    def parse(cls, text: str) -> PortSpec:
        local_text, sep, remote = text.rpartition(":")
        if not remote:
            raise errors.UserError(f"{text}: no port to forward to; accepted: [LOCAL:]PORT")
        local: int | None = None
        if sep:
            local = _port(local_text, text) if local_text else 0
        if remote.isdigit():
            _port(remote, text)
        return cls(local, remote)


def _port(text: str, whole: str) -> int:
    if not text.isdigit() or not 0 < int(text) <= 65535:
        raise errors.UserError(f"{whole}: {text!r} is not a port; accepted: 1-65535")
    return int(text)


def container_port(pod: Mapping[str, Any], remote: str) -> int:
    """The pod's port for ``remote``: the number, or the containerPort of that name."""
    if remote.isdigit():
        return int(remote)
    declared = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == remote:
                return int(p["containerPort"])
            declared.append(f"{p.get('name') or '-'}={p.get('containerPort')}")
    raise errors.UserError(
        f"pod {jobs.name_of(pod)} declares no port named {remote!r}; accepted: a number or one "
        f"of {', '.join(declared) or 'no named ports'}"
    )


def choose_pod(
    job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], wanted: str | None
) -> Mapping[str, Any]:
    """The first running pod among the replicas ``wanted`` selects (an id or a type), or of
    the job's first replica when none is wanted."""
    selected = [
        r for r in replicas.of_job(job, pods) if logstream.selects(r, [wanted] if wanted else [])
    ]
    name = jobs.ref_of(job)
    if not selected:
        raise errors.UserError(f"{name} has no replica {wanted!r}")
    if not wanted:  # the first replica itself (its pods: a replacement may be starting)
        selected = [r for r in selected if r.id == selected[0].id]
    for replica in selected:
        if replica.pod is not None and replicas.phase(replica.pod) == "Running":
            return replica.pod
    first = selected[0]
    state = replicas.phase(first.pod) if first.pod is not None else "not created yet"
    raise errors.UserError(
        f"{name}: {first.id} is {state}; port-forward needs a running pod "
        f"(`kubetrain get {name}` shows the replicas)"
    )


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _forward(args))


async def _forward(args: argparse.Namespace) -> int:
    wanted = [PortSpec.parse(text) for text in args.ports]
    ref = jobkinds.parse_ref(args.name)
    async with target.connect(args) as tgt:
        job = await jobs.find(tgt.client, ref, tgt.namespace)
        pod = choose_pod(job, await jobs.pods(tgt.client, job), args.replica)
        namespace, name = jobs.namespace_of(pod), jobs.name_of(pod)
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
        servers = []
        try:
            for mapping in wanted:
                remote = container_port(pod, mapping.remote)
                local = remote if mapping.local is None else mapping.local
                forward = Forward(tgt.client, f"{path}/portforward", remote)
                try:
                    server = await asyncio.start_server(forward.handle, args.address, local)
                except OSError as exc:
                    raise errors.UserError(
                        f"cannot listen on {args.address}:{local}: {exc.strerror or exc}; "
                        f"accepted: a free port, or :{mapping.remote} for any"
                    ) from exc
                servers.append(server)
                bound = server.sockets[0].getsockname()[1]
                print(f"Forwarding from {args.address}:{bound} -> {remote}", flush=True)
            print(f"to pod {namespace}/{name}; Ctrl-C stops", file=sys.stderr, flush=True)
            await asyncio.gather(*(s.serve_forever() for s in servers))
        finally:
            for server in servers:
                server.close()
    return 0


class Forward:
    """Forwards each local connection to one port of one pod, over its own WebSocket."""

    def __init__(self, client: kube.Client, path: str, port: int) -> None:
        self.client = client
        self.path = path
        self.port = port

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            ws = await self.client.websocket(
                self.path, query={"ports": self.port}, protocols=(PROTOCOL,), timeout=30
            )
        except kube.ApiError as exc:
            print(f"kubetrain: port {self.port}: {errors.describe(exc)}", file=sys.stderr)
            writer.close()
            return
        try:
            await _relay(ws, reader, writer, self.port)
        finally:
            await ws.close()
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()


async def _relay(
    ws: aiohttp.ClientWebSocketResponse,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    port: int,
) -> None:
    """Until either side ends: local bytes out on channel 0; the pod's bytes in from channel
    0 (after its port prefix); an error on channel 1 printed, ending the connection."""

    async def outward() -> None:
        while chunk := await reader.read(READ_SIZE):
            await ws.send_bytes(bytes([DATA]) + chunk)

    async def inward() -> None:
        skip = {DATA: PORT_PREFIX, ERROR: PORT_PREFIX}
        async for message in ws:
            if message.type is not aiohttp.WSMsgType.BINARY or not message.data:
                continue
            channel, payload = message.data[0], message.data[1:]
            if skip.get(channel):
                cut = min(skip[channel], len(payload))
                skip[channel] -= cut
                payload = payload[cut:]
            if not payload:
                continue
            if channel == DATA:
                writer.write(payload)
                await writer.drain()
            elif channel == ERROR:
                text = payload.decode("utf-8", errors="replace")
                print(f"kubetrain: port {port}: {text.strip()}", file=sys.stderr, flush=True)
                return

    tasks = [asyncio.ensure_future(outward()), asyncio.ensure_future(inward())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
