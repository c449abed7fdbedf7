"""Which source fills the destination, by the URI's scheme."""

from __future__ import annotations

from kubetrain.initializers import config as cfg
from kubetrain.initializers import files, huggingface, s3


def fetch(config: cfg.Config) -> None:
    """Fill ``config.output_path`` from ``config.storage_uri``."""
    if config.scheme == "hf":
        huggingface.download(config)
    elif config.scheme == "s3":
        s3.download(config)
    else:  # file, pvc (from_env admits no other scheme)
        files.copy(config)
