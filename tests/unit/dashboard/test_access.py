"""Who may use a running dashboard: every request needs its token; an action (POST) needs it
in a header and must come from the dashboard's own page; every answer keeps the token from
leaking and runs no foreign script."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from kubetrain.dashboard import access

TOKEN = "s3cret-token"
HERE = "127.0.0.1:8765"


def request(
    method: str = "GET", path: str = "/", headers: dict[str, str] | None = None
) -> web.Request:
    return make_mocked_request(method, path, headers={"Host": HERE, **(headers or {})})


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/", {}),
        ("/?token=wrong", {}),
        ("/static/app.js", {}),
        ("/api/stream/jobs?token=", {}),
        ("/api/stream/jobs", {access.TOKEN_HEADER: "s3cret-tokeN"}),
    ],
    ids=["no token", "a wrong token", "an asset", "an empty token", "a header that differs"],
)
def test_a_request_without_the_token_is_refused_with_what_to_open(
    path: str, headers: dict[str, str]
) -> None:
    assert access.refusal(request(path=path, headers=headers), TOKEN) == access.NEEDS_TOKEN


def test_reads_take_the_token_in_the_query_or_the_header() -> None:
    assert access.refusal(request(path=f"/?token={TOKEN}"), TOKEN) is None
    assert access.refusal(request(headers={access.TOKEN_HEADER: TOKEN}), TOKEN) is None


def test_an_action_with_the_token_only_in_the_address_is_refused() -> None:
    """A cross-site form can post to an address, token included; it cannot set a header."""
    found = access.refusal(
        request("POST", f"/api/jobs/ns/PyTorchJob/a/delete?token={TOKEN}"), TOKEN
    )
    assert found == (
        "an action needs the token in the X-Kubetrain-Token header, from the dashboard's page"
    )


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        (
            {"Origin": "http://evil.example"},
            "an action from another origin (http://evil.example) is refused",
        ),
        ({"Sec-Fetch-Site": "cross-site"}, "an action from another site (cross-site) is refused"),
        ({"Sec-Fetch-Site": "same-site"}, "an action from another site (same-site) is refused"),
    ],
    ids=["other origin", "cross-site", "same site, other port"],
)
def test_an_action_from_another_page_is_refused_even_with_the_header(
    headers: dict[str, str], why: str
) -> None:
    headers = {access.TOKEN_HEADER: TOKEN, **headers}
    assert (
        access.refusal(request("POST", "/api/jobs/ns/PyTorchJob/a/delete", headers), TOKEN) == why
    )


def test_an_action_from_the_dashboards_own_page_goes_ahead() -> None:
    headers = {
        access.TOKEN_HEADER: TOKEN,
        "Origin": f"http://{HERE}",
        "Sec-Fetch-Site": "same-origin",
    }
    assert (
        access.refusal(request("POST", "/api/jobs/ns/PyTorchJob/a/delete", headers), TOKEN) is None
    )


def test_answers_keep_the_token_and_the_page_to_themselves() -> None:
    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    middleware = access.guard(TOKEN)
    refused = asyncio.run(middleware(request(), handler))
    allowed = asyncio.run(middleware(request(path=f"/?token={TOKEN}"), handler))
    assert refused.status == 403
    assert allowed.status == 200
    for answer in (refused, allowed):
        assert answer.headers["Referrer-Policy"] == "no-referrer"
        assert answer.headers["Cache-Control"] == "no-store"
        assert answer.headers["X-Frame-Options"] == "DENY"
        policy = answer.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy
        assert "frame-ancestors 'none'" in policy


def test_tokens_are_fresh_and_long() -> None:
    first, second = access.new_token(), access.new_token()
    assert first != second
    assert len(first) >= 40
