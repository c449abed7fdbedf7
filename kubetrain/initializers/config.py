"""The initializers' environment contract (upstream's ``pkg/initializers``): what a dataset or
model initializer is told to fetch, and where it puts it.

Every field is read from the upper-cased env variable of its name; an empty value counts as
unset, as upstream's ``get_config_from_env``. For ``s3://`` the AWS SDKs' variables fill what
upstream's leave unset: ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``, ``AWS_REGION`` /
``AWS_DEFAULT_REGION``, and ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_SESSION_TOKEN`` when neither ``ACCESS_KEY_ID`` nor ``SECRET_ACCESS_KEY`` is set.
Pure: the environment is passed in. Secrets stay out of the ``repr``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlparse

from kubetrain.initializers import InitializerError

DATASET: Final = "dataset"
MODEL: Final = "model"
KINDS: Final = (DATASET, MODEL)
WORKSPACE: Final = "/workspace"
DEFAULT_OUTPUT: Final = {DATASET: f"{WORKSPACE}/dataset", MODEL: f"{WORKSPACE}/model"}
STORAGE_URI_ENV: Final = "STORAGE_URI"
OUTPUT_PATH_ENV: Final = "OUTPUT_PATH"
SCHEMES: Final = ("hf", "s3", "file", "pvc")
# Where the controller mounts the claim a pvc:// URI names (the TrainJob JobSet plugin's
# PVC_SOURCE_MOUNT).
PVC_SOURCE_MOUNT: Final = "/mnt/source"
# Where an s3:// source is served and in which region: upstream's variable first, then the
# AWS SDKs' own, as OpenDAL (upstream's S3 library) also reads them.
ENDPOINT_ENVS: Final = ("ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
REGION_ENVS: Final = ("REGION", "AWS_REGION", "AWS_DEFAULT_REGION")
# Upstream's model download filters (utils.MODEL_IGNORE_PATTERNS and the allow list).
MODEL_ALLOW_PATTERNS: Final = ("*.json", "*.safetensors", "*.model", "*.txt", "*.gguf")
MODEL_IGNORE_PATTERNS: Final = ("*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth")


@dataclass(frozen=True)
class Config:
    kind: str  # "dataset" or "model"
    storage_uri: str
    output_path: str
    access_token: str | None = field(default=None, repr=False)
    ignore_patterns: tuple[str, ...] | None = None
    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    region: str | None = None
    session_token: str | None = field(default=None, repr=False)
    role_arn: str | None = None

    @property
    def scheme(self) -> str:
        return urlparse(self.storage_uri).scheme

    def error(self, problem: str) -> InitializerError:
        """An error that names this initializer and its URI."""
        return InitializerError(f"{self.kind} initializer: {self.storage_uri}: {problem}")


def one_line(error: BaseException) -> str:
    """A library's error text on one line (some span paragraphs), for the error line."""
    return " ".join(str(error).split())


def _value(environ: Mapping[str, str], name: str) -> str | None:
    return environ.get(name) or None


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((v for v in (_value(environ, n) for n in names) if v is not None), None)


def _s3_credentials(environ: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """Upstream's pair when either half is set (without a session token, as the AWS SDKs
    take keys given explicitly), else the AWS SDKs' variables with their session token."""
    upstream = (_value(environ, "ACCESS_KEY_ID"), _value(environ, "SECRET_ACCESS_KEY"))
    if any(upstream):
        return upstream[0], upstream[1], None
    return (
        _value(environ, "AWS_ACCESS_KEY_ID"),
        _value(environ, "AWS_SECRET_ACCESS_KEY"),
        _value(environ, "AWS_SESSION_TOKEN"),
    )


def from_env(kind: str, environ: Mapping[str, str]) -> Config:
    """The configuration of the ``kind`` initializer; raises :class:`InitializerError` for a
    missing URI or a scheme it cannot fetch."""
    if kind not in KINDS:
        raise InitializerError(f"initializer kind {kind!r}; accepted: {', '.join(KINDS)}")
    uri = _value(environ, STORAGE_URI_ENV)
    if uri is None:
        raise InitializerError(
            f"{kind} initializer: {STORAGE_URI_ENV} is not set; accepted: a URI of "
            + ", ".join(f"{s}://" for s in SCHEMES)
        )
    patterns = _value(environ, "IGNORE_PATTERNS")
    key_id, secret, token = _s3_credentials(environ)
    config = Config(
        kind=kind,
        storage_uri=uri,
        output_path=_value(environ, OUTPUT_PATH_ENV) or DEFAULT_OUTPUT[kind],
        access_token=_value(environ, "ACCESS_TOKEN"),
        ignore_patterns=(
            tuple(p.strip() for p in patterns.split(",") if p.strip()) if patterns else None
        ),
        endpoint=_first(environ, ENDPOINT_ENVS),
        access_key_id=key_id,
        secret_access_key=secret,
        region=_first(environ, REGION_ENVS),
        session_token=token,
        role_arn=_value(environ, "ROLE_ARN"),
    )
    if config.scheme not in SCHEMES:
        raise config.error(
            f"unsupported {kind} storage URI scheme {config.scheme!r}; accepted: "
            + ", ".join(f"{s}://" for s in SCHEMES)
        )
    return config


def local_source(config: Config) -> str:
    """The path a ``file://`` or ``pvc://`` URI names, as this container sees it."""
    parsed = urlparse(config.storage_uri)
    if config.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise config.error("a file:// URI names a path on this node: file:///<path>")
        return parsed.path
    if not parsed.netloc:
        raise config.error("a pvc:// URI names a claim: pvc://<claim>/<path>")
    return os.path.join(PVC_SOURCE_MOUNT, parsed.path.lstrip("/"))
