"""The HTTP face of the local API server: an aiohttp application speaking the Kubernetes REST
API over HTTPS, on 127.0.0.1 only.

What it owns: routing a URL to (group, version, resource, namespace, name, subresource) the way
kube-apiserver's RequestInfoFactory does; bearer-token authentication (health endpoints stay
open, as kube's defaults leave them) and so the ServiceAccount TokenRequest, which hands out
that token (:mod:`serviceaccounts` says why); request decoding with a size limit; query
options (read by :mod:`queryparams`); content negotiation (JSON, ``as=Table``, aggregated
discovery); turning every error into a ``Status`` body; streaming watches; discovery,
``/version`` and OpenAPI.

What it must not do: decide semantics. Every read and write goes to :mod:`registry`; a bug
there becomes a 500 Status for that request, never a crashed server.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import hmac
import json
import logging
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import yaml
from aiohttp import payload, web

from kubetrain.local.apiserver import (
    bodies,
    discovery,
    errors,
    metrics,
    nodeproxy,
    openapi,
    protobuf,
    queryoptions,
    queryparams,
    registry,
    resources,
    results,
    serviceaccounts,
    store,
    tables,
    watch,
)

log = logging.getLogger(__name__)

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's limit for a request body
KUBE_VERSION = "v1.32.0"
GIT_VERSION = f"{KUBE_VERSION}-kubetrain"
TABLE_CONTENT = "application/json;as=Table;v=v1;g=meta.k8s.io"
DEFAULT_WATCH_TIMEOUT = 1800.0  # kube's --min-request-timeout
WATCH_TICK = 1.0  # how often an idle watch checks that its client is still there
# Watch events already queued are written together, up to this many bytes: one TLS record
# and one send for a burst instead of one per event: 2,000 pod creates seen by 10 watchers
# cost the server 6 to 27% less CPU in paired runs.
WATCH_BATCH_BYTES = 256 * 1024
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
JSON = "application/json"


@dataclass(frozen=True)
class Target:
    """What a resource URL names (kube's RequestInfo)."""

    group: str
    version: str
    plural: str
    namespace: str | None
    name: str
    subresource: str
    watch_path: bool = False


def parse_path(parts: list[str]) -> Target | None:
    """``/api/v1/...`` or ``/apis/<g>/<v>/...`` split into a :class:`Target` (None: no match).

    ``parts`` are the path segments after ``api`` or ``apis/<group>``: version first.
    """
    if not parts:
        return None
    version, rest = parts[0], parts[1:]
    watch_path = False
    if rest and rest[0] == "watch":
        watch_path, rest = True, rest[1:]
    if not rest:
        return None
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if len(rest) > 3 or (len(rest) == 2 and not name):
        return None
    return Target("", version, plural, namespace, name, subresource, watch_path)


class ApiServer:
    """The aiohttp application over a :class:`registry.Registry`."""

    def __init__(
        self,
        reg: registry.Registry,
        *,
        token: str,
        max_body: int = MAX_BODY,
        bookmark_interval: float = 60.0,
        server_address: str = "127.0.0.1:443",
        ready: Callable[[], bool] = lambda: True,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        node_tls: ssl.SSLContext | None = None,
    ) -> None:
        self.registry = reg
        self.nodes = nodeproxy.NodeProxy(reg, token=token, ssl_context=node_tls)
        self.metrics = metrics.Metrics(reg, self.nodes, clock=clock)
        self.catalog = reg.catalog
        self.token = token
        self.max_body = max_body
        self.bookmark_interval = bookmark_interval
        self.server_address = server_address
        self.ready = ready
        self.clock = clock
        self._openapi_cache: dict[Any, bytes] = {}
        self._openapi_rows: tuple[resources.Resource, ...] = ()

    def app(self) -> web.Application:
        app = web.Application(
            client_max_size=self.max_body + 1,
            handler_args={
                "max_field_size": 65536,
                "max_line_size": 65536,
            },
        )
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_shutdown.append(self._close_nodes)  # ends log follows and exec sessions
        return app

    async def _close_nodes(self, app: web.Application) -> None:
        await self.nodes.close()

    # -- entry -----------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        try:
            response = await self._dispatch(request)
        except errors.ApiError as exc:
            response = _status_response(exc)
        except web.HTTPException:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the request fails, the server does not
            log.exception("apiserver: %s %s failed", request.method, request.path)
            response = _status_response(errors.internal(f"{type(exc).__name__}: {exc}"))
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%s %s -> %s (%.1f ms)",
                request.method,
                request.path_qs,
                response.status,
                (time.monotonic() - started) * 1000,
            )
        return response

    def _authenticated(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        # surrogateescape: a header of bytes that are not UTF-8 is a wrong token, not a 500
        given = value.strip().encode("utf-8", "surrogateescape")
        return hmac.compare_digest(given, self.token.encode())

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.rstrip("/") in HEALTH_PATHS or any(path.startswith(p + "/") for p in HEALTH_PATHS):
            return self._health(request)
        if not self._authenticated(request):
            raise errors.unauthorized()
        parts = [p for p in path.split("/") if p]
        if not parts:
            return _json({"paths": self._root_paths()})
        head = parts[0]
        if head == "version" and len(parts) == 1:
            return _json(self._version())
        if head == "openapi":
            return self._openapi(parts[1:], request)
        if head == "api":
            if len(parts) == 1:
                if discovery.wants_aggregated(request.headers.get("Accept", "")):
                    return _json(
                        discovery.aggregated(self.catalog, core=True),
                        content_type=discovery.AGGREGATED_V2,
                    )
                return _json(discovery.api_versions(self.server_address))
            if len(parts) == 2:
                doc = discovery.api_resource_list(self.catalog, "", parts[1])
                if doc is None:
                    raise errors.path_not_found()
                return _json(doc)
            target = parse_path(parts[1:])
            if target is None:
                raise errors.path_not_found()
            return await self._resource(request, target)
        if head == "apis":
            if len(parts) == 1:
                if discovery.wants_aggregated(request.headers.get("Accept", "")):
                    return _json(
                        discovery.aggregated(self.catalog, core=False),
                        content_type=discovery.AGGREGATED_V2,
                    )
                return _json(discovery.api_group_list(self.catalog))
            group = parts[1]
            if len(parts) == 2:
                doc = discovery.api_group(self.catalog, group)
                if doc is None:
                    raise errors.path_not_found()
                return _json(doc)
            if len(parts) == 3:
                doc = discovery.api_resource_list(self.catalog, group, parts[2])
                if doc is None:
                    raise errors.path_not_found()
                return _json(doc)
            target = parse_path(parts[2:])
            if target is None:
                raise errors.path_not_found()
            if group == metrics.GROUP and target.version == metrics.VERSION:
                return await self.metrics.serve(
                    request,
                    plural=target.plural,
                    namespace=target.namespace,
                    name=target.name,
                    subresource=target.subresource,
                    watch=target.watch_path,
                )
            return await self._resource(request, dataclasses.replace(target, group=group))
        raise errors.path_not_found()

    def _health(self, request: web.Request) -> web.Response:
        ok = self.ready() if request.path.startswith("/readyz") else True
        if "verbose" in request.query:
            name = request.path.strip("/").split("/")[0]
            text = f"[+]ping ok\n[+]etcd ok\n{name} check {'passed' if ok else 'failed'}\n"
        else:
            text = "ok" if ok else "not ready"
        return web.Response(
            status=200 if ok else 500, text=text, content_type="text/plain", charset="utf-8"
        )

    def _root_paths(self) -> list[str]:
        paths = [
            "/api",
            "/api/v1",
            "/apis",
            "/healthz",
            "/livez",
            "/readyz",
            "/version",
            "/openapi/v2",
            "/openapi/v3",
        ]
        for group, versions in self.catalog.group_versions():
            if group:
                paths.append(f"/apis/{group}")
                paths += [f"/apis/{group}/{v}" for v in versions]
        return sorted(paths)

    def _version(self) -> dict[str, Any]:
        import platform
        import sys

        return {
            "major": "1",
            "minor": "32",
            "gitVersion": GIT_VERSION,
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "2024-12-11T00:00:00Z",
            "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
            "compiler": "cpython",
            "platform": f"{platform.system().lower()}/{platform.machine()}",
        }

    # -- OpenAPI ----------------------------------------------------------------------------

    def _openapi_inputs(self) -> tuple[list[openapi.ResourceInfo], list[dict[str, Any]]]:
        builtin = [
            openapi.ResourceInfo(
                group=r.group,
                version=r.version,
                kind=r.kind,
                plural=r.plural,
                namespaced=r.namespaced,
                subresources=tuple(sub.name for sub in r.subresources),
                verbs=r.verbs,
            )
            for r in self.catalog.rows
            if not r.custom
        ]
        crds = [
            i.obj
            for i in self.registry.store.list("customresourcedefinitions.apiextensions.k8s.io")
        ]
        return builtin, crds

    def _cached(self, key: Any, build: Callable[[], Any]) -> bytes:
        if self._openapi_rows is not self.catalog.rows:
            self._openapi_cache.clear()
            self._openapi_rows = self.catalog.rows
        if key not in self._openapi_cache:
            doc = build()
            if doc is None:
                raise errors.path_not_found()
            self._openapi_cache[key] = _encode(doc)
        return self._openapi_cache[key]

    def _openapi(self, parts: list[str], request: web.Request) -> web.Response:
        """``/openapi/v2`` (JSON only: kubectl asks for protobuf there, and gets 406, as the
        documents of :mod:`openapi` explain) and ``/openapi/v3[/<gv path>]``."""
        if parts == ["v2"]:
            accept = request.headers.get("Accept", "")
            if accept and not any(
                part.split(";")[0].strip() in ("application/json", "*/*", "application/*")
                for part in accept.split(",")
            ):
                raise errors.not_acceptable(["application/json"])
            body = self._cached("v2", lambda: openapi.v2_document(*self._openapi_inputs()))
            return _raw(body)
        if parts == ["v3"]:
            body = self._cached("v3", lambda: openapi.v3_index(*self._openapi_inputs()))
            return _raw(body)
        if len(parts) >= 3 and parts[0] == "v3":
            if parts[1] == "api" and len(parts) == 3:
                group, version = "", parts[2]
            elif parts[1] == "apis" and len(parts) == 4:
                group, version = parts[2], parts[3]
            else:
                raise errors.path_not_found()
            body = self._cached(
                ("v3", group, version),
                lambda: openapi.v3_document(group, version, *self._openapi_inputs()),
            )
            etag = '"' + hashlib.sha512(body).hexdigest()[:32].upper() + '"'
            if request.headers.get("If-None-Match") == etag:
                return web.Response(status=304, headers={"ETag": etag})
            response = _raw(body)
            response.headers["ETag"] = etag
            return response
        raise errors.path_not_found()

    # -- resources --------------------------------------------------------------------------

    async def _resource(self, request: web.Request, target: Target) -> web.StreamResponse:
        r = self.catalog.find(target.group, target.version, target.plural)
        if r is None:
            raise errors.path_not_found()
        if target.namespace is not None and not r.namespaced:
            raise errors.path_not_found()
        if target.namespace is not None and nodeproxy.serves(r, target.subresource):
            return await self.nodes.serve(
                request, target.namespace, target.name, target.subresource
            )
        if target.subresource and r.subresource(target.subresource) is None:
            raise errors.path_not_found()
        query = request.query
        method = request.method
        namespace = target.namespace if r.namespaced else None
        is_watch = target.watch_path or queryparams.flag(query.get("watch"))
        reg = self.registry
        verb = _verb(method, target, is_watch)
        opts = queryparams.write_options(request, verb)
        allowed = (
            r.subresource(target.subresource).verbs if target.subresource else r.verbs  # type: ignore[union-attr]
        )
        if verb not in allowed:
            raise errors.method_not_allowed(r.group, r.plural, verb)
        if verb == "watch":
            return await self._watch(request, r, namespace, target)
        if verb == "list":
            result = await reg.list(r, namespace, queryparams.list_options(query))
            return self._respond(request, r, result, opts, listing=True)
        if verb == "get":
            result = await reg.get(r, namespace, target.name, target.subresource)
            return self._respond(request, r, result, opts)
        if verb == "create":
            body = await self._read_body(request)
            if r.key == "serviceaccounts" and target.subresource == "token":
                # the server answers it: the token is the one it authenticates with
                issued = serviceaccounts.request_token(
                    reg, namespace or "", target.name, body, token=self.token, now=self.clock()
                )
                result = results.Result(201, issued)
            elif target.subresource:
                result = await reg.create_subresource(
                    r, namespace, target.name, target.subresource, body, opts
                )
            else:
                result = await reg.create(r, namespace, body, opts)
            return self._respond(request, r, result, opts)
        if verb == "update":
            body = await self._read_body(request)
            result = await reg.update(r, namespace, target.name, body, opts, target.subresource)
            return self._respond(request, r, result, opts)
        if verb == "patch":
            raw = await self._read_raw(request)
            patch_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            result = await reg.patch(
                r, namespace, target.name, patch_type, raw, opts, target.subresource
            )
            return self._respond(request, r, result, opts)
        if verb == "delete":
            options = await self._delete_options(request)
            result = await reg.delete(r, namespace, target.name, options, opts)
            return self._respond(request, r, result, opts)
        if verb == "deletecollection":
            options = await self._delete_options(request)
            result = await reg.delete_collection(
                r, namespace, queryparams.list_options(query), options, opts
            )
            return self._respond(request, r, result, opts)
        raise errors.method_not_allowed(r.group, r.plural, verb)

    def _respond(
        self,
        request: web.Request,
        r: resources.Resource,
        result: results.Result,
        opts: queryoptions.Options,
        *,
        listing: bool = False,
    ) -> web.Response:
        accept = request.headers.get("Accept", "")
        # ``result.obj`` decodes a result kept encoded: only a Table needs it
        if _wants_table(accept) and (
            listing or result.obj.get("kind") not in ("Status", "Scale", "TokenRequest")
        ):
            objects = result.obj.get("items", []) if listing else [result.obj]
            list_meta = result.obj.get("metadata") if listing else None
            body = self._table(
                r, objects, request.query.get("includeObject", "Metadata"), list_meta=list_meta
            )
            response = _json(body, status=result.code)
        else:
            _check_acceptable(accept)
            if isinstance(result.raw, results.ListBody):
                response = _streamed(result.raw, status=result.code)
            else:
                response = _raw(result.body(), status=result.code)
        for warning in opts.warnings:
            response.headers.add("Warning", _warning(warning))
        return response

    def _table(
        self,
        r: resources.Resource,
        objects: list[dict[str, Any]],
        include: str,
        *,
        list_meta: dict[str, Any] | None = None,
        no_headers: bool = False,
    ) -> dict[str, Any]:
        columns = None
        if r.custom:
            version = r.extra.get("version") or {}
            columns = list(version.get("additionalPrinterColumns") or [])
        if include not in ("None", "Metadata", "Object"):
            raise errors.bad_request(
                f'includeObject: Unsupported value: "{include}": supported values: "None", '
                '"Metadata", "Object"'
            )
        return tables.table(
            r.kind_key,
            objects,
            crd_columns=columns,
            include_object=include,
            now=self.clock(),
            list_meta=list_meta,
            no_headers=no_headers,
        )

    async def _read_raw(self, request: web.Request) -> bytes:
        length = request.content_length
        if length is not None and length > self.max_body:
            raise errors.too_large(self.max_body)
        chunks = []
        size = 0
        while True:
            chunk = await request.content.read(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > self.max_body:
                raise errors.too_large(self.max_body)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _read_body(self, request: web.Request) -> Any:
        raw = await self._read_raw(request)
        content_type = request.headers.get("Content-Type", JSON).split(";")[0].strip().lower()
        return decode_body(raw, content_type)

    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        raw = await self._read_raw(request)
        options: dict[str, Any] = {}
        if raw.strip():
            body = decode_body(raw, JSON)
            if body is None:
                body = {}  # null: no options, as kube's decoder reads it
            if not isinstance(body, dict):
                raise errors.bad_request("the body of a delete must be a DeleteOptions object")
            options.update(body)
        query = request.query
        if "gracePeriodSeconds" in query:
            options["gracePeriodSeconds"] = queryparams.int_param(query, "gracePeriodSeconds")
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        if "orphanDependents" in query:
            options["orphanDependents"] = queryparams.flag(query["orphanDependents"])
        grace = options.get("gracePeriodSeconds")
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
            raise errors.bad_request("gracePeriodSeconds must be an integer")
        return options

    # -- watch ------------------------------------------------------------------------------

    async def _watch(
        self,
        request: web.Request,
        r: resources.Resource,
        namespace: str | None,
        target: Target,
    ) -> web.StreamResponse:
        query = request.query
        opts = queryoptions.WatchOptions(
            label_selector=query.get("labelSelector", ""),
            field_selector=query.get("fieldSelector", ""),
            resource_version=query.get("resourceVersion", ""),
            allow_bookmarks=queryparams.flag(query.get("allowWatchBookmarks")),
            send_initial_events=(
                queryparams.flag(query["sendInitialEvents"])
                if "sendInitialEvents" in query
                else None
            ),
        )
        if target.name:
            name_selector = f"metadata.name={target.name}"
            opts.field_selector = (
                f"{opts.field_selector},{name_selector}" if opts.field_selector else name_selector
            )
        timeout = DEFAULT_WATCH_TIMEOUT
        if "timeoutSeconds" in query:
            timeout = float(queryparams.int_param(query, "timeoutSeconds"))
        table = _wants_table(request.headers.get("Accept", ""))
        include = query.get("includeObject", "Metadata")
        response = web.StreamResponse(status=200, headers={"Content-Type": JSON})
        try:
            watcher = self.registry.watch(r, namespace, opts)
        except errors.ApiError as exc:
            if exc.code != 410:
                raise
            response.enable_chunked_encoding()
            await response.prepare(request)
            await response.write(_watch_line("ERROR", exc.body()))
            await response.write_eof()
            return response
        response.enable_chunked_encoding()
        await response.prepare(request)
        first_table = True
        batch: list[bytes] = []
        size = 0
        try:
            async for change in watch.stream(
                watcher,
                timeout=timeout,
                bookmarks=opts.allow_bookmarks,
                bookmark_interval=self.bookmark_interval,
                tick=WATCH_TICK,
            ):
                if change is None:  # idle: stop if the client has gone
                    if request.transport is None or request.transport.is_closing():
                        break
                    continue
                if isinstance(change, watch.Bookmark):
                    line = _watch_line("BOOKMARK", store.encode(_bookmark(r, change)))
                elif table:
                    shown = self.registry.present(r, change.item).obj
                    doc = self._table(r, [shown], include, no_headers=not first_table)
                    first_table = False
                    line = _watch_line(change.type, store.encode(doc))
                else:
                    line = _watch_line(change.type, self.registry.present(r, change.item).body())
                batch.append(line)
                size += len(line)
                # more is queued already: it goes out in the same write
                if watcher.pending() and size < WATCH_BATCH_BYTES:
                    continue
                await response.write(b"".join(batch))
                batch.clear()
                size = 0
            if watcher.overflowed:
                gone = errors.gone("the watch fell too far behind; resume from the last version")
                batch.append(_watch_line("ERROR", gone.body()))
            if batch:
                await response.write(b"".join(batch))
        except (ConnectionResetError, ConnectionError):
            return response
        finally:
            watcher.close()
        with contextlib.suppress(ConnectionResetError, ConnectionError):
            await response.write_eof()
        return response


def _verb(method: str, target: Target, is_watch: bool) -> str:
    named = bool(target.name)
    if method in ("GET", "HEAD"):
        if is_watch:
            return "watch"
        return "get" if named else "list"
    if method == "POST":
        return "create" if not named or target.subresource else "create-named"
    if method == "PUT":
        return "update" if named else "update-collection"
    if method == "PATCH":
        return "patch" if named else "patch-collection"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return method.lower()


def _bookmark(r: resources.Resource, bookmark: watch.Bookmark) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(bookmark.rv), "creationTimestamp": None}
    if bookmark.initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": r.kind, "apiVersion": r.api_version, "metadata": meta}


def _watch_line(event_type: str, raw: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + raw + b"}\n"


def _encode(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _json(doc: Any, *, status: int = 200, content_type: str = JSON) -> web.Response:
    response = web.Response(status=status, body=_encode(doc))
    response.headers["Content-Type"] = content_type
    return response


def _raw(body: bytes, *, status: int = 200) -> web.Response:
    response = web.Response(status=status, body=body)
    response.headers["Content-Type"] = JSON
    return response


def _streamed(body: results.ListBody, *, status: int = 200) -> web.Response:
    """A list sent in chunks as it is written out (chunked transfer encoding), each chunk
    written once the connection has taken the one before: see :class:`results.ListBody`."""

    async def chunks() -> AsyncIterator[bytes]:
        for chunk in body.chunks():
            yield chunk

    response = web.Response(status=status, body=payload.AsyncIterablePayload(chunks()))
    response.headers["Content-Type"] = JSON
    return response


def _status_response(exc: errors.ApiError) -> web.Response:
    return _raw(exc.body(), status=exc.code)


def _warning(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    # A control character (a field named "\x1f" in an unknown-field warning) would make the
    # header invalid, and the whole response with it: written as Go's %q writes it.
    escaped = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", escaped)
    return f'299 - "{escaped}"'


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _wants_table(accept: str) -> bool:
    return any(
        "as=Table" in part.replace(" ", "") and "g=meta.k8s.io" in part.replace(" ", "")
        for part in accept.split(",")
    )


def _check_acceptable(accept: str) -> None:
    if not accept:
        return
    for part in accept.split(","):
        media = part.split(";")[0].strip().lower()
        params = part.replace(" ", "")
        known = media in ("application/json", "*/*", "application/*", "application/yaml")
        if known and ("as=" not in params or "as=Table" in params):
            return
    raise errors.not_acceptable(["application/json", "application/yaml"])


def decode_body(raw: bytes, content_type: str) -> Any:
    """A request body as data: JSON, or YAML when the client says so."""
    if not raw.strip():
        raise errors.bad_request("the request body is empty; an object was expected")
    if content_type == protobuf.CONTENT_TYPE:
        try:
            return protobuf.decode_body(raw)
        except protobuf.ProtobufError as exc:
            raise errors.unsupported_media_type(
                content_type, ["application/json", "application/yaml"]
            ) from exc
    try:
        if content_type in ("application/yaml", "application/x-yaml", "text/yaml"):
            return yaml.safe_load(raw.decode("utf-8"))
        return json.loads(raw, parse_constant=_reject_constant)
    except RecursionError as exc:  # far beyond the registry's depth limit
        raise bodies.too_deep() from exc
    except (ValueError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"the request body could not be decoded: {exc}") from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON number {name}")


async def serve(
    api: ApiServer, host: str, port: int, context: ssl.SSLContext | None
) -> tuple[web.AppRunner, int]:
    """Start listening; returns the runner (to clean up) and the bound port."""
    runner = web.AppRunner(api.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=context, backlog=1024)
    await site.start()
    server = site._server
    bound = port
    if server is not None and getattr(server, "sockets", None):
        bound = server.sockets[0].getsockname()[1]
    return runner, bound
