"""The dashboard's web server: the page, its static assets, its live streams and its actions.

Routes (every one behind :func:`kubetrain.dashboard.access.guard`)::

    GET  /                               the page (a single page; its views are #/ addresses)
    GET  /static/...                     the built script and styles (kubetrain/dashboard/static)
    GET  /api/stream/jobs                server-sent events: every job's row, then changes
    GET  /api/stream/job?namespace=&kind=&name=      one job's details, on every change
    GET  /api/stream/nodes               every node's capacity, requests and usage
    GET  /api/stream/logs?namespace=&kind=&name=     the job's merged log lines as written
    GET  /api/logs?namespace=&kind=&name=[&previous=1][&download=1]   whole logs
    POST /api/jobs/{namespace}/{kind}/{name}/{delete|suspend|resume}

A stream opens with a ``snapshot`` of what its view shows, then sends what changed, as the
hub tells it; a comment line every :data:`HEARTBEAT` seconds keeps proxies and the browser
from taking a quiet stream for a dead one. The browser's ``EventSource`` reconnects by itself
(after :data:`RETRY_MS`), and a reconnected stream starts again with a snapshot.

Owns: the routes and the stream protocol. Must not: compute what a view shows
(:mod:`kubetrain.dashboard.views`) or watch the API itself (:mod:`kubetrain.dashboard.hub`).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, cast

from aiohttp import web

from kubetrain import _aio, kube
from kubetrain.cli import errors, jobkinds, jobs, jobstate, suspend
from kubetrain.dashboard import access, hub, logs, recorder, views

log = logging.getLogger(__name__)

STATIC: Final = Path(__file__).parent / "static"
HEARTBEAT: Final = 15.0  # seconds between two keep-alive comments on a quiet stream
RETRY_MS: Final = 1000  # how soon a browser reconnects a broken stream
READY_TIMEOUT: Final = 30.0  # seconds a stream waits for the first lists before its snapshot
ACTIONS: Final = {"delete": "deleted", "suspend": "suspended", "resume": "resumed"}
TOKEN_MARK: Final = "{{token}}"
JOB_KINDS: Final = tuple(kind.kind for kind in jobkinds.KINDS)
JOB_SOURCES: Final = (
    *JOB_KINDS,
    hub.POD,
    hub.TRAINING_RUNTIME,
    hub.CLUSTER_TRAINING_RUNTIME,
)


class Gone(Exception):
    """The browser went away: the stream ends."""


class EventStream:
    """A ``text/event-stream`` answer: named events with JSON data, and heartbeats."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
        )

    async def open(self) -> EventStream:
        await self.response.prepare(self.request)
        await self._write(f"retry: {RETRY_MS}\n\n")
        return self

    async def send(self, event: str, data: Any) -> None:
        text = json.dumps(data, separators=(",", ":"), default=str)
        await self._write(f"event: {event}\ndata: {text}\n\n")

    async def ping(self) -> None:
        await self._write(": keep-alive\n\n")

    async def _write(self, text: str) -> None:
        try:
            await self.response.write(text.encode())
        except (ConnectionError, RuntimeError) as exc:  # RuntimeError: the transport closed
            raise Gone() from exc


async def changes(listener: hub.Listener, stream: EventStream) -> set[hub.Topic]:
    """The next topics that changed, sending heartbeats while nothing does."""
    while True:
        try:
            async with _aio.timeout(HEARTBEAT):
                return await listener.next()
        except TimeoutError:
            await stream.ping()


class Dashboard:
    """The routes, over one hub and one curves recorder."""

    def __init__(
        self, client: kube.Client, source: hub.Hub, curves: recorder.Recorder, token: str
    ) -> None:
        self.client = client
        self.hub = source
        self.curves = curves
        self.token = token

    def app(self) -> web.Application:
        app = web.Application(middlewares=[access.guard(self.token)])
        app.router.add_get("/", self.index)
        app.router.add_static("/static/", STATIC)
        app.router.add_get("/api/stream/jobs", self._streaming(self.jobs_stream))
        app.router.add_get("/api/stream/job", self._streaming(self.job_stream, of_job=True))
        app.router.add_get("/api/stream/nodes", self._streaming(self.nodes_stream))
        app.router.add_get("/api/stream/logs", self._streaming(self.logs_stream, of_job=True))
        app.router.add_get("/api/logs", self.logs_text)
        app.router.add_post("/api/jobs/{namespace}/{kind}/{name}/{action}", self.act)
        return app

    # -- the page -------------------------------------------------------------------------

    async def index(self, request: web.Request) -> web.Response:
        page = await asyncio.to_thread((STATIC / "index.html").read_text)
        page = page.replace(TOKEN_MARK, html.escape(self.token, quote=True))
        return web.Response(text=page, content_type="text/html")

    # -- streams --------------------------------------------------------------------------

    def _streaming(
        self,
        body: Callable[[web.Request, EventStream], Awaitable[None]],
        *,
        of_job: bool = False,
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handler(request: web.Request) -> web.StreamResponse:
            if of_job:
                _job_key(request.query)  # a bad address is a plain 400, not a stream
            stream = await EventStream(request).open()
            with contextlib.suppress(Gone):
                await body(request, stream)
            return stream.response

        return handler

    async def jobs_stream(self, request: web.Request, stream: EventStream) -> None:
        async with self.hub.listen() as listener:
            await self._ready(*JOB_SOURCES)
            sent: dict[str, dict[str, Any]] = {}
            for job in self.hub.jobs():
                sent[views.key_of(job)] = self._row(job)
            await stream.send("snapshot", {"rows": list(sent.values()), "notes": self._notes()})
            while True:
                changed = await changes(listener, stream)
                keys = {key for topic, key in changed if topic == hub.JOB}
                if (hub.RUNTIMES, None) in changed:
                    trainjobs = self.hub.stores[jobkinds.TRAINJOB.kind].values()
                    keys |= {hub.job_key(job) for job in trainjobs}
                upserts, removed = [], []
                for key in keys:
                    job = self.hub.job(key)
                    name = views.address(key)
                    if job is None:
                        if sent.pop(name, None) is not None:
                            removed.append(name)
                        continue
                    row = self._row(job)
                    if sent.get(name) != row:
                        sent[name] = row
                        upserts.append(row)
                if upserts or removed:
                    await stream.send("change", {"rows": upserts, "removed": removed})
                if (hub.NOTES, None) in changed:
                    await stream.send("notes", self._notes())

    async def job_stream(self, request: web.Request, stream: EventStream) -> None:
        key = _job_key(request.query)
        relevant = {
            (hub.JOB, key),
            (hub.EVENTS, key[1]),
            (hub.CURVES, (key[1], key[2])),
            (hub.USAGE, None),
            (hub.RUNTIMES, None),
            (hub.NOTES, None),
        }
        async with self.hub.listen() as listener:
            await self._ready(*JOB_SOURCES, hub.EVENT, hub.CURVES_CONFIGMAP)
            last = ""
            while True:
                detail = self._detail(key)
                text = json.dumps(detail, sort_keys=True, default=str)
                if text != last:
                    last = text
                    await stream.send("snapshot" if detail else "gone", detail or {})
                while not (relevant & await changes(listener, stream)):
                    pass

    async def nodes_stream(self, request: web.Request, stream: EventStream) -> None:
        async with self.hub.listen() as listener:
            await self._ready(hub.NODE_KIND, hub.POD)
            last = ""
            while True:
                rows = views.node_rows(self.hub.nodes(), self.hub.pods(), self.hub.usage.nodes)
                doc = {"nodes": rows, "notes": self._notes()}
                text = json.dumps(doc, sort_keys=True, default=str)
                if text != last:
                    last = text
                    await stream.send("snapshot", doc)
                while not any(
                    topic in (hub.NODE, hub.USAGE, hub.NOTES)
                    for topic, _ in await changes(listener, stream)
                ):
                    pass

    async def logs_stream(self, request: web.Request, stream: EventStream) -> None:
        key = _job_key(request.query)
        await self._ready(hub.POD)
        await stream.send("snapshot", {})
        container = request.query.get("container") or None

        async def send(batch: list[logs.Line | logs.Note]) -> bool:
            lines = [[item.replica, item.text] for item in batch if isinstance(item, logs.Line)]
            notes = [item.text for item in batch if isinstance(item, logs.Note)]
            if lines:
                await stream.send("lines", lines)
            for note in notes:
                await stream.send("note", note)
            return True

        follow = logs.Follow(self.client, self.hub, key, container=container)
        await follow.run(send)

    # -- reads and actions ----------------------------------------------------------------

    async def logs_text(self, request: web.Request) -> web.StreamResponse:
        key = _job_key(request.query)
        job = await self._job(key)
        previous = request.query.get("previous") == "1"
        wanted = [r for r in request.query.getall("replica", []) if r]
        lines, notes = await logs.text(self.client, job, previous=previous, wanted=wanted)
        if request.query.get("download") == "1":
            text = "".join(f"[{line.replica}] {line.text}\n" for line in lines)
            name = re.sub(r"[^A-Za-z0-9._-]", "_", f"{key[2]}{'-previous' if previous else ''}")
            return web.Response(
                text=text,
                content_type="text/plain",
                headers={"Content-Disposition": f'attachment; filename="{name}.log"'},
            )
        return web.json_response(
            {"lines": [[line.replica, line.text] for line in lines], "notes": notes}
        )

    async def act(self, request: web.Request) -> web.Response:
        info = request.match_info
        action = info["action"]
        if action not in ACTIONS:
            raise _problem(404, f"no action {action!r}; accepted: {', '.join(ACTIONS)}")
        key = _job_key(info)
        job = await self._job(key, live=True)
        kind = jobkinds.of(job)
        what = f"{kind.ref(key[2])} in namespace {key[1]}"
        try:
            if action == "delete":
                uid = (job.get("metadata") or {}).get("uid")
                await self.client.delete(
                    kind.resource,
                    key[2],
                    namespace=key[1],
                    propagation_policy="Background",
                    preconditions={"uid": str(uid)} if uid else None,
                )
                return web.json_response({"message": f"{what} {ACTIONS[action]}"})
            wanted = action == "suspend"
            state = jobstate.of(job)
            if wanted and state.finished:
                raise _problem(409, f"{what} has already finished; there is nothing to suspend")
            if suspend.is_suspended(job) == wanted:
                already = "suspended" if wanted else "not suspended"
                return web.json_response({"message": f"{what} was already {already}"})
            await self.client.patch(
                kind.resource, key[2], suspend.suspend_patch(kind, wanted), namespace=key[1]
            )
        except kube.ApiError as exc:
            raise _problem(exc.code or 502, f"{what}: {errors.describe(exc)}") from exc
        return web.json_response({"message": f"{what} {ACTIONS[action]}"})

    # -- helpers --------------------------------------------------------------------------

    async def _ready(self, *names: str) -> None:
        with contextlib.suppress(TimeoutError):
            await self.hub.ready(*names, timeout=READY_TIMEOUT)

    async def _job(self, key: hub.JobKey, *, live: bool = False) -> dict[str, Any]:
        """The job from the hub's cache, or read from the API server where the cache lacks it
        or ``live`` asks: an action decides on the job as it is now, as kubectl does, not as
        the last watch event the cache has had showed it (a job that has just finished is not
        suspended)."""
        job = None if live else self.hub.job(key)
        if job is None:
            job = await jobs.get(self.client, jobkinds.find(key[0]), key[1], key[2])
        if job is None:
            raise _problem(404, f"no such job {key[0]} {key[1]}/{key[2]}")
        return job

    def _row(self, job: dict[str, Any]) -> dict[str, Any]:
        runtime = self.hub.runtime_of(job)
        nodes = jobs.nodes_of_runtime(runtime) if runtime is not None else None
        return views.job_row(job, self.hub.pods_of(hub.job_key(job)), nodes)

    def _detail(self, key: hub.JobKey) -> dict[str, Any] | None:
        job = self.hub.job(key)
        if job is None:
            return None
        is_trainjob = key[0] == jobkinds.TRAINJOB.kind
        return views.job_detail(
            job,
            self.hub.pods_of(key),
            self.hub.gone_pods_of(key),
            self.hub.events_in(key[1]),
            runtime=self.hub.runtime_of(job),
            used=self.hub.usage.pods,
            usage_note=self.hub.notes.get("metrics", ""),
            points=self.curves.points(job) if is_trainjob else (),
            curves_note=self.curves.notes.get(key, ""),
        )

    def _notes(self) -> list[str]:
        return sorted(set(self.hub.notes.values()))


def _job_key(query: Any) -> hub.JobKey:
    """(kind, namespace, name) from a request's query or path; 400 when incomplete."""
    namespace, kind, name = (str(query.get(k) or "") for k in ("namespace", "kind", "name"))
    if not (namespace and kind and name):
        raise _problem(400, "name a job: namespace, kind and name")
    if kind not in JOB_KINDS:
        raise _problem(400, f"no job kind {kind!r}; accepted: {', '.join(JOB_KINDS)}")
    return kind, namespace, name


def _problem(status: int, message: str) -> web.HTTPException:
    """An error answer the page shows as it is: ``{"error": message}``."""
    classes = {
        400: web.HTTPBadRequest,
        403: web.HTTPForbidden,
        404: web.HTTPNotFound,
        409: web.HTTPConflict,
        422: web.HTTPUnprocessableEntity,
    }
    cls = classes.get(status, web.HTTPBadGateway)
    return cast(
        web.HTTPException,
        cls(text=json.dumps({"error": message}), content_type="application/json"),
    )


async def serve(
    client: kube.Client,
    *,
    address: str,
    port: int,
    token: str,
    namespace: str | None,
    fallback_namespace: str,
    on_ready: Callable[[str], None],
) -> None:
    """Serve until cancelled; ``on_ready`` gets the page's address (with its token) once the
    port is open."""
    source = hub.Hub(client, namespace=namespace, fallback_namespace=fallback_namespace)
    curves = recorder.Recorder(client, source)
    dashboard = Dashboard(client, source, curves, token)
    runner = web.AppRunner(
        dashboard.app(), access_log=None, handler_cancellation=True, shutdown_timeout=1.0
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, address, port)
        await site.start()
        bound = runner.addresses[0][:2] if runner.addresses else (address, port)
        host = f"[{bound[0]}]" if ":" in str(bound[0]) else str(bound[0])
        on_ready(f"http://{host}:{bound[1]}/?{access.TOKEN_QUERY}={token}")
        async with _aio.TaskGroup() as group:
            group.create_task(source.run(), name="dashboard: hub")
            group.create_task(curves.run(), name="dashboard: curves")
    finally:
        await runner.cleanup()
