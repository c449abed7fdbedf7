"""kubetrain's one Kubernetes client layer: the only code that speaks HTTP to an API server.

Everything above it (operator, local control plane components, SDK, CLI) reaches Kubernetes
through :class:`Client`, gets plain dicts back, and catches the errors of
:mod:`kubetrain.kube.errors`. It works the same against a real cluster and against kubetrain's
local control plane.

    config.from_kubeconfig / from_incluster  →  ClusterConfig
    Client(cluster)                          get, list, list_all, create, replace, patch,
                                             apply, delete, delete_collection, watch,
                                             discover, request, stream
    Resource(group, version, plural)         what to address; Discovery maps kinds to it
    Watch                                    list + watch that survives timeouts, stalls, 410
    status.invalid                           the 422 Status of an invalid object, as kube words it

client-go's controller pieces, shared by the operator and the local control plane's components
(imported by module, not re-exported here):

    workqueue.WorkQueue                      de-duplicated keys, one worker per key, rate limits
    informer.Informer, cache.Store           one resource's list + watch into a shared cache
    record.Recorder, record.Broadcaster      core/v1 Events, aggregated like client-go's
    tasks.Tasks, tasks.guarded               a component's long-lived tasks, cancelled on stop

Must not: know about job kinds, or depend on any kubetrain layer above ``api``.
"""

from kubetrain.kube import config, discovery, errors, resource, status, watch
from kubetrain.kube.client import (
    CLIENT_DEFAULT,
    DEFAULT_TIMEOUT,
    Client,
    PatchType,
    PropagationPolicy,
)
from kubetrain.kube.config import ClusterConfig, from_incluster, from_kubeconfig
from kubetrain.kube.discovery import Discovery
from kubetrain.kube.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    ConfigError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from kubetrain.kube.resource import Resource, split_api_version
from kubetrain.kube.watch import Event, Watch

__all__ = [
    "CLIENT_DEFAULT",
    "DEFAULT_TIMEOUT",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Client",
    "ClusterConfig",
    "ConfigError",
    "Conflict",
    "Discovery",
    "Event",
    "Forbidden",
    "Gone",
    "Invalid",
    "NotFound",
    "PatchType",
    "PropagationPolicy",
    "Resource",
    "ServerError",
    "TooManyRequests",
    "Unauthorized",
    "Unavailable",
    "Watch",
    "config",
    "discovery",
    "errors",
    "from_incluster",
    "from_kubeconfig",
    "resource",
    "split_api_version",
    "status",
    "watch",
]
