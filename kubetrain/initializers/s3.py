"""``s3://<bucket>/<prefix>``: every object under a prefix of an S3 (or S3-compatible) bucket,
through the MinIO Python SDK (``minio``), which signs requests (AWS Signature Version 4),
pages listings, finds a bucket's region and retries failed requests (5xx, dropped
connections). ``boto3`` would do too, but its ``python-dateutil<3`` bound cannot install beside
the Kubernetes client kubetrain uses; ``minio`` installs beside it and is imported only when an
``s3://`` URI asks for it.

Where: ``ENDPOINT`` (else ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``) names an S3-compatible
service (MinIO, Ceph, ...) as ``http(s)://<host>[:<port>]``; without one, AWS itself.
``REGION`` (else ``AWS_REGION``, ``AWS_DEFAULT_REGION``) is the signing region; unset, the
client asks the service where the bucket lives.

Who: ``ACCESS_KEY_ID`` / ``SECRET_ACCESS_KEY``, else ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` (:mod:`.config`) sign every request; with
``ROLE_ARN`` those keys first assume the role through STS (at the endpoint, or AWS's), and the
role's temporary keys sign; with no keys, requests go unsigned (a public bucket).

What lands where: the prefix names an object or a folder, as a path does. The object itself
lands under its base name; objects under ``<prefix>/`` land at their key relative to it; keys
that only begin with the same characters (``data2/`` for ``data``) are not under it. Folder
markers (keys ending in ``/``) are skipped, and so are objects matching ``IGNORE_PATTERNS``
(for models, upstream's default duplicates). A key that would land outside the destination is
refused. Each object is streamed into a hidden ``.<name>.part`` beside its target, checked
against the size the listing gave, then renamed, so a file that exists is whole. A transfer
cut short is tried again (:data:`RETRIES` times).

Must not log or put into an error the secret key, the session token or a request's headers.
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from kubetrain.errors import KubetrainError
from kubetrain.initializers import InitializerError, progress
from kubetrain.initializers import config as cfg

if TYPE_CHECKING:
    import minio

log = logging.getLogger(__name__)

AWS_ENDPOINT: Final = "s3.amazonaws.com"
AWS_STS: Final = "https://sts.amazonaws.com"
STS_REGION: Final = "us-east-1"  # AWS's global STS endpoint's signing region
WORKERS: Final = 4  # objects downloaded at once
RETRIES: Final = 3  # more tries for a transfer cut short (the client retries requests itself)
CHUNK: Final = 1 << 20  # bytes read and written at once
INSTALL_HINT: Final = "needs the minio package; accepted: pip install 'kubetrain[initializers]'"


@dataclass(frozen=True)
class Location:
    """Where a bucket is served: ``host[:port]``, whether over TLS, and the region if known."""

    bucket: str
    host: str
    secure: bool
    region: str | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.secure else 'http'}://{self.host}"


@dataclass(frozen=True)
class Object:
    key: str
    size: int | None


class _Failed(KubetrainError):
    """A failure to report; its text is the detail of the initializer's error."""


def location(config: cfg.Config) -> Location:
    """Where the URI's bucket is served; raises :class:`InitializerError` for a URI without a
    bucket or an endpoint that is not ``http(s)://<host>[:<port>]``."""
    bucket = urlsplit(config.storage_uri).netloc
    if not bucket:
        raise config.error("an s3:// URI names a bucket: s3://<bucket>/<prefix>")
    endpoint = config.endpoint
    if endpoint is None:
        return Location(bucket=bucket, host=AWS_ENDPOINT, secure=True, region=config.region)
    parts = urlsplit(endpoint)
    try:
        port = parts.port
    except ValueError:  # a port that is not a number, or out of range
        port = -1
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or port == -1
        or parts.username is not None
        or parts.path not in ("", "/")
        or parts.query
    ):
        shown = endpoint if "@" not in endpoint else "<a URL with credentials in it>"
        raise config.error(
            f"S3 endpoint {shown!r} is not a URL of a service; accepted: "
            "http(s)://<host>[:<port>] (keys go in ACCESS_KEY_ID and SECRET_ACCESS_KEY)"
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = {"http": 80, "https": 443}[parts.scheme]
    host = host if port in (None, default) else f"{host}:{port}"
    return Location(bucket=bucket, host=host, secure=parts.scheme == "https", region=config.region)


@dataclass(frozen=True)
class Keys:
    """The keys that sign requests, and the role they assume first, if any."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    role_arn: str | None = None


def credentials(config: cfg.Config) -> Keys | None:
    """The keys that sign requests, or None for anonymous requests."""
    if config.access_key_id and config.secret_access_key:
        return Keys(
            config.access_key_id,
            config.secret_access_key,
            None if config.role_arn else config.session_token,
            config.role_arn,
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
    if config.role_arn:
        raise config.error(
            "ROLE_ARN is set without keys to assume it with; accepted: ACCESS_KEY_ID and "
            "SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) beside it"
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
        raise config.error(f"object {key!r} would land outside {config.output_path}")
    return path


def client(where: Location, keys: Keys | None) -> minio.Minio:
    """A client for ``where``, signing with ``keys`` (after assuming their role) or anonymous."""
    import minio
    import urllib3
    from minio import credentials as providers

    provider: providers.Provider | None = None
    if keys is not None and keys.role_arn:
        sts = where.url if where.host != AWS_ENDPOINT else AWS_STS
        provider = providers.AssumeRoleProvider(
            sts_endpoint=sts,
            access_key=keys.access_key_id,
            secret_key=keys.secret_access_key,
            region=where.region or STS_REGION,  # STS signs with a region even where S3 asks
            role_arn=keys.role_arn,
            role_session_name="kubetrain-initializer",
        )
        try:
            provider.retrieve()  # now, so that a refusal is reported as one
        except (ValueError, urllib3.exceptions.HTTPError) as exc:
            raise _Failed(
                f"cannot assume role {keys.role_arn} through STS at {sts}: {describe(exc)}"
            ) from exc
    elif keys is not None:
        provider = providers.StaticProvider(
            keys.access_key_id, keys.secret_access_key, keys.session_token
        )
    return minio.Minio(where.host, secure=where.secure, region=where.region, credentials=provider)


def describe(error: BaseException) -> str:
    """What went wrong, on one line and without secrets: S3's error code and message, or the
    transport's failure."""
    from minio import error as minio_error

    if isinstance(error, minio_error.S3Error):
        status = getattr(error.response, "status", None)
        where = f" ({error.object_name or error.bucket_name})" if error.bucket_name else ""
        text = f"{error.code}: {error.message}" if error.message else str(error.code)
        return f"{status} {text}{where}" if status else text + where
    if isinstance(error, minio_error.ServerError):
        return f"{error.status_code} {cfg.one_line(error)}"
    return f"{type(error).__name__}: {cfg.one_line(error)}"


def _listing(api: minio.Minio, where: Location, prefix: str) -> Iterator[Object]:
    for item in api.list_objects(where.bucket, prefix=prefix or None, recursive=True):
        if item.object_name is not None and not item.is_dir:
            yield Object(item.object_name, item.size)


def _save(
    api: minio.Minio, where: Location, item: Object, path: str, bar: progress.Progress
) -> int:
    """Stream ``item`` into ``path`` through a ``.part`` file; a transfer cut short (an
    error while reading the body, or fewer bytes than listed) is tried again."""
    import urllib3

    folder, name = os.path.split(path)
    part = os.path.join(folder, f".{name}.part")
    os.makedirs(folder, exist_ok=True)
    for attempt in range(RETRIES + 1):
        written = 0
        try:
            response = api.get_object(where.bucket, item.key)
            try:
                with open(part, "wb") as handle:
                    for chunk in response.stream(CHUNK):
                        handle.write(chunk)
                        written += len(chunk)
                        bar.advance(len(chunk))
            finally:
                response.close()
                response.release_conn()
            if item.size is not None and written != item.size:
                raise _Failed(f"got {written} bytes, the listing said {item.size}")
            os.replace(part, path)
            return written
        except (_Failed, urllib3.exceptions.HTTPError) as exc:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part)
            bar.advance(-written)
            if attempt == RETRIES:
                raise _Failed(f"s3://{where.bucket}/{item.key}: {describe(exc)}") from exc
            log.warning("s3://%s/%s: %s; trying again", where.bucket, item.key, describe(exc))
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part)
            raise
    raise AssertionError("unreachable")


def download(config: cfg.Config) -> int:
    """Download every object under the URI's prefix into ``config.output_path``; returns how
    many. Blocking (the caller runs it in a thread). Raises :class:`InitializerError` naming
    the URI (and the endpoint, when given)."""
    where = location(config)
    keys = credentials(config)
    prefix = urlsplit(config.storage_uri).path.lstrip("/")
    at = f" at {config.endpoint}" if config.endpoint else ""
    source = f"s3://{where.bucket}/{prefix}{at}"
    try:
        from minio import error as minio_error
    except ImportError as exc:
        raise config.error(INSTALL_HINT) from exc
    import urllib3

    if keys is None:
        log.info("%s: no credentials, sending anonymous requests", source)
    failures = (minio_error.MinioException, urllib3.exceptions.HTTPError, ValueError)
    try:
        api = client(where, keys)
        listed = list(_listing(api, where, prefix))
        wanted = [(item, target(config, prefix, item.key)) for item in listed]
        todo = [(item, path) for item, path in wanted if path is not None]
        if not todo:
            ignored = sum(1 for item, _ in wanted if relative_path(prefix, item.key) is not None)
            skipped = f" ({ignored} skipped by IGNORE_PATTERNS)" if ignored else ""
            raise config.error(f"no objects under {source}{skipped}")
        sizes = [item.size for item, _ in todo]
        total = None if None in sizes else sum(s or 0 for s in sizes)
        bar = progress.Progress(f"{config.kind} initializer", len(todo), total)
        bar.start()
        _download_all(api, where, todo, bar)
        bar.finish()
    except InitializerError:
        raise
    except _Failed as exc:
        raise config.error(f"cannot download from S3{at}: {exc}") from exc
    except failures as exc:
        raise config.error(f"cannot download from S3{at}: {describe(exc)}") from exc
    except OSError as exc:
        raise config.error(f"cannot write {config.output_path}: {exc}") from exc
    return len(todo)


def _download_all(
    api: minio.Minio, where: Location, todo: list[tuple[Object, str]], bar: progress.Progress
) -> None:
    """Download with :data:`WORKERS` at once; the first failure stops the rest and is raised."""
    stop = threading.Event()

    def one(item: Object, path: str) -> None:
        if stop.is_set():
            return
        try:
            size = _save(api, where, item, path, bar)
        except BaseException:
            stop.set()
            raise
        bar.file_done(item.key, size)

    with ThreadPoolExecutor(WORKERS, thread_name_prefix="s3-download") as pool:
        futures = [pool.submit(one, item, path) for item, path in todo]
    for future in futures:
        future.result()  # the first failure, in listing order
