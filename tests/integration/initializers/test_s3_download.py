"""The s3:// initializer's whole download flow over real HTTP, against a stand-in S3 server.

The server below is a stand-in written for these tests, not S3 or MinIO: an aiohttp app that
serves path-style ListObjectsV2 (two keys a page, continuation tokens with reserved
characters, url-encoded keys) and GetObject from a dict, and checks every signed request the
way S3 does: it rebuilds the canonical request from what came over the wire (the raw path and
query, the headers the request says it signed, the payload hash) and compares the signature
computed with the key's secret, the scope's region and the request's own ``x-amz-date``. The
signer itself is pinned to AWS's published examples in tests/unit/initializers/test_sigv4.py;
what this adds is that the requests on the wire are the ones that were signed. Unsigned
requests are served only from a bucket marked public, and faults (503, a short body) can be
queued per request path.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qsl, quote, unquote

import pytest
from aiohttp import web

from kubetrain.initializers import InitializerError, s3, sigv4
from kubetrain.initializers import config as cfg

T = TypeVar("T")

REGION = "eu-central-1"
KEY_ID, SECRET = "AKIDSTANDIN", "stand-in/secret+key"
TEMP_KEY_ID, TEMP_SECRET, TOKEN = "ASIASTANDIN", "temporary-secret", "session/token=="
PAGE = 2
XML = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'


@dataclass
class StandIn:
    """What the stand-in serves, and what it saw."""

    buckets: dict[str, dict[str, bytes]]
    public: set[str] = field(default_factory=set)
    faults: dict[str, list[str]] = field(default_factory=dict)  # raw path -> queued faults
    seen: list[tuple[str, str, bool]] = field(default_factory=list)  # path, query, signed
    keys: dict[str, tuple[str, str | None]] = field(
        default_factory=lambda: {KEY_ID: (SECRET, None), TEMP_KEY_ID: (TEMP_SECRET, TOKEN)}
    )


def s3_error(status: int, code: str, message: str) -> web.Response:
    body = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>"
    return web.Response(status=status, text=body, content_type="application/xml")


def signature_problem(state: StandIn, request: web.Request, path: str, query: str) -> str | None:
    """Why the request's signature does not hold, or None when it does."""
    fields = dict(
        part.strip().split("=", 1)
        for part in request.headers["Authorization"].split(" ", 1)[1].split(",")
    )
    key_id, day, region, service, terminal = fields["Credential"].split("/")
    if key_id not in state.keys:
        return "InvalidAccessKeyId"
    secret, token = state.keys[key_id]
    stamp = request.headers.get("x-amz-date", "")
    names = fields["SignedHeaders"].split(";")
    if (service, terminal) != ("s3", "aws4_request") or day != stamp[:8]:
        return "AuthorizationHeaderMalformed"
    if region != REGION:
        return "WrongRegion"
    if not {"host", "x-amz-date", "x-amz-content-sha256"} <= set(names):
        return "AccessDenied"
    if token is not None and (
        "x-amz-security-token" not in names or request.headers.get("x-amz-security-token") != token
    ):
        return "InvalidToken"
    payload = request.headers["x-amz-content-sha256"]
    if payload != hashlib.sha256(b"").hexdigest():
        return "XAmzContentSHA256Mismatch"
    canonical, signed = sigv4.canonical_request(
        request.method,
        path,
        sigv4.canonical_query(parse_qsl(query, keep_blank_values=True)),
        {name: request.headers.get(name, "") for name in names},
        payload,
    )
    when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    expected = sigv4.signature(secret, when, region, canonical)
    if signed != fields["SignedHeaders"] or not hmac.compare_digest(expected, fields["Signature"]):
        return "SignatureDoesNotMatch"
    return None


def listing(state: StandIn, bucket: str, query: str) -> web.Response:
    params = dict(parse_qsl(query, keep_blank_values=True))
    assert params.get("list-type") == "2", "ListObjectsV2 only"
    prefix = params.get("prefix", "")
    keys = sorted(k for k in state.buckets[bucket] if k.startswith(prefix))
    token = params.get("continuation-token")  # "page/<n>+=": reserved characters survive
    start = int(token.removeprefix("page/").removesuffix("+=")) if token else 0
    page = keys[start : start + PAGE]
    url = params.get("encoding-type") == "url"
    contents = "".join(
        f"<Contents><Key>{quote(k) if url else k}</Key>"
        f"<Size>{len(state.buckets[bucket][k])}</Size></Contents>"
        for k in page
    )
    more = start + PAGE < len(keys)
    body = (
        f"<ListBucketResult {XML}><Name>{bucket}</Name><Prefix>{prefix}</Prefix>"
        + ("<EncodingType>url</EncodingType>" if url else "")
        + f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>{contents}"
        + (f"<NextContinuationToken>page/{start + PAGE}+=</NextContinuationToken>" if more else "")
        + "</ListBucketResult>"
    )
    return web.Response(text=body, content_type="application/xml")


def app(state: StandIn) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        path, _, query = request.raw_path.partition("?")
        signed = "Authorization" in request.headers
        state.seen.append((path, query, signed))
        bucket, _, encoded_key = path.lstrip("/").partition("/")
        if bucket not in state.buckets:
            return s3_error(404, "NoSuchBucket", "The specified bucket does not exist")
        if signed:
            problem = signature_problem(state, request, path, query)
            if problem == "WrongRegion":
                response = s3_error(400, "AuthorizationHeaderMalformed", "wrong region")
                response.headers["x-amz-bucket-region"] = REGION
                return response
            if problem is not None:
                return s3_error(403, problem, "The request signature we calculated does not match")
        elif bucket not in state.public:
            return s3_error(403, "AccessDenied", "Access Denied")
        fault = state.faults.get(path, [None]).pop(0) if state.faults.get(path) else None
        if fault == "503":
            return s3_error(503, "SlowDown", "Please reduce your request rate.")
        if not encoded_key:
            return listing(state, bucket, query)
        key = unquote(encoded_key)
        if key not in state.buckets[bucket]:
            return s3_error(404, "NoSuchKey", "The specified key does not exist.")
        data = state.buckets[bucket][key]
        return web.Response(body=data[: len(data) // 2] if fault == "short" else data)

    application = web.Application()
    application.router.add_route("GET", "/{tail:.*}", handle)
    return application


@contextlib.asynccontextmanager
async def serving(state: StandIn) -> AsyncIterator[str]:
    """The stand-in on a free local port; yields its endpoint URL."""
    runner = web.AppRunner(app(state))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def run(test: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(test(), debug=True)  # type: ignore[arg-type]


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


BIG = os.urandom(3 * (1 << 20) + 17)  # several write chunks, not a multiple of one


def dataset_bucket() -> dict[str, bytes]:
    return {
        "data/train.csv": b"a,b\n1,2\n",
        "data/a b+c.txt": b"spaces and plus",
        "data/é/ü.txt": b"utf-8 key",
        "data/sub/": b"",
        "data/sub/big.bin": BIG,
        "data/sub/deep/x.json": b"{}",
        "data2/not-under.txt": b"sibling",
        "other/skip.txt": b"elsewhere",
    }


def test_a_signed_download_pages_through_the_listing_and_streams_every_object(
    tmp_path: Path,
) -> None:
    state = StandIn({"bucket": dataset_bucket()})

    assert downloaded(state, "dataset", signed_env(tmp_path)) == 5
    assert files(tmp_path) == {
        "a b+c.txt": b"spaces and plus",
        "sub/big.bin": BIG,
        "sub/deep/x.json": b"{}",
        "train.csv": b"a,b\n1,2\n",
        "é/ü.txt": b"utf-8 key",
    }
    lists = [query for path, query, _ in state.seen if path == "/bucket"]
    assert len(lists) == 4, "seven keys under 'data', two a page"
    assert sum("continuation-token=page%2F" in q for q in lists) == 3
    assert all(signed for _, _, signed in state.seen), "every request signed"
    assert ("/bucket/data/a%20b%2Bc.txt", "", True) in state.seen


def test_temporary_credentials_sign_with_their_session_token(tmp_path: Path) -> None:
    state = StandIn({"bucket": {"m/config.json": b"{}", "m/model.bin": b"dup"}})

    def env(endpoint: str) -> dict[str, str]:
        return {
            "STORAGE_URI": "s3://bucket/m",
            "OUTPUT_PATH": str(tmp_path),
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": TEMP_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": TEMP_SECRET,
            "AWS_SESSION_TOKEN": TOKEN,
            "AWS_REGION": REGION,
        }

    assert downloaded(state, "model", env) == 1
    assert files(tmp_path) == {"config.json": b"{}"}, "the model's ignore patterns hold"


def test_a_bucket_in_another_region_is_followed_there(tmp_path: Path) -> None:
    state = StandIn({"bucket": {"data/x.txt": b"x"}})

    async def scenario() -> int:
        async with serving(state) as endpoint:
            config = cfg.from_env(
                "dataset",
                {
                    "STORAGE_URI": "s3://bucket/data",
                    "OUTPUT_PATH": str(tmp_path),
                    "ENDPOINT": endpoint,
                    "ACCESS_KEY_ID": KEY_ID,
                    "SECRET_ACCESS_KEY": SECRET,
                },
            )
            assert config.region is None, "signed for us-east-1 first"
            return await s3.download(config, backoff=0.0)

    assert run(scenario) == 1
    assert files(tmp_path) == {"x.txt": b"x"}
    assert [path for path, _, _ in state.seen] == ["/bucket", "/bucket", "/bucket/data/x.txt"]


def signed_env(output: Path) -> Callable[[str], dict[str, str]]:
    """The dataset initializer's environment for ``s3://bucket/data`` with the test's keys,
    given the stand-in's endpoint."""

    def env(endpoint: str) -> dict[str, str]:
        return {
            "STORAGE_URI": "s3://bucket/data",
            "OUTPUT_PATH": str(output),
            "ENDPOINT": endpoint,
            "ACCESS_KEY_ID": KEY_ID,
            "SECRET_ACCESS_KEY": SECRET,
            "REGION": REGION,
        }

    return env


def downloaded(state: StandIn, kind: str, env: Callable[[str], dict[str, str]]) -> int:
    """How many objects the ``kind`` initializer downloads from the stand-in; ``env`` is its
    environment, given the stand-in's endpoint."""

    async def scenario() -> int:
        async with serving(state) as endpoint:
            return await s3.download(cfg.from_env(kind, env(endpoint)), backoff=0.0)

    return run(scenario)


def download_error(state: StandIn, tmp_path: Path, **env: str) -> tuple[str, StandIn]:
    async def scenario() -> str:
        async with serving(state) as endpoint:
            config = cfg.from_env(
                "dataset",
                {
                    "STORAGE_URI": "s3://bucket/data",
                    "OUTPUT_PATH": str(tmp_path),
                    "ENDPOINT": endpoint,
                    "REGION": REGION,
                    **env,
                },
            )
            with pytest.raises(InitializerError) as caught:
                await s3.download(config, backoff=0.0)
            return str(caught.value).replace(endpoint, "<endpoint>")

    return run(scenario), state


def test_anonymous_requests_read_a_public_bucket_and_are_refused_by_a_private_one(
    tmp_path: Path,
) -> None:
    public = StandIn({"bucket": {"data/x.txt": b"x"}}, public={"bucket"})

    async def scenario() -> int:
        async with serving(public) as endpoint:
            env = {"STORAGE_URI": "s3://bucket/data", "OUTPUT_PATH": str(tmp_path / "public")}
            return await s3.download(cfg.from_env("dataset", {**env, "ENDPOINT": endpoint}))

    assert run(scenario) == 1
    assert files(tmp_path / "public") == {"x.txt": b"x"}
    assert not any(signed for _, _, signed in public.seen)

    message, _ = download_error(StandIn({"bucket": {"data/x.txt": b"x"}}), tmp_path / "private")
    assert message == (
        "dataset initializer: s3://bucket/data: cannot download from S3 at <endpoint>: "
        "listing s3://bucket/data: 403 AccessDenied: Access Denied"
    )


def test_a_wrong_secret_is_refused_and_never_printed(tmp_path: Path) -> None:
    message, _ = download_error(
        StandIn({"bucket": {"data/x.txt": b"x"}}),
        tmp_path,
        ACCESS_KEY_ID=KEY_ID,
        SECRET_ACCESS_KEY="not-the-secret",
    )
    assert message == (
        "dataset initializer: s3://bucket/data: cannot download from S3 at <endpoint>: "
        "listing s3://bucket/data: 403 SignatureDoesNotMatch: The request signature we "
        "calculated does not match"
    )
    assert "not-the-secret" not in message


def test_transient_failures_are_retried_and_a_short_body_is_fetched_again(
    tmp_path: Path,
) -> None:
    state = StandIn(
        {"bucket": {"data/x.txt": b"0123456789"}},
        faults={"/bucket": ["503"], "/bucket/data/x.txt": ["short", "503"]},
    )

    assert downloaded(state, "dataset", signed_env(tmp_path)) == 1
    assert files(tmp_path) == {"x.txt": b"0123456789"}, "whole, and no .part file left"
    assert [path for path, _, _ in state.seen].count("/bucket/data/x.txt") == 3


@pytest.mark.parametrize(
    ("bucket", "faults", "message"),
    [
        pytest.param(
            {"data/x.txt": b"x"},
            {"/bucket": ["503"] * 4},
            "cannot download from S3 at <endpoint>: listing s3://bucket/data: 503 SlowDown: "
            "Please reduce your request rate. (after 4 tries)",
            id="a failure that does not pass: four tries, then the error",
        ),
        pytest.param(
            {"data2/x.txt": b"x", "data/": b""},
            {},
            "no objects under s3://bucket/data at <endpoint>",
            id="nothing under the prefix (a sibling and a folder marker do not count)",
        ),
        pytest.param(
            {"data/w.bin": b"x"},
            {},
            "no objects under s3://bucket/data at <endpoint> (1 skipped by IGNORE_PATTERNS)",
            id="everything ignored",
        ),
    ],
)
def test_errors_name_the_uri_and_the_endpoint(
    tmp_path: Path, bucket: dict[str, bytes], faults: dict[str, list[str]], message: str
) -> None:
    text, _ = download_error(
        StandIn({"bucket": bucket}, public={"bucket"}, faults=faults),
        tmp_path,
        IGNORE_PATTERNS="*.bin",
    )
    assert text == f"dataset initializer: s3://bucket/data: {message}"


def test_an_endpoint_that_does_not_answer_is_named(tmp_path: Path) -> None:
    async def scenario() -> str:
        config = cfg.from_env(
            "dataset",
            {
                "STORAGE_URI": "s3://bucket/data",
                "OUTPUT_PATH": str(tmp_path),
                "ENDPOINT": "http://127.0.0.1:9",
            },
        )
        with pytest.raises(InitializerError) as caught:
            await s3.download(config, backoff=0.0)
        return str(caught.value)

    message = run(scenario)
    assert message.startswith(
        "dataset initializer: s3://bucket/data: cannot download from S3 at http://127.0.0.1:9: "
        "listing s3://bucket/data: ClientConnectorError: "
    ), message
    assert message.endswith("(after 4 tries)"), message


def test_the_initializer_program_downloads_and_keeps_the_keys_out_of_its_output(
    tmp_path: Path,
) -> None:
    state = StandIn({"bucket": dataset_bucket()})
    out = tmp_path / "model"

    async def scenario() -> tuple[int | None, str]:
        async with serving(state) as endpoint:
            env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            env.update(
                STORAGE_URI="s3://bucket/data/sub",
                OUTPUT_PATH=str(out),
                ENDPOINT=endpoint,
                ACCESS_KEY_ID=KEY_ID,
                SECRET_ACCESS_KEY=SECRET,
                REGION=REGION,
                IGNORE_PATTERNS="*.json",
            )
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "kubetrain.initializers",
                "model",
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
            return process.returncode, output.decode()

    code, output = run(scenario)
    assert code == 0, output
    assert files(out) == {"big.bin": BIG}, "IGNORE_PATTERNS replaces the model's defaults"
    assert "data/sub/big.bin" in output
    assert SECRET not in output
    assert "Signature=" not in output
