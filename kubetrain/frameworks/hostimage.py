"""The host image: the one image name that means "run on this machine, in the Python environment
kubetrain runs in", not an image to pull.

The local node runs every pod as host processes, so any image name works there; but the
commands that know which directory a user typed them in (``kubetrain submit``, ``kubetrain run
-f``) give such a pod that directory as its working directory only when its image is this one,
since a real image brings its own files and ``WORKDIR``. ``submit`` writes it when no
``--image`` is given, and the examples and the docs use it. It lives under ``kubetrain.local``,
a registry name that resolves nowhere, so a cluster or a container engine fails on it with a
clear "cannot pull" instead of fetching someone else's image.

:data:`ALIASES` are earlier names still read as it: ``kubetrain/python:local`` is the one the
examples used, so users' manifests copied from them keep their meaning.

Owns: the name and :func:`is_host_image`. Pure: no I/O.
"""

from __future__ import annotations

from typing import Final

HOST_IMAGE: Final = "kubetrain.local/host-python:latest"
ALIASES: Final = ("kubetrain/python:local",)
DEFAULT_REGISTRY: Final = "docker.io/"
DEFAULT_TAG: Final = ":latest"


def normalise(image: str) -> str:
    """``image`` as a container engine reads it: without Docker Hub's implicit registry
    (``docker.io/`` and ``docker.io/library/``) and with ``:latest`` when it has neither tag
    nor digest."""
    name = image.strip()
    if name.startswith(DEFAULT_REGISTRY):
        name = name.removeprefix(DEFAULT_REGISTRY).removeprefix("library/")
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in last:
        name += DEFAULT_TAG
    return name


_NAMES: Final = frozenset(normalise(n) for n in (HOST_IMAGE, *ALIASES))


def is_host_image(image: object) -> bool:
    """Whether ``image`` names the host image (its alias and spellings included)."""
    return isinstance(image, str) and bool(image.strip()) and normalise(image) in _NAMES
