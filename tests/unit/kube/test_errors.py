"""From a failed response to kubetrain's error type: the HTTP status picks the class (409 is
split by the Status reason), the server's Status body is kept, and a body that is not a Status
is clipped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubetrain import kube
from kubetrain.errors import KubetrainError
from kubetrain.kube import errors


def status_body(code: int, reason: str, message: str = "m", **details: Any) -> bytes:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (400, "BadRequest", kube.BadRequest),
        (401, "Unauthorized", kube.Unauthorized),
        (403, "Forbidden", kube.Forbidden),
        (404, "NotFound", kube.NotFound),
        (409, "AlreadyExists", kube.AlreadyExists),
        (409, "Conflict", kube.Conflict),
        (410, "Expired", kube.Gone),
        (410, "Gone", kube.Gone),
        (422, "Invalid", kube.Invalid),
        (429, "TooManyRequests", kube.TooManyRequests),
        (500, "InternalError", kube.ServerError),
        (503, "ServiceUnavailable", kube.ServerError),
        (504, "Timeout", kube.ServerError),
        (405, "MethodNotAllowed", kube.ApiError),
        (415, "UnsupportedMediaType", kube.ApiError),
    ],
    ids=lambda v: str(v) if not isinstance(v, type) else v.__name__,
)
def test_the_http_status_picks_the_error_class(
    code: int, reason: str, expected: type[kube.ApiError]
) -> None:
    error = errors.from_response(code, status_body(code, reason, "it failed"))
    assert type(error) is expected
    assert isinstance(error, KubetrainError)
    assert (error.code, error.reason, error.message) == (code, reason, "it failed")
    assert error.status["kind"] == "Status"


def test_already_exists_and_conflict_are_not_caught_by_each_other() -> None:
    assert not issubclass(kube.AlreadyExists, kube.Conflict)
    assert not issubclass(kube.Conflict, kube.AlreadyExists)


def test_invalid_keeps_the_servers_causes() -> None:
    causes = [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.x"}]
    body = status_body(422, "Invalid", 'ConfigMap "a" is invalid', name="a", causes=causes)
    error = errors.from_response(422, body)
    assert isinstance(error, kube.Invalid)
    assert error.causes == causes
    assert error.details["name"] == "a"
    assert str(error) == '422 Invalid: ConfigMap "a" is invalid'


def test_retry_after_comes_from_the_status_details() -> None:
    error = errors.from_response(429, status_body(429, "TooManyRequests", retryAfterSeconds=3))
    assert error.retry_after == 3.0
    assert errors.from_response(500, status_body(500, "InternalError")).retry_after is None


def test_a_watch_error_event_is_classified_by_the_status_code_inside_it() -> None:
    event_object = json.loads(status_body(410, "Expired", "too old resource version: 5 (9)"))
    error = errors.from_status(event_object)
    assert isinstance(error, kube.Gone)
    assert error.message == "too old resource version: 5 (9)"


def test_a_body_that_is_not_a_status_is_clipped_not_kept() -> None:
    page = b"<html>" + b"x" * 5000 + b"</html>"
    error = errors.from_response(502, page, "Bad Gateway")
    assert isinstance(error, kube.ServerError)
    assert len(error.message) <= errors.MAX_TEXT + 3
    assert error.reason == "Bad Gateway"
    assert error.status == {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 502}


def test_an_empty_body_still_says_what_happened() -> None:
    error = errors.from_response(404, b"", "Not Found")
    assert isinstance(error, kube.NotFound)
    assert error.message == "Not Found"
