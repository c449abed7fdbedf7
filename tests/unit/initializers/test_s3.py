"""The S3 source's pure parts: the env contract (upstream's variables, then the AWS SDKs'),
where a bucket is addressed, which keys land where, credentials, and a transfer cut short.
Downloads against a real S3-compatible server are in tests/integration/initializers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubetrain.initializers import InitializerError, progress, s3
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
    ("uri", "env", "expected"),
    [
        pytest.param(
            "s3://data-bucket/x",
            {},
            s3.Location("data-bucket", "s3.amazonaws.com", True, None),
            id="AWS; the client finds the bucket's region when none is given",
        ),
        pytest.param(
            "s3://b/x",
            {"ENDPOINT": "http://127.0.0.1:9000", "REGION": "eu-west-1"},
            s3.Location("b", "127.0.0.1:9000", False, "eu-west-1"),
            id="an endpoint: its port in the host, plain HTTP",
        ),
        pytest.param(
            "s3://b/x",
            {"ENDPOINT": "https://storage.example.com:443/"},
            s3.Location("b", "storage.example.com", True, None),
            id="the scheme's default port left out; a bare slash is no path",
        ),
        pytest.param(
            "s3://b/x",
            {"ENDPOINT": "http://[::1]:9000"},
            s3.Location("b", "[::1]:9000", False, None),
            id="an IPv6 endpoint",
        ),
    ],
)
def test_where_a_bucket_is_addressed(uri: str, env: dict[str, str], expected: s3.Location) -> None:
    assert s3.location(cfg.from_env("dataset", {"STORAGE_URI": uri, **env})) == expected


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param(
            {"ENDPOINT": "minio:9000"},
            "S3 endpoint 'minio:9000' is not a URL of a service; accepted: "
            "http(s)://<host>[:<port>] (keys go in ACCESS_KEY_ID and SECRET_ACCESS_KEY)",
            id="an endpoint without a scheme",
        ),
        pytest.param(
            {"ENDPOINT": "http://minio:nine"},
            "S3 endpoint 'http://minio:nine' is not a URL of a service; accepted: "
            "http(s)://<host>[:<port>] (keys go in ACCESS_KEY_ID and SECRET_ACCESS_KEY)",
            id="an endpoint whose port is not a number",
        ),
        pytest.param(
            {"ENDPOINT": "http://user:hunter2@minio:9000"},
            "S3 endpoint '<a URL with credentials in it>' is not a URL of a service; accepted: "
            "http(s)://<host>[:<port>] (keys go in ACCESS_KEY_ID and SECRET_ACCESS_KEY)",
            id="an endpoint with keys in it is refused without showing them",
        ),
        pytest.param(
            {"ENDPOINT": "https://storage.example.com/s3"},
            "S3 endpoint 'https://storage.example.com/s3' is not a URL of a service; accepted: "
            "http(s)://<host>[:<port>] (keys go in ACCESS_KEY_ID and SECRET_ACCESS_KEY)",
            id="an endpoint with a path (S3 clients address buckets at the service's root)",
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
            "ROLE_ARN is set without keys to assume it with; accepted: ACCESS_KEY_ID and "
            "SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) beside it",
            id="a role without keys to assume it with",
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
    keys = s3.credentials(
        configured(AWS_ACCESS_KEY_ID="a", AWS_SECRET_ACCESS_KEY="b", AWS_SESSION_TOKEN="t")
    )
    assert keys == s3.Keys("a", "b", "t", None)
    role = s3.credentials(configured(ACCESS_KEY_ID="a", SECRET_ACCESS_KEY="b", ROLE_ARN="arn"))
    assert role == s3.Keys("a", "b", None, "arn"), "the role's own token signs"
    assert "b" not in repr(role).replace("arn", "")


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


class Body:
    """A GetObject response whose body is ``data``, cut after ``cut`` bytes when given."""

    def __init__(self, data: bytes, cut: int | None = None) -> None:
        self.data, self.cut, self.closed = data, cut, False

    def stream(self, size: int) -> Iterator[bytes]:
        import urllib3

        sent = self.data if self.cut is None else self.data[: self.cut]
        for start in range(0, len(sent), size):
            yield sent[start : start + size]
        if self.cut is not None:
            raise urllib3.exceptions.ProtocolError("Connection broken: IncompleteRead")

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


class Api:
    """``get_object`` answering with the queued bodies in turn."""

    def __init__(self, *bodies: Body) -> None:
        self.bodies = list(bodies)
        self.calls = 0

    def get_object(self, bucket: str, key: str) -> Body:
        self.calls += 1
        return self.bodies.pop(0)


def test_a_transfer_cut_short_is_tried_again_and_leaves_no_part_file(tmp_path: Path) -> None:
    data = b"0123456789" * 1000
    api = Api(Body(data, cut=4000), Body(data[:10]), Body(data))
    where = s3.Location("b", "h", False)
    bar = progress.Progress("dataset initializer", 1, len(data))
    path = tmp_path / "sub" / "x.bin"

    size = s3._save(api, where, s3.Object("k", len(data)), str(path), bar)  # type: ignore[arg-type]

    assert size == len(data)
    assert path.read_bytes() == data
    assert api.calls == 3, "a dropped connection, then a short body, then the whole object"
    assert bar.bytes_done == len(data), "what the failed tries brought is taken back"
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.bin"]


def test_a_transfer_that_keeps_failing_is_reported(tmp_path: Path) -> None:
    api = Api(*(Body(b"abc", cut=1) for _ in range(s3.RETRIES + 1)))
    where = s3.Location("b", "h", False)
    bar = progress.Progress("dataset initializer", 1, 3)

    with pytest.raises(s3._Failed) as caught:
        s3._save(api, where, s3.Object("k", 3), str(tmp_path / "x"), bar)  # type: ignore[arg-type]

    assert str(caught.value) == ("s3://b/k: ProtocolError: Connection broken: IncompleteRead")
    assert api.calls == s3.RETRIES + 1
    assert list(tmp_path.iterdir()) == []
