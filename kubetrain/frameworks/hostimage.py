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

A node given a container engine runs every other image in a container of that image, except
upstream's helper images whose work the node itself stands in for (:func:`runs_on_host`): the
PyTorch init container waits for the master's name with ``nslookup``, which only the node's own
``nslookup`` answers from the pod's hosts file (an engine's container has no DNS server that
knows the job's names).

Owns: the name, :func:`is_host_image` and :func:`runs_on_host`. Pure: no I/O.
"""

from __future__ import annotations

from typing import Final

from kubetrain.frameworks import _framework

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
_HELPERS: Final = frozenset({normalise(_framework.DEFAULT_INIT_CONTAINER_IMAGE)})


def is_host_image(image: object) -> bool:
    """Whether ``image`` names the host image (its alias and spellings included)."""
    return isinstance(image, str) and bool(image.strip()) and normalise(image) in _NAMES


def runs_on_host(image: object) -> bool:
    """Whether a node with a container engine still runs ``image`` as host processes: the
    host image, and upstream's helper images the node stands in for."""
    return is_host_image(image) or (isinstance(image, str) and normalise(image) in _HELPERS)
