"""The S3 source's pure parts: the env contract (upstream's variables, then the AWS SDKs'),
where a bucket is addressed, which keys land where, credentials, and the XML S3 answers with.
Downloads against a stand-in S3 server are in tests/integration/initializers."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrain.initializers import InitializerError, s3
from kubetrain.initializers import config as cfg


def configured(kind: str = "dataset", **env: str) -> cfg.Config:
    return cfg.from_env(kind, {"STORAGE_URI": "s3://bucket/data", **env})


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param(
            {
                "ENDPOINT": "http://minio:9000",
                "ACCESS_KEY_ID": "k",
                "SECRET_ACCESS_KEY": "s",
                "REGION": "eu-1",
                "AWS_ENDPOINT_URL": "http://other",
                "AWS_ACCESS_KEY_ID": "aws-k",
                "AWS_SECRET_ACCESS_KEY": "aws-s",
                "AWS_SESSION_TOKEN": "aws-t",
                "AWS_REGION": "us-west-2",
            },
            ("http://minio:9000", "eu-1", "k", "s", None),
            id="upstream's variables win; their keys take no AWS session token",
        ),
        pytest.param(
            {
                "AWS_ENDPOINT_URL": "http://generic",
                "AWS_ENDPOINT_URL_S3": "http://s3-only",
                "AWS_ACCESS_KEY_ID": "aws-k",
                "AWS_SECRET_ACCESS_KEY": "aws-s",
                "AWS_SESSION_TOKEN": "aws-t",
                "AWS_REGION": "us-west-2",
                "AWS_DEFAULT_REGION": "ap-south-1",
            },
            ("http://s3-only", "us-west-2", "aws-k", "aws-s", "aws-t"),
            id="the AWS SDKs' variables fill in, the service's endpoint before the generic one",
        ),
        pytest.param(
            {"AWS_DEFAULT_REGION": "ap-south-1", "AWS_ENDPOINT_URL": "http://generic"},
            ("http://generic", "ap-south-1", None, None, None),
            id="AWS_DEFAULT_REGION last; no keys at all",
        ),
        pytest.param(
            {"ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "aws-s"},
            (None, None, "k", None, None),
            id="a half pair of upstream's is not completed from AWS's",
        ),
    ],
)
def test_the_s3_env_contract(
    env: dict[str, str], expected: tuple[str | None, str | None, str | None, str | None, str | None]
) -> None:
    config = configured(**env)
    assert (
        config.endpoint,
        config.region,
        config.access_key_id,
        config.secret_access_key,
        config.session_token,
    ) == expected


def test_secrets_stay_out_of_the_config_repr() -> None:
    config = configured(
        ACCESS_KEY_ID="key-id", SECRET_ACCESS_KEY="the-secret", ACCESS_TOKEN="hf-token"
    )
    text = repr(config)
    assert "key-id" in text
    assert "the-secret" not in text
    assert "hf-token" not in text
    aws = configured(
        AWS_ACCESS_KEY_ID="a", AWS_SECRET_ACCESS_KEY="b-secret", AWS_SESSION_TOKEN="c-token"
    )
    assert "b-secret" not in repr(aws)
    assert "c-token" not in repr(aws)


@pytest.mark.parametrize(
    ("uri", "env", "host", "bucket_path", "key_path"),
    [
        pytest.param(
            "s3://data-bucket/x",
            {},
            "data-bucket.s3.us-east-1.amazonaws.com",
            "/",
            "/a%20b/c.txt",
            id="AWS: virtual-hosted, us-east-1 by default",
        ),
        pytest.param(
            "s3://data.bucket/x",
            {"REGION": "eu-west-1"},
            "s3.eu-west-1.amazonaws.com",
            "/data.bucket",
            "/data.bucket/a%20b/c.txt",
            id="AWS: path-style for a bucket with dots (its TLS name would not match)",
        ),
        pytest.param(
            "s3://b/x",
            {"ENDPOINT": "http://127.0.0.1:9000"},
            "127.0.0.1:9000",
            "/b",
            "/b/a%20b/c.txt",
            id="an endpoint: path-style, its port in the host",
        ),
        pytest.param(
            "s3://b/x",
            {"ENDPOINT": "https://storage.example.com:443/s3/"},
            "storage.example.com",
            "/s3/b",
            "/s3/b/a%20b/c.txt",
            id="an endpoint with a path: kept; the scheme's default port left out",
        ),
        pytest.param(
            "s3://b/x",
            {"ENDPOINT": "http://[::1]:9000"},
            "[::1]:9000",
            "/b",
            "/b/a%20b/c.txt",
            id="an IPv6 endpoint",
        ),
    ],
)
def test_where_a_bucket_is_addressed(
    uri: str, env: dict[str, str], host: str, bucket_path: str, key_path: str
) -> None:
    where = s3.location(cfg.from_env("dataset", {"STORAGE_URI": uri, **env}))
    assert where.host == host
    assert where.path() == bucket_path
    assert where.path("a b/c.txt") == key_path


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param(
            {"ENDPOINT": "minio:9000"},
            "S3 endpoint 'minio:9000' is not a URL; accepted: http(s)://<host>[:<port>] (keys go "
            "in ACCESS_KEY_ID and SECRET_ACCESS_KEY)",
            id="an endpoint without a scheme",
        ),
        pytest.param(
            {"ENDPOINT": "http://minio:nine"},
            "S3 endpoint 'http://minio:nine' is not a URL; accepted: http(s)://<host>[:<port>] "
            "(keys go in ACCESS_KEY_ID and SECRET_ACCESS_KEY)",
            id="an endpoint whose port is not a number",
        ),
        pytest.param(
            {"ENDPOINT": "http://user:hunter2@minio:9000"},
            "S3 endpoint '<a URL with credentials in it>' is not a URL; accepted: "
            "http(s)://<host>[:<port>] (keys go in ACCESS_KEY_ID and SECRET_ACCESS_KEY)",
            id="an endpoint with keys in it is refused without showing them",
        ),
        pytest.param(
            {"ACCESS_KEY_ID": "k"},
            "ACCESS_KEY_ID is set but SECRET_ACCESS_KEY is not; accepted: both (signed "
            "requests) or neither (anonymous requests)",
            id="a key without its secret",
        ),
        pytest.param(
            {"AWS_SECRET_ACCESS_KEY": "s"},
            "SECRET_ACCESS_KEY is set but ACCESS_KEY_ID is not; accepted: both (signed "
            "requests) or neither (anonymous requests)",
            id="a secret without its key",
        ),
        pytest.param(
            {"ROLE_ARN": "arn:aws:iam::1:role/r"},
            "ROLE_ARN (assuming a role) is not supported; accepted: ACCESS_KEY_ID and "
            "SECRET_ACCESS_KEY, or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and "
            "AWS_SESSION_TOKEN holding the role's temporary credentials",
            id="a role to assume is refused, not ignored",
        ),
    ],
)
def test_configuration_errors_name_the_uri_and_what_is_accepted(
    env: dict[str, str], message: str
) -> None:
    config = configured(**env)

    def check() -> None:
        s3.location(config)
        s3.credentials(config)

    with pytest.raises(InitializerError) as caught:
        check()
    assert str(caught.value) == f"dataset initializer: s3://bucket/data: {message}"


def test_no_keys_means_anonymous_requests() -> None:
    assert s3.credentials(configured()) is None
    keys = s3.credentials(configured(AWS_ACCESS_KEY_ID="a", AWS_SECRET_ACCESS_KEY="b"))
    assert keys is not None
    assert (keys.access_key_id, keys.secret_access_key) == ("a", "b")


@pytest.mark.parametrize(
    ("prefix", "key", "relative"),
    [
        pytest.param("data", "data", "data", id="the prefix is one object: its base name"),
        pytest.param("a/b.csv", "a/b.csv", "b.csv", id="a nested object: its base name"),
        pytest.param("data", "data/x/y.csv", "x/y.csv", id="under the folder"),
        pytest.param("data/", "data/x.csv", "x.csv", id="a folder with its slash"),
        pytest.param("data", "data2/x.csv", None, id="a sibling that shares the letters"),
        pytest.param("data", "data.csv", None, id="a sibling file that shares the letters"),
        pytest.param("", "x/y.csv", "x/y.csv", id="the whole bucket"),
        pytest.param("data", "data//x.csv", "x.csv", id="a doubled slash"),
        pytest.param("data/", "data/", None, id="the folder marker itself"),
    ],
)
def test_which_keys_land_where(prefix: str, key: str, relative: str | None) -> None:
    assert s3.relative_path(prefix, key) == relative


def test_targets_skip_markers_and_ignored_files_and_refuse_escapes(tmp_path: Path) -> None:
    out = str(tmp_path)
    model = cfg.from_env("model", {"STORAGE_URI": "s3://b/llm", "OUTPUT_PATH": out})
    assert s3.target(model, "llm", "llm/config.json") == f"{out}/config.json"
    assert s3.target(model, "llm", "llm/sub/") is None, "a folder marker"
    assert s3.target(model, "llm", "llm/model.bin") is None, "upstream's model ignore patterns"
    dataset = cfg.from_env(
        "dataset", {"STORAGE_URI": "s3://b/d", "OUTPUT_PATH": out, "IGNORE_PATTERNS": "*.tmp"}
    )
    assert s3.target(dataset, "d", "d/model.bin") == f"{out}/model.bin", "datasets keep .bin"
    assert s3.target(dataset, "d", "d/x/part.tmp") is None
    with pytest.raises(InitializerError, match="would land outside"):
        s3.target(dataset, "d", "d/../../escape")


NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'


@pytest.mark.parametrize(
    ("body", "objects", "token"),
    [
        pytest.param(
            f"<ListBucketResult {NS}><IsTruncated>true</IsTruncated>"
            "<EncodingType>url</EncodingType>"
            "<Contents><Key>data/a+b%2Bc.txt</Key><Size>3</Size></Contents>"
            "<Contents><Key>data/%C3%A9</Key><Size>0</Size></Contents>"
            "<NextContinuationToken>tok/1=</NextContinuationToken></ListBucketResult>",
            [s3.Object("data/a b+c.txt", 3), s3.Object("data/é", 0)],
            "tok/1=",
            id="url-encoded keys are decoded; a truncated page names the next",
        ),
        pytest.param(
            "<ListBucketResult><IsTruncated>false</IsTruncated>"
            "<Contents><Key>data/50%+1.txt</Key><Size>1</Size></Contents>"
            "<NextContinuationToken>ignored</NextContinuationToken></ListBucketResult>",
            [s3.Object("data/50%+1.txt", 1)],
            None,
            id="a service that ignored encoding-type: keys as they are; the last page",
        ),
        pytest.param(
            f"<ListBucketResult {NS}><IsTruncated>false</IsTruncated></ListBucketResult>",
            [],
            None,
            id="nothing under the prefix",
        ),
    ],
)
def test_listing_pages_are_read(body: str, objects: list[s3.Object], token: str | None) -> None:
    assert s3.parse_listing(body.encode()) == (objects, token)


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        pytest.param(
            b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
            "403 AccessDenied: Access Denied",
            id="S3's error code and message",
        ),
        pytest.param(b"<Error><Code>NoSuchBucket</Code></Error>", "403 NoSuchBucket", id="code"),
        pytest.param(b"", "403 Forbidden", id="no body: the status line"),
        pytest.param(b"<html>oops", "403 Forbidden", id="not XML"),
    ],
)
def test_error_details_come_from_s3_s_error_document(body: bytes, detail: str) -> None:
    assert s3.error_detail(403, "Forbidden", body) == detail
