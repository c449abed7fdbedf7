"""The S3 request signer against AWS's published Signature Version 4 examples (the S3 API
reference, "Signature Calculations for the Authorization Header: Transferring Payload in a
Single Chunk", its GET Object and GET Bucket (List Objects) examples): same keys, time,
region and headers, and the exact signatures AWS prints."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from kubetrain.initializers import sigv4

EXAMPLE_KEYS = sigv4.Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
EXAMPLE_TIME = datetime(2013, 5, 24, 0, 0, 0, tzinfo=timezone.utc)  # 20130524T000000Z
EXAMPLE_HOST = "examplebucket.s3.amazonaws.com"
EXAMPLE_SCOPE = "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"


def authorization(headers: dict[str, str]) -> dict[str, str]:
    """The Authorization header's parts by name (Credential, SignedHeaders, Signature)."""
    algorithm, _, rest = headers["authorization"].partition(" ")
    assert algorithm == "AWS4-HMAC-SHA256"
    return dict(part.strip().split("=", 1) for part in rest.split(","))


def test_aws_get_object_example() -> None:
    headers = sigv4.sign(
        "GET",
        sigv4.canonical_path("/test.txt"),
        "",
        {"Host": EXAMPLE_HOST, "Range": "bytes=0-9"},
        EXAMPLE_KEYS,
        "us-east-1",
        EXAMPLE_TIME,
    )
    assert headers["x-amz-date"] == "20130524T000000Z"
    assert headers["x-amz-content-sha256"] == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert authorization(headers) == {
        "Credential": EXAMPLE_SCOPE,
        "SignedHeaders": "host;range;x-amz-content-sha256;x-amz-date",
        "Signature": "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
    }


def test_aws_list_objects_example() -> None:
    query = sigv4.canonical_query([("prefix", "J"), ("max-keys", "2")])
    assert query == "max-keys=2&prefix=J"
    headers = sigv4.sign(
        "GET", "/", query, {"Host": EXAMPLE_HOST}, EXAMPLE_KEYS, "us-east-1", EXAMPLE_TIME
    )
    assert authorization(headers) == {
        "Credential": EXAMPLE_SCOPE,
        "SignedHeaders": "host;x-amz-content-sha256;x-amz-date",
        "Signature": "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
    }


def test_the_aws_example_canonical_request_and_string_to_sign() -> None:
    """The intermediate values AWS prints for the GET Object example."""
    request, signed = sigv4.canonical_request(
        "GET",
        "/test.txt",
        "",
        {
            "host": EXAMPLE_HOST,
            "range": "bytes=0-9",
            "x-amz-content-sha256": sigv4.EMPTY_SHA256,
            "x-amz-date": "20130524T000000Z",
        },
        sigv4.EMPTY_SHA256,
    )
    assert signed == "host;range;x-amz-content-sha256;x-amz-date"
    assert request == (
        "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
        "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
        "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert sigv4.string_to_sign(EXAMPLE_TIME, "us-east-1", request) == (
        "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"
    )


@pytest.mark.parametrize(
    ("path", "encoded"),
    [
        pytest.param("/photos/2024/cat.jpg", "/photos/2024/cat.jpg", id="slashes stay"),
        pytest.param("/a b+c", "/a%20b%2Bc", id="space and plus are encoded"),
        pytest.param("/x~y_z-1.2", "/x~y_z-1.2", id="unreserved characters stay"),
        pytest.param("/données/é", "/donn%C3%A9es/%C3%A9", id="UTF-8 bytes, upper-case hex"),
        pytest.param("/a%2Fb", "/a%252Fb", id="a percent sign in a key is encoded once"),
        pytest.param("key", "/key", id="the leading slash is added"),
    ],
)
def test_paths_are_encoded_once_as_s3_wants(path: str, encoded: str) -> None:
    assert sigv4.canonical_path(path) == encoded


@pytest.mark.parametrize(
    ("params", "query"),
    [
        pytest.param(
            [("prefix", "data/"), ("list-type", "2")],
            "list-type=2&prefix=data%2F",
            id="sorted by name; a slash in a value is encoded",
        ),
        pytest.param(
            [("continuation-token", "1/a+b="), ("prefix", "")],
            "continuation-token=1%2Fa%2Bb%3D&prefix=",
            id="a token's reserved characters are encoded; an empty value keeps its =",
        ),
    ],
)
def test_query_strings_are_canonical(params: list[tuple[str, str]], query: str) -> None:
    assert sigv4.canonical_query(params) == query


def test_a_session_token_is_sent_and_signed_and_no_secret_shows_in_a_repr() -> None:
    keys = sigv4.Credentials("AKID", "very-secret", "session-token-value")
    headers = sigv4.sign("GET", "/k", "", {"host": "h"}, keys, "eu-west-1", EXAMPLE_TIME)
    assert headers["x-amz-security-token"] == "session-token-value"
    assert authorization(headers)["SignedHeaders"] == (
        "host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
    )
    assert "very-secret" not in repr(keys)
    assert "session-token-value" not in repr(keys)
    assert "very-secret" not in headers["authorization"]


def test_a_request_without_host_is_not_signed() -> None:
    with pytest.raises(ValueError, match="host"):
        sigv4.sign("GET", "/k", "", {}, EXAMPLE_KEYS, "us-east-1", EXAMPLE_TIME)
