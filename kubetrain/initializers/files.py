"""``file://`` and ``pvc://``: copy a file or a directory tree that this container can see into
the initializer's destination.

A directory's contents land in the destination (``file:///data/digits`` fills
``/workspace/dataset`` with what ``digits`` holds); a single file lands in it under its own
name. Files are copied with their modes; an existing destination is merged into, later
copies replacing files of the same name, so a restarted initializer finishes the job.
"""

from __future__ import annotations

import fnmatch
import os
import shutil

from kubetrain.initializers import config as cfg
from kubetrain.initializers import progress

CHUNK = 1 << 20  # bytes copied at once, so that a large file shows progress on the way


def plan(config: cfg.Config) -> list[tuple[str, str]]:
    """The files to copy, as (source, target) pairs, in a stable order."""
    source = cfg.local_source(config)
    if not os.path.exists(source):
        where = " (the claim is mounted at " + cfg.PVC_SOURCE_MOUNT + ")"
        raise config.error(f"{source} does not exist" + (where if config.scheme == "pvc" else ""))
    if os.path.isfile(source):
        return [(source, os.path.join(config.output_path, os.path.basename(source)))]
    ignored = config.ignore_patterns or ()
    pairs = []
    for folder, dirs, names in os.walk(source):
        dirs.sort()
        relative = os.path.relpath(folder, source)
        for name in sorted(names):
            path = os.path.normpath(os.path.join(relative, name))
            if any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(name, p) for p in ignored):
                continue
            pairs.append((os.path.join(folder, name), os.path.join(config.output_path, path)))
    return pairs


def copy(config: cfg.Config) -> int:
    """Copy the source into ``config.output_path``; returns the number of files copied."""
    pairs = plan(config)
    os.makedirs(config.output_path, exist_ok=True)
    bar = progress.Progress(
        f"{config.kind} initializer", len(pairs), sum(os.path.getsize(s) for s, _ in pairs)
    )
    bar.start()
    for source, target in pairs:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        copied = 0
        with open(source, "rb") as reader, open(target, "wb") as writer:
            while chunk := reader.read(CHUNK):
                writer.write(chunk)
                copied += len(chunk)
                bar.advance(len(chunk))
        shutil.copystat(source, target)
        bar.file_done(target, copied)
    bar.finish()
    return len(pairs)
