"""The initializers' environment contract (upstream's ``pkg/initializers``): what a dataset or
model initializer is told to fetch, and where it puts it.

Every field is read from the upper-cased env variable of its name; an empty value counts as
unset, as upstream's ``get_config_from_env``. Pure: the environment is passed in.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
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
# Upstream's model download filters (utils.MODEL_IGNORE_PATTERNS and the allow list).
MODEL_ALLOW_PATTERNS: Final = ("*.json", "*.safetensors", "*.model", "*.txt", "*.gguf")
MODEL_IGNORE_PATTERNS: Final = ("*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth")


@dataclass(frozen=True)
class Config:
    kind: str  # "dataset" or "model"
    storage_uri: str
    output_path: str
    access_token: str | None = None
    ignore_patterns: tuple[str, ...] | None = None
    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    region: str | None = None

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
    config = Config(
        kind=kind,
        storage_uri=uri,
        output_path=_value(environ, OUTPUT_PATH_ENV) or DEFAULT_OUTPUT[kind],
        access_token=_value(environ, "ACCESS_TOKEN"),
        ignore_patterns=(
            tuple(p.strip() for p in patterns.split(",") if p.strip()) if patterns else None
        ),
        endpoint=_value(environ, "ENDPOINT"),
        access_key_id=_value(environ, "ACCESS_KEY_ID"),
        secret_access_key=_value(environ, "SECRET_ACCESS_KEY"),
        region=_value(environ, "REGION"),
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
