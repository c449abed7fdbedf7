"""AWS Signature Version 4 for S3 requests (header-based, ``AWS4-HMAC-SHA256``): the
canonical request, the string to sign, the signing key and the headers that carry them.

S3's own rules apply: the path is URI-encoded once (each segment, ``/`` kept), never twice as
other services do; the payload hash goes into ``x-amz-content-sha256``, which S3 requires to be
signed; a session token goes into ``x-amz-security-token`` and is signed too.

Pure: the request, the credentials and the time are passed in. Must not read the environment
or the clock, and must not put the secret key or the session token into a log, an exception
or a ``repr``.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Final
from urllib.parse import quote

ALGORITHM: Final = "AWS4-HMAC-SHA256"
SERVICE: Final = "s3"
# The SHA-256 of an empty body: what every GET sends as its payload hash.
EMPTY_SHA256: Final = hashlib.sha256(b"").hexdigest()
# RFC 3986's unreserved characters, the only ones SigV4 leaves unencoded.
_UNRESERVED: Final = "-_.~"


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


def uri_encode(value: str, *, keep_slash: bool = False) -> str:
    """SigV4's URI encoding: every byte but the unreserved characters as ``%XY`` (upper-case
    hex), ``/`` kept only in a path."""
    return quote(value, safe=_UNRESERVED + ("/" if keep_slash else ""))


def canonical_path(key_path: str) -> str:
    """The encoded path of ``key_path`` (``/bucket/key`` or ``/key``, unencoded): what goes on
    the wire and into the canonical request alike."""
    return uri_encode(key_path if key_path.startswith("/") else "/" + key_path, keep_slash=True)


def canonical_query(params: Iterable[tuple[str, str]]) -> str:
    """Each name and value encoded, sorted by name then value, joined with ``&``; a name without
    a value keeps its ``=``. The same string is the request's query on the wire."""
    encoded = sorted((uri_encode(name), uri_encode(value)) for name, value in params)
    return "&".join(f"{name}={value}" for name, value in encoded)


def _canonical_headers(headers: Mapping[str, str]) -> tuple[str, str]:
    folded: dict[str, str] = {}
    for name, value in headers.items():
        folded[name.strip().lower()] = " ".join(value.split())
    names = sorted(folded)
    return "".join(f"{n}:{folded[n]}\n" for n in names), ";".join(names)


def canonical_request(
    method: str, path: str, query: str, headers: Mapping[str, str], payload_hash: str
) -> tuple[str, str]:
    """The canonical request and its signed-headers list. ``path`` and ``query`` are already
    encoded (:func:`canonical_path`, :func:`canonical_query`); every header given is signed."""
    canonical, signed = _canonical_headers(headers)
    request = "\n".join((method.upper(), path, query, canonical, signed, payload_hash))
    return request, signed


def amz_date(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def scope(when: datetime, region: str, service: str = SERVICE) -> str:
    return f"{amz_date(when)[:8]}/{region}/{service}/aws4_request"


def string_to_sign(when: datetime, region: str, request: str, service: str = SERVICE) -> str:
    digest = hashlib.sha256(request.encode()).hexdigest()
    return "\n".join((ALGORITHM, amz_date(when), scope(when, region, service), digest))


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def signing_key(secret_access_key: str, day: str, region: str, service: str = SERVICE) -> bytes:
    """The key derived for one day (``YYYYMMDD``), region and service."""
    key = _hmac(("AWS4" + secret_access_key).encode(), day)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return key


def signature(
    secret_access_key: str, when: datetime, region: str, request: str, service: str = SERVICE
) -> str:
    """The hex signature of a canonical request."""
    key = signing_key(secret_access_key, amz_date(when)[:8], region, service)
    return hmac.new(
        key, string_to_sign(when, region, request, service).encode(), hashlib.sha256
    ).hexdigest()


def sign(
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    credentials: Credentials,
    region: str,
    when: datetime,
    payload_hash: str = EMPTY_SHA256,
) -> dict[str, str]:
    """The headers to send: ``headers`` (which must hold ``host``) plus ``x-amz-date``,
    ``x-amz-content-sha256``, ``x-amz-security-token`` with a session token, and
    ``Authorization``. ``path`` and ``query`` as they go on the wire."""
    signed_headers = {k.lower(): v for k, v in headers.items()}
    if "host" not in signed_headers:
        raise ValueError("a signed request needs its host header")
    signed_headers["x-amz-date"] = amz_date(when)
    signed_headers["x-amz-content-sha256"] = payload_hash
    if credentials.session_token:
        signed_headers["x-amz-security-token"] = credentials.session_token
    request, names = canonical_request(method, path, query, signed_headers, payload_hash)
    value = signature(credentials.secret_access_key, when, region, request)
    signed_headers["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key_id}/{scope(when, region)}, "
        f"SignedHeaders={names}, Signature={value}"
    )
    return signed_headers
