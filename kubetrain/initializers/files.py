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


def copy(config: cfg.Config) -> int:
    """Copy the source into ``config.output_path``; returns the number of files copied."""
    source = cfg.local_source(config)
    if not os.path.exists(source):
        where = " (the claim is mounted at " + cfg.PVC_SOURCE_MOUNT + ")"
        raise config.error(f"{source} does not exist" + (where if config.scheme == "pvc" else ""))
    os.makedirs(config.output_path, exist_ok=True)
    ignored = config.ignore_patterns or ()
    if os.path.isfile(source):
        shutil.copy2(source, os.path.join(config.output_path, os.path.basename(source)))
        return 1
    copied = 0
    for folder, dirs, names in os.walk(source):
        dirs.sort()
        relative = os.path.relpath(folder, source)
        target = os.path.normpath(os.path.join(config.output_path, relative))
        os.makedirs(target, exist_ok=True)
        for name in sorted(names):
            path = os.path.normpath(os.path.join(relative, name))
            if any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(name, p) for p in ignored):
                continue
            shutil.copy2(os.path.join(folder, name), os.path.join(target, name))
            copied += 1
    return copied
