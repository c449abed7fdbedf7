"""``s3://<bucket>/<prefix>``: every object under a prefix of an S3 (or S3-compatible) bucket,
through ``boto3``.

``ENDPOINT`` names the service (MinIO, Ceph, a cloud region's own; default: AWS),
``ACCESS_KEY_ID`` / ``SECRET_ACCESS_KEY`` / ``REGION`` the credentials and region (default:
boto3's own chain: env, config files, instance role). An object lands at its key relative to
the prefix; a prefix that is one object's whole key lands under its base name. Objects that
match ``IGNORE_PATTERNS`` (for models, upstream's default duplicates) are skipped, and a key
that would land outside the destination is refused.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any
from urllib.parse import urlparse

from kubetrain.initializers import InitializerError
from kubetrain.initializers import config as cfg

INSTALL_HINT = "needs the boto3 package; accepted: pip install boto3"


def _target(config: cfg.Config, prefix: str, key: str) -> str | None:
    """Where ``key`` lands, or None when it is skipped."""
    relative = key[len(prefix) :].lstrip("/") if prefix else key
    relative = relative or os.path.basename(key)
    patterns = config.ignore_patterns
    if patterns is None and config.kind == cfg.MODEL:
        patterns = cfg.MODEL_IGNORE_PATTERNS
    name = os.path.basename(relative)
    if any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in patterns or ()):
        return None
    root = os.path.abspath(config.output_path)
    target = os.path.abspath(os.path.join(root, relative))
    if os.path.commonpath([root, target]) != root:
        raise config.error(f"object key {key!r} would land outside {config.output_path}")
    return target


def download(config: cfg.Config) -> int:
    """Download every object under the prefix; returns how many."""
    parsed = urlparse(config.storage_uri)
    bucket, prefix = parsed.netloc, parsed.path.lstrip("/")
    if not bucket:
        raise config.error("an s3:// URI names a bucket: s3://<bucket>/<prefix>")
    try:
        import boto3
    except ImportError as exc:
        raise config.error(INSTALL_HINT) from exc
    where = f" at {config.endpoint}" if config.endpoint else ""
    try:
        client: Any = boto3.client(
            "s3",
            endpoint_url=config.endpoint,
            aws_access_key_id=config.access_key_id,
            aws_secret_access_key=config.secret_access_key,
            region_name=config.region,
        )
        count = 0
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents") or []:
                key = str(item["Key"])
                if key.endswith("/"):
                    continue  # a folder marker
                target = _target(config, prefix, key)
                if target is None:
                    continue
                os.makedirs(os.path.dirname(target), exist_ok=True)
                client.download_file(bucket, key, target)
                count += 1
    except InitializerError:
        raise
    except Exception as exc:  # botocore's errors have several roots; all mean the same
        raise config.error(
            f"cannot download from S3{where}: {type(exc).__name__}: {cfg.one_line(exc)}"
        ) from exc
    if count == 0:
        raise config.error(f"no objects under s3://{bucket}/{prefix}{where}")
    return count
