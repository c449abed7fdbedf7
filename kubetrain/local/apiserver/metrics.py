"""``metrics.k8s.io/v1beta1`` as metrics-server serves it: NodeMetrics and PodMetrics, measured
by the nodes, for ``kubectl top`` and ``kubetrain top``.

On a cluster, metrics-server scrapes every kubelet and answers this group through the
aggregation layer. The local API server answers it itself: a request reads the Node and Pod
objects it names (label and field selectors as for ``nodes`` and ``pods``), fetches
``/stats/summary`` from the nodes concerned through :class:`nodeproxy.NodeProxy` (in parallel,
:data:`nodeproxy.STATS_TIMEOUT` each) and answers in metrics-server's shapes::

    NodeMetrics {metadata: {name, labels, creationTimestamp}, timestamp, window,
                 usage: {cpu, memory}}
    PodMetrics  {metadata: {name, namespace, labels, creationTimestamp}, timestamp, window,
                 containers: [{name, usage: {cpu, memory}}]}

CPU is the node's ``usageNanoCores`` (the rate over its last sampling window, the field
metrics-server 0.3 read), memory the working set; both are written as Go writes quantities
(``250m``, ``123456789n``, ``1536``, ``100Mi``). ``window`` is the node agent's default
sampling interval. A node that does not answer, or has not measured a pod yet, leaves it out
of a list, and a get of it is NotFound in metrics-server's words
(``podmetrics.metrics.k8s.io "ns/name" not found``). Only get and list are served.

Owns: the group's resources (discovery lists :data:`ROWS`), its routes, the shapes and the
quantities. Must not: store or cache anything (every request measures afresh), or reach nodes
other than through :mod:`nodeproxy`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final

from aiohttp import web

from kubetrain import timefmt
from kubetrain.local import podoptions
from kubetrain.local.apiserver import (
    errors,
    nodeproxy,
    queryoptions,
    registry,
    resources,
)

log = logging.getLogger(__name__)

GROUP: Final = "metrics.k8s.io"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
READ_ONLY: Final = ("get", "list")
NODE_METRICS: Final = resources.Resource(
    GROUP, VERSION, "NodeMetrics", "nodes", "", False, verbs=READ_ONLY
)
POD_METRICS: Final = resources.Resource(
    GROUP, VERSION, "PodMetrics", "pods", "", True, verbs=READ_ONLY
)
ROWS: Final = (NODE_METRICS, POD_METRICS)
WINDOW: Final = "10s"  # the node agent's default stats_interval (node settings)
JSON: Final = "application/json"

_DECIMAL_SUFFIXES: Final = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T"}
_BINARY_SUFFIXES: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


# -- quantities ---------------------------------------------------------------------------------


def decimal_quantity(value: int, exponent: int) -> str:
    """``value × 10^exponent`` as Go's ``Quantity.String()`` writes a DecimalSI amount: the
    trailing zeros taken out, the exponent brought down to a multiple of three."""
    if value == 0:
        return "0"
    while value % 10 == 0:
        value //= 10
        exponent += 1
    while exponent % 3:
        value *= 10
        exponent -= 1
    while exponent > max(_DECIMAL_SUFFIXES):
        value *= 1000
        exponent -= 3
    return f"{value}{_DECIMAL_SUFFIXES[exponent]}"


def cpu_quantity(nano_cores: int) -> str:
    """``resource.NewScaledQuantity(nanoCores, resource.Nano)``, as metrics-server builds it."""
    return decimal_quantity(max(0, nano_cores), -9)


def memory_quantity(size: int) -> str:
    """``resource.NewQuantity(bytes, resource.BinarySI)``: powers of 1024 where exact, plain
    (decimal) below 1024."""
    size = max(0, size)
    if size < 1024:
        return decimal_quantity(size, 0)
    index = 0
    while size % 1024 == 0 and index < len(_BINARY_SUFFIXES) - 1:
        size //= 1024
        index += 1
    return f"{size}{_BINARY_SUFFIXES[index]}"


# -- shapes -------------------------------------------------------------------------------------


def _usage(stats: Mapping[str, Any]) -> tuple[dict[str, str], str] | None:
    """``usage`` and its time from a Summary's ``{cpu, memory}``; None without a CPU rate or
    a working set (a container measured once only)."""
    cpu = stats.get("cpu") if isinstance(stats.get("cpu"), Mapping) else {}
    mem = stats.get("memory") if isinstance(stats.get("memory"), Mapping) else {}
    nano = cpu.get("usageNanoCores")
    working = mem.get("workingSetBytes")
    if not _count(nano) or not _count(working):
        return None
    return {"cpu": cpu_quantity(nano), "memory": memory_quantity(working)}, str(cpu.get("time"))


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _metadata(obj: Mapping[str, Any], now: str, *, namespaced: bool) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    out: dict[str, Any] = {"name": meta.get("name", "")}
    if namespaced:
        out["namespace"] = meta.get("namespace", "")
    out["creationTimestamp"] = now
    if meta.get("labels"):
        out["labels"] = dict(meta["labels"])
    return out


def node_metrics(
    node: Mapping[str, Any], summary: Mapping[str, Any] | None, now: str
) -> dict[str, Any] | None:
    """A Node's NodeMetrics from its node's Summary, or None when it has no usage yet."""
    stats = (summary or {}).get("node")
    measured = _usage(stats) if isinstance(stats, Mapping) else None
    if measured is None:
        return None
    usage, when = measured
    return {
        "metadata": _metadata(node, now, namespaced=False),
        "timestamp": when or now,
        "window": WINDOW,
        "usage": usage,
    }


def pod_metrics(
    pod: Mapping[str, Any], stats: Mapping[str, Any] | None, now: str
) -> dict[str, Any] | None:
    """A Pod's PodMetrics from its entry in a Summary, or None unless every container listed
    there has usage (metrics-server leaves a pod out rather than show part of it)."""
    if stats is None:
        return None
    containers = []
    times = []
    for c in stats.get("containers") or []:
        measured = _usage(c) if isinstance(c, Mapping) else None
        if measured is None:
            return None
        usage, when = measured
        containers.append({"name": str(c.get("name") or ""), "usage": usage})
        times.append(when)
    if not containers:
        return None
    return {
        "metadata": _metadata(pod, now, namespaced=True),
        "timestamp": max(times) or now,
        "window": WINDOW,
        "containers": containers,
    }


def pods_in(
    summaries: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    """Each pod's Summary entry by (namespace, name, uid)."""
    found: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for summary in summaries:
        for entry in summary.get("pods") or []:
            ref = entry.get("podRef") if isinstance(entry, Mapping) else None
            if isinstance(ref, Mapping):
                key = (str(ref.get("namespace")), str(ref.get("name")), str(ref.get("uid")))
                found[key] = entry
    return found


def _key(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = pod.get("metadata") or {}
    return (str(meta.get("namespace")), str(meta.get("name")), str(meta.get("uid")))


def not_found(plural: str, name: str) -> errors.ApiError:
    """metrics-server's NotFound: ``nodemetrics`` / ``podmetrics`` and the name it looked for
    (``namespace/name`` for a pod)."""
    resource = "nodemetrics" if plural == "nodes" else "podmetrics"
    return errors.ApiError(
        404,
        "NotFound",
        f'{resource}.{GROUP} "{name}" not found',
        {"name": name, "group": GROUP, "kind": resource},
    )


def _list(kind: str, items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": f"{kind}List", "apiVersion": API_VERSION, "metadata": {}, "items": list(items)}


def _item(kind: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": API_VERSION, **item}


# -- serving ------------------------------------------------------------------------------------


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Metrics:
    """The group's handler for one API server: reads objects from ``reg`` and usage from
    the nodes through ``nodes``."""

    def __init__(
        self,
        reg: registry.Registry,
        nodes: nodeproxy.NodeProxy,
        *,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.registry = reg
        self.nodes = nodes
        self.clock = clock

    async def serve(
        self,
        request: web.Request,
        *,
        plural: str,
        namespace: str | None,
        name: str,
        subresource: str,
        watch: bool,
    ) -> web.Response:
        """Answer ``/apis/metrics.k8s.io/v1beta1/[namespaces/<ns>/]<plural>[/<name>]``."""
        row = {"nodes": NODE_METRICS, "pods": POD_METRICS}.get(plural)
        if row is None or subresource or (namespace is not None and not row.namespaced):
            raise errors.path_not_found()
        if watch or podoptions.flag(request.query, "watch"):
            raise errors.method_not_allowed(GROUP, plural, "watch")
        if request.method not in ("GET", "HEAD"):
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
            raise errors.method_not_allowed(GROUP, plural, verb.get(request.method, "unknown"))
        options = queryoptions.ListOptions(
            label_selector=request.query.get("labelSelector", ""),
            field_selector=request.query.get("fieldSelector", ""),
        )
        now = timefmt.seconds(self.clock())
        if row is NODE_METRICS:
            body = await (self._node(name, now) if name else self._nodes(options, now))
        elif name:
            body = await self._pod(namespace or "", name, now)
        else:
            body = await self._pods(namespace, options, now)
        return web.Response(body=json.dumps(body, separators=(",", ":")), content_type=JSON)

    # -- reads ----------------------------------------------------------------------------

    def _core(self, plural: str) -> resources.Resource:
        r = self.registry.catalog.find("", "v1", plural)
        assert r is not None, plural
        return r

    async def _summaries(self, nodes: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each node's Summary, by node name; nodes that fail are left out (and logged)."""
        listed = list(nodes)
        names = [str((n.get("metadata") or {}).get("name") or "") for n in listed]
        answers = await asyncio.gather(
            *(self.nodes.summary(n) for n in listed), return_exceptions=True
        )
        found: dict[str, dict[str, Any]] = {}
        for name, answer in zip(names, answers, strict=True):
            if isinstance(answer, errors.ApiError):
                log.info("metrics: no usage from node %s: %s", name, answer.message)
            elif isinstance(answer, BaseException):
                raise answer
            else:
                found[name] = answer
        return found

    async def _node_objects(self, names: Iterable[str]) -> list[dict[str, Any]]:
        found = []
        for name in sorted(set(names)):
            try:
                found.append((await self.registry.get(self._core("nodes"), None, name)).obj)
            except errors.ApiError as exc:
                if exc.code != 404:
                    raise
        return found

    async def _nodes(self, options: queryoptions.ListOptions, now: str) -> dict[str, Any]:
        nodes = (await self.registry.list(self._core("nodes"), None, options)).obj["items"]
        summaries = await self._summaries(nodes)
        items = []
        for node in nodes:
            name = str((node.get("metadata") or {}).get("name") or "")
            shown = node_metrics(node, summaries.get(name), now)
            if shown is not None:
                items.append(shown)
        return _list("NodeMetrics", items)

    async def _node(self, name: str, now: str) -> dict[str, Any]:
        try:
            node = (await self.registry.get(self._core("nodes"), None, name)).obj
        except errors.ApiError as exc:
            if exc.code == 404:
                raise not_found("nodes", name) from exc
            raise
        summaries = await self._summaries([node])
        shown = node_metrics(node, summaries.get(name), now)
        if shown is None:
            raise not_found("nodes", name)
        return _item("NodeMetrics", shown)

    async def _measure(self, pods: Sequence[Mapping[str, Any]], now: str) -> list[dict[str, Any]]:
        bound = [p for p in pods if nodeproxy.assigned_node(p)]
        nodes = await self._node_objects(nodeproxy.assigned_node(p) for p in bound)
        index = pods_in((await self._summaries(nodes)).values())
        shown = (pod_metrics(p, index.get(_key(p)), now) for p in bound)
        return [m for m in shown if m is not None]

    async def _pods(
        self, namespace: str | None, options: queryoptions.ListOptions, now: str
    ) -> dict[str, Any]:
        pods = (await self.registry.list(self._core("pods"), namespace, options)).obj["items"]
        return _list("PodMetrics", await self._measure(pods, now))

    async def _pod(self, namespace: str, name: str, now: str) -> dict[str, Any]:
        try:
            pod = (await self.registry.get(self._core("pods"), namespace, name)).obj
        except errors.ApiError as exc:
            if exc.code == 404:
                raise not_found("pods", f"{namespace}/{name}") from exc
            raise
        shown = await self._measure([pod], now)
        if not shown:
            raise not_found("pods", f"{namespace}/{name}")
        return _item("PodMetrics", shown[0])
