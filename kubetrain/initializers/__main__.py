"""``python3 -m kubetrain.initializers dataset|model``: the initializer container's program.

Reads the environment contract (:mod:`.config`), fills the destination, and exits 0; on a
problem prints ``error: <what, naming the URI>`` and exits 1 (2 for a wrong command line).
Never prints the access token or keys.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence

from kubetrain.initializers import InitializerError, fetch
from kubetrain.initializers import config as cfg

log = logging.getLogger("kubetrain.initializers")

USAGE = "usage: python3 -m kubetrain.initializers dataset|model"


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0] not in cfg.KINDS:
        print(USAGE, file=sys.stderr)
        return 2
    logging.basicConfig(
        format="%(asctime)s %(levelname)s %(message)s", level=logging.INFO, stream=sys.stdout
    )
    # huggingface_hub's HTTP client (httpx, or its fork httpx2) logs every request at INFO;
    # the progress lines say enough
    for client in ("httpx", "httpx2"):
        logging.getLogger(client).setLevel(logging.WARNING)
    began = time.monotonic()
    try:
        config = cfg.from_env(args[0], os.environ if environ is None else environ)
        log.info("%s initializer: %s -> %s", config.kind, config.storage_uri, config.output_path)
        asyncio.run(fetch.fetch(config))
    except InitializerError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    except OSError as exc:
        print(f"error: {args[0]} initializer: {exc}", file=sys.stderr, flush=True)
        return 1
    log.info("%s initializer: done in %.1fs", config.kind, time.monotonic() - began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
