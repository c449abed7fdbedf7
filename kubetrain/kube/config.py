"""Where the API server is and how to authenticate to it: a kubeconfig file (one context of it)
or the in-cluster service account, loaded into a ``kubernetes.aio`` Configuration.

Owns: reading those files and handing back a :class:`ClusterConfig`. Must not: read
environment variables or default paths on its own (``$KUBECONFIG``, ``~/.kube/config``, the
``KUBERNETES_SERVICE_*`` variables are resolved by the entry point and passed in), or set the
library's process-wide default configuration; two clients for two clusters must not interfere.

File reads (and any exec credential plugin the kubeconfig names) run in a worker thread, so
loading never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kubetrain.kube.errors import ConfigError
from kubetrain.kube.library import (
    ConfigException,
    Configuration,
    InClusterConfigLoader,
    KubeConfigLoader,
)

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class ClusterConfig:
    """A loaded connection: the library configuration, plus the namespace the context names
    (``default`` when it names none), which callers use when the user gives no namespace."""

    configuration: Configuration
    namespace: str = DEFAULT_NAMESPACE
    context: str | None = None  # None for in-cluster

    @property
    def host(self) -> str:
        return str(self.configuration.host)


async def from_kubeconfig(
    path: str | os.PathLike[str], *, context: str | None = None
) -> ClusterConfig:
    """Load ``context`` (default: the file's current-context) from the kubeconfig at ``path``.

    Relative certificate and token paths in the file resolve against the file's directory, as
    kubectl resolves them.
    """
    return await asyncio.to_thread(_load_kubeconfig, os.fspath(path), context)


async def from_incluster(
    environ: Mapping[str, str], *, directory: str = SERVICE_ACCOUNT_DIR
) -> ClusterConfig:
    """The service account a pod runs as: ``KUBERNETES_SERVICE_HOST``/``_PORT`` from
    ``environ``, token, CA and namespace from ``directory``. The token is re-read when it
    expires (projected tokens rotate)."""
    return await asyncio.to_thread(_load_incluster, dict(environ), directory)


def _load_kubeconfig(path: str, context: str | None) -> ClusterConfig:
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())  # PyYAML's message spans lines; ours is one
        raise ConfigError(f"kubeconfig {path} is not valid YAML: {problem}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"kubeconfig {path} is not UTF-8 text (byte {exc.start + 1})") from exc
    except RecursionError as exc:
        raise ConfigError(f"kubeconfig {path} is nested too deeply") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {path}: expected a mapping at the top level")
    configuration = Configuration()
    try:
        loader = KubeConfigLoader(
            config_dict=doc,
            active_context=context,
            config_base_path=os.path.dirname(os.path.abspath(path)),
        )
        # The loader is async only because an exec plugin may run; this thread has no loop.
        asyncio.run(loader.load_and_set(configuration))
    except (ConfigException, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"kubeconfig {path}: {_describe(exc)}") from exc
    active = loader.current_context if isinstance(loader.current_context, dict) else {}
    details: Any = active.get("context") or {}
    namespace = details.get("namespace") if isinstance(details, Mapping) else None
    if not configuration.host or configuration.host == Configuration().host:
        raise ConfigError(f"kubeconfig {path}: the context's cluster has no server")
    return ClusterConfig(
        configuration=configuration,
        namespace=namespace or DEFAULT_NAMESPACE,
        context=str(active.get("name") or context or "") or None,
    )


def _load_incluster(environ: dict[str, str], directory: str) -> ClusterConfig:
    configuration = Configuration()
    try:
        InClusterConfigLoader(
            token_filename=os.path.join(directory, "token"),
            cert_filename=os.path.join(directory, "ca.crt"),
            environ=environ,
        ).load_and_set(configuration)
    except (ConfigException, OSError) as exc:
        raise ConfigError(f"in-cluster configuration: {_describe(exc)}") from exc
    namespace = DEFAULT_NAMESPACE
    try:
        with open(os.path.join(directory, "namespace"), encoding="utf-8") as f:
            namespace = f.read().strip() or DEFAULT_NAMESPACE
    except OSError:
        pass
    return ClusterConfig(configuration=configuration, namespace=namespace, context=None)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing entry {exc.args[0]!r}" if exc.args else "missing entry"
    return str(exc) or type(exc).__name__
