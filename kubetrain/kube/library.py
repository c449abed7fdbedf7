"""The Kubernetes client library (``kubernetes``), imported for what kubetrain uses of it: the
asyncio ApiClient, its Configuration and the kubeconfig and in-cluster loaders.

``import kubernetes.aio.client`` runs ``kubernetes/__init__.py`` first, which imports the whole
synchronous client (every model class, requests, urllib3, oauthlib), and then
``kubernetes/aio/__init__.py``, which imports its dynamic client, streams, watches and leader
election. kubetrain uses none of those, yet a command would wait for them before its first
request: about as long as everything else ``kubetrain list`` imports together. So both packages
are registered without running their ``__init__`` (unless something imported them already): a
submodule is imported when it is named, as always, and the first use of anything else that an
``__init__`` defines (``kubernetes.__version__``) runs that ``__init__`` then, so other code in
the process (tests that use the synchronous client, a user's own) sees the library unchanged.

Owns: importing ``kubernetes``. The rest of :mod:`kubetrain.kube` takes its names from here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any


def _defer_init(name: str) -> None:
    """Register package ``name`` with its ``__init__`` not yet run; see the module docstring."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not an ordinary package: import it as it is
    package = importlib.util.module_from_spec(spec)

    def first_use(attribute: str) -> Any:
        if importlib.util.find_spec(f"{name}.{attribute}") is not None:
            return importlib.import_module(f"{name}.{attribute}")
        del package.__getattr__  # the real __init__ defines what is asked for, or nothing does
        spec.loader.exec_module(package)  # type: ignore[union-attr]
        return getattr(package, attribute)

    package.__getattr__ = first_use  # type: ignore[method-assign]
    sys.modules[name] = package


def _load() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    _defer_init("kubernetes")
    _defer_init("kubernetes.aio")
    return (
        importlib.import_module("kubernetes.aio.client"),
        importlib.import_module("kubernetes.aio.config.config_exception"),
        importlib.import_module("kubernetes.aio.config.incluster_config"),
        importlib.import_module("kubernetes.aio.config.kube_config"),
    )


if TYPE_CHECKING:
    from kubernetes.aio.client import ApiClient, Configuration
    from kubernetes.aio.config.config_exception import ConfigException
    from kubernetes.aio.config.incluster_config import InClusterConfigLoader
    from kubernetes.aio.config.kube_config import KubeConfigLoader
else:
    _client, _exception, _incluster, _kubeconfig = _load()
    ApiClient = _client.ApiClient
    Configuration = _client.Configuration
    ConfigException = _exception.ConfigException
    InClusterConfigLoader = _incluster.InClusterConfigLoader
    KubeConfigLoader = _kubeconfig.KubeConfigLoader

__all__ = [
    "ApiClient",
    "ConfigException",
    "Configuration",
    "InClusterConfigLoader",
    "KubeConfigLoader",
]
