"""The contract between the framework and its plugins: one small protocol per phase, and the
data that crosses it (the build context, the status update, the plugin error).

It lives apart from :mod:`kubetrain.operator.trainjob.framework` (which lists the plugins and
runs the phases, and re-exports these names) so that plugins can import it without importing
the framework that imports them. Must not: hold logic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kubetrain import api
from kubetrain.errors import KubetrainError
from kubetrain.operator.trainjob import observation, runtime_info

RuntimeInfo = runtime_info.RuntimeInfo


class PluginError(KubetrainError):
    """A plugin cannot build this TrainJob (it will not fix itself without a change)."""


@dataclass(frozen=True)
class BuildContext:
    """What build needs from outside the Info, decided by the reconciler.

    ``ssh_key_pair`` is ``(private PEM, public authorized_keys line)`` when an MPI job's SSH
    Secret does not exist yet (a new key needs randomness, which plugins may not use).
    ``host_port``: the pods share the host's network, and this is the port the job was given
    (recorded on its Service), for rank 0 to listen on instead of 29500.
    """

    ssh_key_pair: tuple[bytes, bytes] | None = None
    host_port: int | None = None


@dataclass(frozen=True)
class StatusUpdate:
    """The part of the TrainJob status the status plugin owns."""

    conditions: tuple[dict[str, Any], ...]  # Complete/Failed (type, status, reason, message)
    jobs_status: tuple[dict[str, Any], ...]


class Plugin(Protocol):
    name: str


@runtime_checkable
class EnforceMLPolicy(Protocol):
    name: str

    def enforce_ml_policy(self, info: RuntimeInfo) -> None: ...


@runtime_checkable
class EnforcePodGroupPolicy(Protocol):
    name: str

    def enforce_pod_group_policy(self, info: RuntimeInfo) -> None: ...


@runtime_checkable
class EnforcePodSpec(Protocol):
    name: str

    def enforce_pod_spec(self, info: RuntimeInfo) -> None: ...


@runtime_checkable
class PreBuild(Protocol):
    name: str

    def pre_build(self, info: RuntimeInfo) -> list[api.FieldError]: ...


@runtime_checkable
class Build(Protocol):
    name: str

    def build(self, info: RuntimeInfo, context: BuildContext) -> list[dict[str, Any]]: ...


@runtime_checkable
class Status(Protocol):
    name: str

    def status(self, info: RuntimeInfo, observed: observation.Observation) -> StatusUpdate: ...
