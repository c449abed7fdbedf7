"""``s3://<bucket>/<prefix>``: every object under a prefix of an S3 (or S3-compatible) bucket,
over aiohttp with AWS Signature Version 4 (:mod:`.sigv4`); no AWS library is needed.

Where: ``ENDPOINT`` (else ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``) names an S3-compatible
service (MinIO, Ceph, ...), addressed path-style (``<endpoint>/<bucket>/<key>``); without one,
AWS itself, virtual-hosted (``<bucket>.s3.<region>.amazonaws.com``; path-style for a bucket
with dots). ``REGION`` (else ``AWS_REGION``, ``AWS_DEFAULT_REGION``, else ``us-east-1``) is
the signing region; a bucket that the service says lives elsewhere (``x-amz-bucket-region``
on a 301 or 400) is followed to its region.

Who: ``ACCESS_KEY_ID`` / ``SECRET_ACCESS_KEY``, else ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` (:mod:`.config`) sign every request; with
neither, requests go unsigned (a public bucket). ``ROLE_ARN`` (assuming a role) is refused
with an error rather than ignored.

What lands where: the prefix names an object or a folder, as a path does. The object itself
lands under its base name; objects under ``<prefix>/`` land at their key relative to it; keys
that only begin with the same characters (``data2/`` for ``data``) are not under it. Folder
markers (keys ending in ``/``) are skipped, and so are objects matching ``IGNORE_PATTERNS``
(for models, upstream's default duplicates). A key that would land outside the destination is
refused. Each object is streamed into a hidden ``.<name>.part`` beside its target, checked
against the size the listing gave, then renamed, so a file that exists is whole; a restarted
initializer downloads everything again.

Transient failures (connection errors, 429, 5xx) are retried with exponential back-off, as
upstream's OpenDAL retry layer does. Must not log or put into an error the secret key, the
session token or a request's headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import logging
import os
import xml.etree.ElementTree as ElementTree
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Final, TypeVar
from urllib.parse import unquote_plus, urlsplit

import aiohttp
import yarl

from kubetrain import _aio
from kubetrain.errors import KubetrainError
from kubetrain.initializers import InitializerError, sigv4
from kubetrain.initializers import config as cfg

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_REGION: Final = "us-east-1"
AWS_HOST: Final = "s3.{region}.amazonaws.com"
WORKERS: Final = 4  # objects downloaded at once
RETRIES: Final = 3  # after the first try, as upstream's RetryLayer(max_times=3)
BACKOFF: Final = 0.5  # seconds before the first retry; doubles each time
RETRY_STATUS: Final = frozenset({408, 429, 500, 502, 503, 504})
CHUNK: Final = 1 << 20  # bytes written to disk at once
ERROR_BODY_LIMIT: Final = 64 * 1024
TIMEOUT: Final = aiohttp.ClientTimeout(total=None, sock_connect=30.0, sock_read=120.0)


@dataclass(frozen=True)
class Location:
    """Where a bucket is served: the endpoint's scheme, host and path (or AWS's), the region."""

    bucket: str
    region: str
    endpoint: str | None = None

    @property
    def path_style(self) -> bool:
        return self.endpoint is not None or "." in self.bucket

    @property
    def scheme(self) -> str:
        return urlsplit(self.endpoint).scheme if self.endpoint else "https"

    @property
    def host(self) -> str:
        """The ``Host`` header: ``host[:port]``, the port only when it is not the scheme's."""
        if self.endpoint is None:
            aws = AWS_HOST.format(region=self.region)
            return aws if self.path_style else f"{self.bucket}.{aws}"
        parts = urlsplit(self.endpoint)
        default = {"http": 80, "https": 443}[parts.scheme]
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        return host if parts.port in (None, default) else f"{host}:{parts.port}"

    def path(self, key: str = "") -> str:
        """The encoded request path of ``key``, or of the bucket itself when empty."""
        base = urlsplit(self.endpoint).path.rstrip("/") if self.endpoint else ""
        bucket = f"{base}/{self.bucket}" if self.path_style else base
        return sigv4.canonical_path(f"{bucket}/{key}" if key or not bucket else bucket)

    def url(self, path: str, query: str = "") -> yarl.URL:
        text = f"{self.scheme}://{self.host}{path}" + (f"?{query}" if query else "")
        return yarl.URL(text, encoded=True)


@dataclass(frozen=True)
class Object:
    key: str
    size: int | None


class _Transient(KubetrainError):
    """A failure worth another try; its text is the detail of the final error."""


class _Failed(KubetrainError):
    """A failure another try would not fix; its text is the detail of the error."""


def location(config: cfg.Config) -> Location:
    """Where the URI's bucket is served; raises :class:`InitializerError` for a URI without a
    bucket or an endpoint that is not an http(s) URL."""
    bucket = urlsplit(config.storage_uri).netloc
    if not bucket:
        raise config.error("an s3:// URI names a bucket: s3://<bucket>/<prefix>")
    endpoint = config.endpoint
    if endpoint is not None and not _is_endpoint(endpoint):
        shown = endpoint if "@" not in endpoint else "<a URL with credentials in it>"
        raise config.error(
            f"S3 endpoint {shown!r} is not a URL; accepted: http(s)://<host>[:<port>] "
            "(keys go in ACCESS_KEY_ID and SECRET_ACCESS_KEY)"
        )
    return Location(bucket=bucket, region=config.region or DEFAULT_REGION, endpoint=endpoint)


def _is_endpoint(url: str) -> bool:
    """Whether ``url`` is ``http(s)://host[:port][/path]``, without credentials in it."""
    parts = urlsplit(url)
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # a port that is not a number, or out of range
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and port_ok
        and (parts.username is None)
    )


def credentials(config: cfg.Config) -> sigv4.Credentials | None:
    """The keys that sign requests, or None for anonymous requests."""
    if config.role_arn:
        raise config.error(
            "ROLE_ARN (assuming a role) is not supported; accepted: ACCESS_KEY_ID and "
            "SECRET_ACCESS_KEY, or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and "
            "AWS_SESSION_TOKEN holding the role's temporary credentials"
        )
    if config.access_key_id and config.secret_access_key:
        return sigv4.Credentials(
            config.access_key_id, config.secret_access_key, config.session_token
        )
    if config.access_key_id or config.secret_access_key:
        given, missing = (
            ("ACCESS_KEY_ID", "SECRET_ACCESS_KEY")
            if config.access_key_id
            else ("SECRET_ACCESS_KEY", "ACCESS_KEY_ID")
        )
        raise config.error(
            f"{given} is set but {missing} is not; accepted: both (signed requests) or "
            "neither (anonymous requests)"
        )
    return None


def relative_path(prefix: str, key: str) -> str | None:
    """Where ``key`` lands relative to the destination, or None when it is not under
    ``prefix`` (a path: an object, or a folder with or without its ``/``)."""
    if not prefix or prefix.endswith("/"):
        relative = key[len(prefix) :] if key.startswith(prefix) else None
    elif key == prefix:
        relative = os.path.basename(key)
    elif key.startswith(prefix + "/"):
        relative = key[len(prefix) + 1 :]
    else:
        relative = None
    return relative.lstrip("/") if relative else None


def target(config: cfg.Config, prefix: str, key: str) -> str | None:
    """The file ``key`` lands in, or None when it is skipped."""
    relative = relative_path(prefix, key)
    if relative is None or key.endswith("/"):
        return None
    patterns = config.ignore_patterns
    if patterns is None and config.kind == cfg.MODEL:
        patterns = cfg.MODEL_IGNORE_PATTERNS
    name = os.path.basename(relative)
    if any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in patterns or ()):
        return None
    root = os.path.abspath(config.output_path)
    path = os.path.abspath(os.path.join(root, relative))
    if os.path.commonpath([root, path]) != root:
        raise config.error(f"object key {key!r} would land outside {config.output_path}")
    return path


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _children(element: ElementTree.Element, name: str) -> Iterator[ElementTree.Element]:
    return (child for child in element if _local(child.tag) == name)


def _text(element: ElementTree.Element, name: str) -> str | None:
    return next((child.text or "" for child in _children(element, name)), None)


def parse_listing(body: bytes) -> tuple[list[Object], str | None]:
    """The objects of one ListObjectsV2 page and the token of the next (None on the last)."""
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise _Failed(f"the listing is not S3's XML: {exc}") from exc
    encoded = _text(root, "EncodingType") == "url"
    objects: list[Object] = []
    for item in _children(root, "Contents"):
        key = _text(item, "Key") or ""
        size = _text(item, "Size")
        objects.append(
            Object(
                key=unquote_plus(key) if encoded else key,
                size=int(size) if size and size.isdigit() else None,
            )
        )
    truncated = (_text(root, "IsTruncated") or "").lower() == "true"
    token = _text(root, "NextContinuationToken") if truncated else None
    if truncated and not token:
        raise _Failed("the listing is truncated but has no NextContinuationToken")
    return objects, token


def error_detail(status: int, reason: str | None, body: bytes) -> str:
    """``<status> <S3 error code>: <message>`` from an error response."""
    try:
        root = ElementTree.fromstring(body)
        code, message = _text(root, "Code"), _text(root, "Message")
    except ElementTree.ParseError:
        code = message = None
    if code:
        return f"{status} {code}: {message}" if message else f"{status} {code}"
    return f"{status} {reason or 'error'}"


class Client:
    """ListObjectsV2 and GetObject against one bucket, signed when given credentials."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        where: Location,
        keys: sigv4.Credentials | None,
        *,
        now: Callable[[], datetime] | None = None,
        retries: int = RETRIES,
        backoff: float = BACKOFF,
    ) -> None:
        self.session = session
        self.where = where
        self.keys = keys
        self.now = now or (lambda: datetime.now(timezone.utc))
        self.retries = retries
        self.backoff = backoff

    def _headers(self, path: str, query: str) -> dict[str, str]:
        headers = {"host": self.where.host}
        if self.keys is None:
            return headers
        return sigv4.sign("GET", path, query, headers, self.keys, self.where.region, self.now())

    async def _retrying(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run ``attempt`` (a coroutine function) until it succeeds, retrying transient
        failures; raises :class:`_Failed` naming ``what``."""
        for number in range(self.retries + 1):
            try:
                return await attempt()
            except _Failed as exc:
                raise _Failed(f"{what}: {exc}") from exc
            except _Transient as exc:
                if number == self.retries:
                    raise _Failed(f"{what}: {exc} (after {number + 1} tries)") from exc
                log.warning("%s: %s; trying again", what, exc)
            except (aiohttp.ClientError, *_aio.TIMEOUT_ERRORS) as exc:
                detail = f"{type(exc).__name__}: {cfg.one_line(exc) or 'timed out'}"
                if number == self.retries:
                    raise _Failed(f"{what}: {detail} (after {number + 1} tries)") from exc
                log.warning("%s: %s; trying again", what, detail)
            await asyncio.sleep(self.backoff * 2**number)
        raise AssertionError("unreachable")

    async def _check(self, response: aiohttp.ClientResponse) -> None:
        """Raise for an error response; a wrong region is switched and retried."""
        if response.status < 300:
            return
        body = await response.content.read(ERROR_BODY_LIMIT)
        region = response.headers.get("x-amz-bucket-region")
        if region and region != self.where.region and response.status in (301, 400):
            log.info("bucket %s is in region %s; following it", self.where.bucket, region)
            self.where = dataclasses.replace(self.where, region=region)
            raise _Transient(f"the bucket is in region {region}")
        detail = error_detail(response.status, response.reason, body)
        if response.status in RETRY_STATUS:
            raise _Transient(detail)
        raise _Failed(detail)

    async def list_objects(self, prefix: str) -> list[Object]:
        """Every object whose key begins with ``prefix``, page by page."""
        objects: list[Object] = []
        token: str | None = None
        while True:
            params = [("list-type", "2"), ("prefix", prefix), ("encoding-type", "url")]
            if token is not None:
                params.append(("continuation-token", token))

            async def page(
                params: list[tuple[str, str]] = params,
            ) -> tuple[list[Object], str | None]:
                query = sigv4.canonical_query(params)
                path = self.where.path()
                async with self.session.get(
                    self.where.url(path, query), headers=self._headers(path, query)
                ) as response:
                    await self._check(response)
                    return parse_listing(await response.read())

            found, token = await self._retrying(f"listing s3://{self.where.bucket}/{prefix}", page)
            objects.extend(found)
            if token is None:
                return objects

    async def get_object(self, item: Object, path: str) -> int:
        """Stream ``item`` into the file ``path``; returns its size."""

        async def attempt() -> int:
            request_path = self.where.path(item.key)
            async with self.session.get(
                self.where.url(request_path), headers=self._headers(request_path, "")
            ) as response:
                await self._check(response)
                return await _save(response, path, item.size)

        return await self._retrying(f"s3://{self.where.bucket}/{item.key}", attempt)


async def _save(response: aiohttp.ClientResponse, path: str, expected: int | None) -> int:
    folder, name = os.path.split(path)
    part = os.path.join(folder, f".{name}.part")
    await asyncio.to_thread(os.makedirs, folder, exist_ok=True)
    handle = await asyncio.to_thread(open, part, "wb")
    written = 0
    try:
        try:
            buffer = bytearray()
            async for chunk in response.content.iter_chunked(CHUNK):
                buffer += chunk
                if len(buffer) >= CHUNK:
                    await asyncio.to_thread(handle.write, bytes(buffer))
                    written += len(buffer)
                    buffer.clear()
            if buffer:
                await asyncio.to_thread(handle.write, bytes(buffer))
                written += len(buffer)
        finally:
            handle.close()
        if expected is not None and written != expected:
            raise _Transient(f"got {written} bytes, the listing said {expected}")
        await asyncio.to_thread(os.replace, part, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part)  # one quick call, also while being cancelled
        raise
    return written


async def download(
    config: cfg.Config,
    *,
    now: Callable[[], datetime] | None = None,
    backoff: float = BACKOFF,
) -> int:
    """Download every object under the URI's prefix into ``config.output_path``; returns how
    many. Raises :class:`InitializerError` naming the URI (and the endpoint, when given)."""
    where = location(config)
    keys = credentials(config)
    prefix = urlsplit(config.storage_uri).path.lstrip("/")
    at = f" at {config.endpoint}" if config.endpoint else ""
    source = f"s3://{where.bucket}/{prefix}{at}"
    if keys is None:
        log.info("%s: no credentials, sending anonymous requests", source)
    try:
        async with aiohttp.ClientSession(
            timeout=TIMEOUT, auto_decompress=False, trust_env=True
        ) as session:
            client = Client(session, where, keys, now=now, backoff=backoff)
            listed = await client.list_objects(prefix)
            wanted = [(item, target(config, prefix, item.key)) for item in listed]
            todo = [(item, path) for item, path in wanted if path is not None]
            ignored = sum(
                1
                for item, path in wanted
                if path is None
                and not item.key.endswith("/")
                and relative_path(prefix, item.key) is not None
            )
            if not todo:
                skipped = f" ({ignored} skipped by IGNORE_PATTERNS)" if ignored else ""
                raise config.error(f"no objects under {source}{skipped}")
            log.info("%s: %d objects to download", source, len(todo))
            await _download_all(client, todo)
    except _Failed as exc:
        raise config.error(f"cannot download from S3{at}: {exc}") from exc
    except InitializerError:
        raise
    except OSError as exc:
        raise config.error(f"cannot write {config.output_path}: {exc}") from exc
    return len(todo)


async def _download_all(client: Client, todo: list[tuple[Object, str]]) -> None:
    """Download with :data:`WORKERS` at once; the first failure stops the rest and is raised."""
    pending = iter(todo)
    failures: list[BaseException] = []

    async def worker() -> None:
        for item, path in pending:
            if failures:
                return
            try:
                size = await client.get_object(item, path)
            except (_Failed, OSError) as exc:
                failures.append(exc)
                return
            log.info("%s -> %s (%d bytes)", item.key, path, size)

    async with _aio.TaskGroup() as group:
        for number in range(min(WORKERS, len(todo))):
            group.create_task(worker(), name=f"s3-download-{number}")
    if failures:
        raise failures[0]
