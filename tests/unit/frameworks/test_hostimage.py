"""The host image's name, its alias and the spellings a container engine reads as the same."""

from __future__ import annotations

import pytest

from kubetrain.frameworks import hostimage

SAME = [
    "kubetrain.local/host-python:latest",
    "kubetrain.local/host-python",
    "kubetrain/python:local",
    "docker.io/kubetrain/python:local",
    " kubetrain/python:local ",
]
OTHER = [
    "",
    "python:3.12",
    "kubetrain/python",  # :latest, not :local
    "kubetrain.local/host-python:3.12",
    "registry.example.com/kubetrain/python:local",
    None,
]


@pytest.mark.parametrize("image", SAME)
def test_these_name_the_host_image(image: str) -> None:
    assert hostimage.is_host_image(image)


@pytest.mark.parametrize("image", OTHER)
def test_these_do_not(image: str | None) -> None:
    assert not hostimage.is_host_image(image)
