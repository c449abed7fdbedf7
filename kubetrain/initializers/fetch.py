"""Which source fills the destination, by the URI's scheme.

Must not: block the event loop; the copies and the Hugging Face and S3 downloads are blocking
library calls and run in a worker thread.
"""

from __future__ import annotations

import asyncio

from kubetrain.initializers import config as cfg
from kubetrain.initializers import files, huggingface, s3


async def fetch(config: cfg.Config) -> None:
    """Fill ``config.output_path`` from ``config.storage_uri``."""
    if config.scheme == "hf":
        await asyncio.to_thread(huggingface.download, config)
    elif config.scheme == "s3":
        await asyncio.to_thread(s3.download, config)
    else:  # file, pvc (from_env admits no other scheme)
        await asyncio.to_thread(files.copy, config)
