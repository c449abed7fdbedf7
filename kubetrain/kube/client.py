"""The async Kubernetes client every kubetrain component uses, for any resource, built on
``kubernetes.aio``'s ApiClient (its configuration, authentication, TLS and connection pool)
with raw REST calls.

Owns: building requests (paths, query, content types for the four patch kinds and
server-side apply, bodies encoded to JSON once), decoding responses to plain dicts, turning
failures into :mod:`kubetrain.kube.errors`, the default timeout of every call, and a small
discovery cache.
Must not: retry on its own (callers decide; :mod:`kubetrain.kube.watch` retries watches),
cache objects, or know about any particular kind beyond what discovery says.

A watch stream is the one call without an overall time limit; its connect and header phase is
still bounded, and :mod:`kubetrain.kube.watch` adds the inactivity watchdog.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final, Literal

import aiohttp
import yarl

from kubetrain import __version__, _aio
from kubetrain.kube import config, discovery, errors, pool
from kubetrain.kube import watch as watch_
from kubetrain.kube.library import ApiClient, Configuration
from kubetrain.kube.resource import Resource

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT: Final = 30.0  # seconds for one call, connect to last byte
DISCOVERY_TTL: Final = 60.0  # seconds a discovery snapshot is reused
# Group-versions asked for at a time in a discovery. All at once, a dozen of them opened a
# dozen connections (a TLS handshake at both ends for each), which the pool closed again
# once idle: a component that rediscovers every 30 s, as the garbage collector does, opened
# and closed a dozen sockets each time.
DISCOVERY_CONCURRENCY: Final = 2
DEFAULT_FIELD_MANAGER: Final = "kubetrain"
PAGE_SIZE: Final = 500
JSON: Final = "application/json"
QUIET_DECODE_BYTES: Final = 1 << 20  # bodies this large are decoded with the collector paused

PatchType = Literal["merge", "json", "strategic", "apply"]
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]
PATCH_CONTENT_TYPES: Final[Mapping[str, str]] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


class _UseClientDefault:
    def __repr__(self) -> str:
        return "CLIENT_DEFAULT"


CLIENT_DEFAULT: Final = _UseClientDefault()
"""Use the client's timeout; pass ``None`` for no limit at all."""

Timeout = float | None | _UseClientDefault


class Client:
    """An API client for one cluster. Use it as ``async with Client(...) as client:`` (or call
    :meth:`close`), so its connection pool is closed on the loop that opened it.

    Every method returns the server's JSON as plain dicts and raises
    :class:`~kubetrain.kube.errors.ApiError` subclasses.
    """

    def __init__(
        self,
        cluster: config.ClusterConfig | Configuration,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        field_manager: str = DEFAULT_FIELD_MANAGER,
        user_agent: str | None = None,
        discovery_ttl: float = DISCOVERY_TTL,
    ) -> None:
        if isinstance(cluster, config.ClusterConfig):
            self.namespace = cluster.namespace
            configuration = cluster.configuration
        else:
            self.namespace = config.DEFAULT_NAMESPACE
            configuration = cluster
        self.host = str(configuration.host)
        self.timeout = timeout
        self.field_manager = field_manager
        _resolve_proxy_once(configuration)
        try:
            self._api = ApiClient(configuration)  # reads the CA and client certificate files
        except (ssl.SSLError, OSError) as exc:
            raise errors.ConfigError(
                f"cannot use the TLS certificates for {self.host}: {_describe(exc)}"
            ) from exc
        self._api.user_agent = user_agent or f"kubetrain/{__version__}"
        rest = self._api.rest_client  # its pool reuses the newest idle connection first

        def connector() -> aiohttp.TCPConnector:
            return pool.NewestFirstConnector(limit=rest.maxsize, ssl=rest.ssl_context)

        rest._create_connector = connector
        # What plain JSON cannot hold (a model object, a datetime) is serialized as the
        # library serializes it.
        self._encoder = json.JSONEncoder(
            separators=(",", ":"), default=self._api.sanitize_for_serialization
        )
        self._discovery_ttl = discovery_ttl
        self._discovery: discovery.Discovery | None = None
        self._discovered_at = 0.0
        self._discovery_lock = asyncio.Lock()

    @classmethod
    async def from_kubeconfig(
        cls, path: str, *, context: str | None = None, **options: Any
    ) -> Client:
        """A client for ``context`` (default: current-context) of the kubeconfig at ``path``."""
        return cls(await config.from_kubeconfig(path, context=context), **options)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._api.close()

    # -- objects -------------------------------------------------------------------------------

    async def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> dict[str, Any]:
        path = resource.path(namespace, _object_name(resource, name, "get"), subresource)
        return await self.request("GET", path, timeout=timeout)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> dict[str, Any]:
        """One page of a list (all of it when ``limit`` is None); each item gets the list's
        ``apiVersion`` and ``kind`` filled in, as client-go's unstructured lists do."""
        query = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "limit": limit,
            "continue": continue_token,
            "resourceVersion": resource_version,
        }
        doc = await self.request("GET", resource.path(namespace), query=query, timeout=timeout)
        _fill_item_kinds(doc, resource)
        return doc

    async def list_all(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = PAGE_SIZE,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> dict[str, Any]:
        """Every item, fetched in pages of ``page_size`` and merged into one list whose
        ``metadata.resourceVersion`` is the snapshot's (that of the first page). If the
        continue token expires midway (410), falls back to one unpaginated list, as
        client-go's pager does."""
        selectors = {"label_selector": label_selector, "field_selector": field_selector}
        first = await self.list(
            resource, namespace=namespace, limit=page_size, timeout=timeout, **selectors
        )
        items = list(first.get("items") or [])
        token = (first.get("metadata") or {}).get("continue")
        while token:
            try:
                page = await self.list(
                    resource,
                    namespace=namespace,
                    limit=page_size,
                    continue_token=token,
                    timeout=timeout,
                    **selectors,
                )
            except errors.Gone:
                log.info("list of %s: continue token expired; listing in one page", resource)
                return await self.list(resource, namespace=namespace, timeout=timeout, **selectors)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
        metadata = dict(first.get("metadata") or {})
        metadata.pop("continue", None)
        metadata.pop("remainingItemCount", None)
        return {**first, "metadata": metadata, "items": items}

    async def create(
        self,
        resource: Resource,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        name: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> dict[str, Any]:
        """POST to the collection (or, with ``subresource`` and ``name``, to an object's
        subresource such as ``pods/<name>/binding``)."""
        namespace = self._namespace_of(resource, body, namespace)
        path = resource.path(namespace, name, subresource)
        query = _write_query(field_manager, dry_run)
        return await self.request("POST", path, query=query, body=dict(body), timeout=timeout)

    async def replace(
        self,
        resource: Resource,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> dict[str, Any]:
        """PUT the whole object (name from its metadata); its ``metadata.resourceVersion``, if
        set, makes this a compare-and-swap that fails with Conflict when stale."""
        namespace = self._namespace_of(resource, body, namespace)
        path = resource.path(namespace, _name_of(body), subresource)
        query = _write_query(field_manager, dry_run)
        return await self.request("PUT", path, query=query, body=dict(body), timeout=timeout)

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> dict[str, Any]:
        """PATCH with a JSON merge patch (default), a JSON patch (a list of operations), a
        strategic merge patch (built-in kinds only), or an apply configuration (prefer
        :meth:`apply`)."""
        if type not in PATCH_CONTENT_TYPES:
            raise ValueError(f"patch type {type!r}; accepted: {', '.join(PATCH_CONTENT_TYPES)}")
        if type == "json" and not isinstance(patch, list):
            raise ValueError("a JSON patch is a list of operations")
        if type != "json" and not isinstance(patch, Mapping):
            raise ValueError(f"a {type} patch is an object")
        if type == "apply" and field_manager is None:
            field_manager = self.field_manager
        query = _write_query(field_manager, dry_run)
        if force is not None:
            query["force"] = force
        return await self.request(
            "PATCH",
            resource.path(namespace, _object_name(resource, name, "patch"), subresource),
            query=query,
            body=patch if isinstance(patch, list) else dict(patch),
            content_type=PATCH_CONTENT_TYPES[type],
            timeout=timeout,
        )

    async def apply(
        self,
        resource: Resource,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> dict[str, Any]:
        """Server-side apply ``body`` (the fields this manager owns) as ``field_manager``
        (default: the client's). ``force`` takes over fields other managers own."""
        body = dict(body)
        body.setdefault("apiVersion", resource.api_version)
        if resource.kind:
            body.setdefault("kind", resource.kind)
        namespace = self._namespace_of(resource, body, namespace)
        return await self.patch(
            resource,
            _name_of(body),
            body,
            namespace=namespace,
            type="apply",
            subresource=subresource,
            field_manager=field_manager or self.field_manager,
            force=force,
            dry_run=dry_run,
            timeout=timeout,
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> dict[str, Any]:
        """DELETE one object. Returns what the server returns: the object (still there with a
        deletionTimestamp while finalizers run, or as it was) or a Status.
        ``preconditions`` (``uid``, ``resourceVersion``) make the delete fail with Conflict
        when the stored object is not the one meant."""
        body = _delete_options(propagation_policy, grace_period_seconds, preconditions, dry_run)
        path = resource.path(namespace, _object_name(resource, name, "delete"))
        return await self.request("DELETE", path, body=body, timeout=timeout)

    async def delete_collection(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> None:
        """DELETE every matching object of a collection (verb ``deletecollection``). The
        answer, the list of what was deleted (thousands of Events for a namespace), is read
        but not decoded: as client-go's DeleteCollection, this returns nothing."""
        query = {"labelSelector": label_selector, "fieldSelector": field_selector}
        body = _delete_options(propagation_policy, None, None, False)
        path = resource.path(namespace)
        await self.request("DELETE", path, query=query, body=body, timeout=timeout, decoded=False)

    def watch(self, resource: Resource, **options: Any) -> watch_.Watch:
        """A long-running watch of ``resource``: see :class:`kubetrain.kube.watch.Watch`."""
        return watch_.Watch(self, resource, **options)

    # -- discovery -----------------------------------------------------------------------------

    async def discover(self, *, refresh: bool = False) -> discovery.Discovery:
        """What the server serves, cached for ``discovery_ttl`` seconds (``refresh`` forces a
        new look, e.g. after a kind was not found). A group-version that fails to answer is
        left out and named in ``failed``, as client-go's partial discovery does."""
        async with self._discovery_lock:
            now = asyncio.get_running_loop().time()
            fresh = now - self._discovered_at < self._discovery_ttl
            if self._discovery is not None and fresh and not refresh:
                return self._discovery
            core, groups = await asyncio.gather(
                self.request("GET", "/api"), self.request("GET", "/apis")
            )
            versions = discovery.group_versions(core, groups)
            paths = [f"/api/{v}" if "/" not in v else f"/apis/{v}" for v in versions.api_versions]
            limit = asyncio.Semaphore(DISCOVERY_CONCURRENCY)

            async def one(path: str) -> Any:
                async with limit:
                    return await self.request("GET", path)

            answers = await asyncio.gather(*(one(p) for p in paths), return_exceptions=True)
            lists: list[dict[str, Any]] = []
            failed: list[str] = []
            for api_version, answer in zip(versions.api_versions, answers, strict=True):
                if isinstance(answer, errors.ApiError):
                    log.warning("discovery of %s failed: %s", api_version, answer)
                    failed.append(api_version)
                elif isinstance(answer, BaseException):
                    raise answer
                else:
                    lists.append(answer)
            self._discovery = discovery.Discovery.build(versions, lists, failed)
            self._discovered_at = now
            return self._discovery

    # -- transport -----------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: Timeout = CLIENT_DEFAULT,
        decoded: bool = True,
    ) -> Any:
        """One API call to ``path`` (e.g. ``/version``, ``/api/v1/namespaces/x/finalize``);
        returns the decoded JSON body (None when empty, or when not ``decoded``: then the
        body is read and dropped as it arrives, and only an error's is kept)."""
        limit = self.timeout if isinstance(timeout, _UseClientDefault) else timeout
        try:
            async with _aio.timeout(limit):
                # this limit covers the whole call, so aiohttp needs no timers of its own
                response = await self._send(method, path, query, body, content_type, None)
                try:
                    if decoded or response.status >= 400:
                        raw = await response.read()
                    else:  # read as it comes and let go: a deletecollection's is megabytes
                        raw = b""
                        while await response.content.readany():
                            pass
                finally:
                    response.release()
        except _aio.TIMEOUT_ERRORS as exc:
            raise errors.Unavailable(f"{method} {path}: no answer within {limit}s") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise errors.Unavailable(f"{method} {path}: {_describe(exc)}") from exc
        log.debug("%s %s: %s", method, path, response.status)
        if response.status >= 400:
            raise errors.from_response(response.status, raw, response.reason or "")
        if not raw or not decoded:
            return None
        try:
            return decode(raw)
        except ValueError as exc:
            raise errors.ServerError(
                f"{method} {path}: the answer is not JSON", code=response.status
            ) from exc

    @contextlib.asynccontextmanager
    async def stream(
        self,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """A streaming GET (a watch): yields an iterator over the body's lines once the
        response headers arrived within ``timeout``; the body itself has no time limit, so
        the caller bounds each read (see :mod:`kubetrain.kube.watch`)."""
        limit = self.timeout if isinstance(timeout, _UseClientDefault) else timeout
        failure: errors.ApiError | None = None
        try:
            async with _aio.timeout(limit):
                response = await self._send("GET", path, query, None, JSON, None, connect=limit)
                if response.status >= 400:
                    try:
                        raw = await response.read()
                    finally:
                        response.release()
                    failure = errors.from_response(response.status, raw, response.reason or "")
        except _aio.TIMEOUT_ERRORS as exc:
            raise errors.Unavailable(f"GET {path}: no answer within {limit}s") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise errors.Unavailable(f"GET {path}: {_describe(exc)}") from exc
        if failure is not None:
            raise failure
        try:
            lines = _lines(response.content, path)
            try:
                yield lines
            finally:
                await lines.aclose()
        finally:
            response.close()

    async def websocket(
        self,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        protocols: tuple[str, ...] = (),
        timeout: Timeout = CLIENT_DEFAULT,
    ) -> aiohttp.ClientWebSocketResponse:
        """Open a WebSocket to ``path`` (a pod's ``exec`` or ``portforward``) offering
        ``protocols``, with the client's authentication and TLS, within ``timeout``; the
        socket then has no time limit. A refused upgrade raises the API error its status
        names (the server's Status body is not kept by the WebSocket handshake)."""
        limit = self.timeout if isinstance(timeout, _UseClientDefault) else timeout
        api = self._api
        headers = dict(api.default_headers)
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        await api.update_params_for_auth(headers, params, ["BearerToken"], path, "GET", None)
        url = self.host + path
        if params:
            url += "?" + "&".join(f"{k}={urllib.parse.quote(str(v))}" for k, v in params)
        options: dict[str, Any] = {}
        if api.configuration.tls_server_name:
            options["server_hostname"] = api.configuration.tls_server_name
        rest = api.rest_client
        if rest.proxy:
            options["proxy"] = rest.proxy
        if rest.pool_manager is None:
            rest.pool_manager = rest._create_pool_manager()
        try:
            async with _aio.timeout(limit):
                return await rest.pool_manager.ws_connect(
                    url, headers=headers, protocols=protocols, **options
                )
        except aiohttp.WSServerHandshakeError as exc:
            raise errors.from_response(exc.status, b"", exc.message) from exc
        except _aio.TIMEOUT_ERRORS as exc:
            raise errors.Unavailable(f"GET {path}: no answer within {limit}s") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise errors.Unavailable(f"GET {path}: {_describe(exc)}") from exc

    async def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        total: float | None,
        *,
        connect: float | None = None,
    ) -> aiohttp.ClientResponse:
        """Send one request through the library's connection pool, with its default headers,
        authentication (a token the configuration refreshes is read again each time), proxy
        and TLS settings; its own retries are not used (see the module docstring).

        The body is encoded here, once. The library's request path would first copy every
        dict and list of it (``sanitize_for_serialization``, meant for its model objects) and
        then encode the copy: for the plain dicts this client is given, a second walk of the
        whole body on every call, a tenth of the operator's CPU time under load.
        """
        api = self._api
        headers = {"Accept": JSON, "Content-Type": content_type, **api.default_headers}
        if api.cookie:
            headers["Cookie"] = api.cookie
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        await api.update_params_for_auth(headers, params, ["BearerToken"], path, method, None)
        url = self.host + path
        if params:  # percent-encoded as the library encodes query parameters
            url += "?" + "&".join(f"{k}={urllib.parse.quote(str(v))}" for k, v in params)
        data = None
        if body is not None and method not in ("GET", "HEAD"):
            data = self._encoder.encode(body).encode()
        options: dict[str, Any] = {}
        if api.configuration.tls_server_name:
            options["server_hostname"] = api.configuration.tls_server_name
        rest = api.rest_client
        if rest.proxy:
            options["proxy"] = rest.proxy
        if rest.proxy_headers:
            options["proxy_headers"] = rest.proxy_headers
        if rest.pool_manager is None:  # the library opens its session on first use too
            rest.pool_manager = rest._create_pool_manager()
        return await rest.pool_manager.request(
            method,
            url,
            headers=headers,
            data=data,
            timeout=aiohttp.ClientTimeout(total=total, connect=connect),
            **options,
        )

    @staticmethod
    def _namespace_of(
        resource: Resource, body: Mapping[str, Any], namespace: str | None
    ) -> str | None:
        if not resource.namespaced:
            return None
        given = (body.get("metadata") or {}).get("namespace")
        if namespace is not None and given is not None and given != namespace:
            raise ValueError(f"metadata.namespace {given!r} does not match namespace {namespace!r}")
        chosen = namespace or given
        if not chosen:
            raise ValueError(f"{resource.group_resource} is namespaced; name a namespace")
        return str(chosen)


def _resolve_proxy_once(configuration: Configuration) -> None:
    """Decide the proxy for the API server once, instead of on every request.

    ``kubernetes.aio`` opens its session with aiohttp's ``trust_env``, which looks up netrc and
    the proxy variables in a worker thread for every call: two thread hand-offs per request,
    a fifth of a small call's time. A client talks to one host, so the answer never changes:
    the proxy (``HTTPS_PROXY``/``HTTP_PROXY`` minus ``NO_PROXY``, as kubectl reads them) is
    resolved here and the per-request lookups are switched off. netrc is left out; no
    Kubernetes client authenticates with it.
    """
    if not configuration.proxy:
        try:
            proxy, auth = aiohttp.helpers.get_env_proxy_for_url(yarl.URL(configuration.host))
        except LookupError:
            pass
        else:
            configuration.proxy = str(proxy)
            if auth is not None:
                configuration.proxy_headers = {"Proxy-Authorization": auth.encode()}
    session_options = dict(getattr(configuration, "client_session_kwargs", None) or {})
    session_options.setdefault("trust_env", False)
    configuration.client_session_kwargs = session_options


async def _lines(content: aiohttp.StreamReader, path: str) -> AsyncIterator[bytes]:
    """The body's non-empty lines, however the server chunks them (an event may be larger
    than aiohttp's line buffer, so lines are split here)."""
    buffer = b""
    try:
        async for chunk in content.iter_any():
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line, buffer = buffer[:end], buffer[end + 1 :]
                if line.strip():
                    yield line
    except (aiohttp.ClientError, OSError) as exc:
        raise errors.Unavailable(f"GET {path}: stream broken: {_describe(exc)}") from exc
    if buffer.strip():
        yield buffer


def decode(raw: bytes) -> Any:
    """A JSON body, decoded with the garbage collector paused when it is large.

    Decoding a list allocates a dict per field of every item; each 700 allocations start a
    generation-0 pass, and the passes promote the growing result and trigger full ones that
    walk it again and again: on a 16 MB list of 10,000 Pods, most of the decoding time. Nothing
    the decoder builds is garbage, so pausing loses nothing.
    """
    if len(raw) < QUIET_DECODE_BYTES or not gc.isenabled():
        return json.loads(raw)
    gc.disable()
    try:
        return json.loads(raw)
    finally:
        gc.enable()


def _write_query(field_manager: str | None, dry_run: bool) -> dict[str, Any]:
    # Strict, as kubectl asks by default: without it an API server drops a field its schema
    # does not know (a misspelt one in a pod template) with no more than a warning, and what
    # was submitted is stored changed.
    query: dict[str, Any] = {"fieldManager": field_manager, "fieldValidation": "Strict"}
    if dry_run:
        query["dryRun"] = "All"
    return query


def _delete_options(
    propagation_policy: str | None,
    grace_period_seconds: int | None,
    preconditions: Mapping[str, str] | None,
    dry_run: bool,
) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    if propagation_policy is not None:
        body["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        body["gracePeriodSeconds"] = grace_period_seconds
    if preconditions:
        body["preconditions"] = dict(preconditions)
    if dry_run:
        body["dryRun"] = ["All"]
    return body


def _object_name(resource: Resource, name: Any, verb: str) -> str:
    """``name`` for a call on one object. None would make the path the collection's, and a
    delete of it a deletecollection: every object of the namespace."""
    if not isinstance(name, str):
        raise TypeError(
            f"{verb} {resource.group_resource}: the name is {name!r}, not a string"
            + ("; delete_collection deletes many objects" if verb == "delete" else "")
        )
    return name


def _name_of(body: Mapping[str, Any]) -> str:
    name = (body.get("metadata") or {}).get("name")
    if not name:
        raise ValueError("metadata.name is required")
    return str(name)


def _fill_item_kinds(doc: Any, resource: Resource) -> None:
    if not isinstance(doc, dict):
        return
    kind = doc.get("kind")
    item_kind = kind[: -len("List")] if isinstance(kind, str) and kind.endswith("List") else None
    item_kind = item_kind or resource.kind
    api_version = doc.get("apiVersion") or resource.api_version
    for item in doc.get("items") or []:
        if isinstance(item, dict):
            item.setdefault("apiVersion", api_version)
            if item_kind:
                item.setdefault("kind", item_kind)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
