"""Where a job's host-image pods run: the directory ``kubetrain submit`` or ``kubetrain run -f``
was typed in.

The local node runs a container that names no ``workingDir`` in a fresh directory of its own,
as a container's own filesystem would be, so a job writes nothing into the directory the
control plane was started from. A user who types ``cd ~/proj && kubetrain submit pytorch --
python3 train.py`` still expects ``./train.py`` to be found: these two commands know the
directory, so they write it into what they submit, where ``--dry-run`` shows it:

- in a ``kubeflow.org/v1`` job, every container and init container of every replica's
  template whose image is the host image (:mod:`kubetrain.frameworks.hostimage`) and that
  names no ``workingDir`` gets ``workingDir`` = that directory; a real image keeps its own
  ``WORKDIR``;
- a TrainJob has no field for a working directory (neither ``trainer`` nor the pod template
  overrides take one), so when its ``trainer.image`` is the host image, each argument of
  ``trainer.command`` and ``trainer.args`` that names a file or directory existing in that
  directory is written as its absolute path.

Owns: that rule. Reads the filesystem only to ask whether a TrainJob's argument exists.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any

from kubetrain.cli import jobkinds
from kubetrain.frameworks import hostimage

CONTAINER_LISTS = ("initContainers", "containers")


def typed_in(manifest: Mapping[str, Any], directory: str) -> dict[str, Any]:
    """A copy of the job ``manifest`` with ``directory`` written in as the rule above says;
    anything but a job is returned as it is (copied)."""
    job = copy.deepcopy(dict(manifest))
    if not jobkinds.is_job(job):
        return job
    kind = jobkinds.of(job)
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return job
    if kind.v1:
        for template in _templates(spec.get(kind.replica_field or "")):
            _set_working_dir(template, directory)
    else:
        trainer = spec.get("trainer")
        if isinstance(trainer, dict) and hostimage.is_host_image(trainer.get("image")):
            for key in ("command", "args"):
                if isinstance(trainer.get(key), list):
                    trainer[key] = [_anchored(a, directory) for a in trainer[key]]
    return job


def _templates(replicas: object) -> list[dict[str, Any]]:
    if not isinstance(replicas, dict):
        return []
    found = []
    for replica in replicas.values():
        template = replica.get("template") if isinstance(replica, dict) else None
        spec = template.get("spec") if isinstance(template, dict) else None
        if isinstance(spec, dict):
            found.append(spec)
    return found


def _set_working_dir(pod_spec: dict[str, Any], directory: str) -> None:
    for field in CONTAINER_LISTS:
        for container in pod_spec.get(field) or []:
            if (
                isinstance(container, dict)
                and not container.get("workingDir")
                and hostimage.is_host_image(container.get("image"))
            ):
                container["workingDir"] = directory


def _anchored(argument: object, directory: str) -> object:
    if not isinstance(argument, str) or not argument or os.path.isabs(argument):
        return argument
    if argument.startswith("-"):
        return argument  # an option, even one that happens to name a file
    path = os.path.join(directory, argument)
    return os.path.normpath(path) if os.path.exists(path) else argument
