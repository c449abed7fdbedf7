"""The node agent: kubetrain's kubelet for one machine, an ordinary API client.

It registers its Node and keeps it and its Lease fresh (:mod:`.heartbeat`: capacity from this
machine, the addresses the API server reaches it at (:mod:`.addresses`), the port of its HTTPS
endpoint, nodeInfo, a Ready condition); watches the pods bound to it (``spec.nodeName``) and
runs one :class:`~.worker.Worker` per pod; watches the Services and pods of every namespace it
has pods in, so that each pod's /etc/hosts names them all (:mod:`.hosts`); assigns GPUs;
requests the pods' ServiceAccount tokens (:class:`Tokens`) and tells them where the API server
is, so that a process in a pod reaches it with in-cluster configuration; writes events as the
kubelet does; and serves logs and exec (:mod:`.server`). On start it first lists what the
runtime has on disk, so a restarted agent (even after ``kill -9``) adopts the containers still
running, reports those that finished meanwhile, and removes those whose pod is gone.

Owns: that wiring, what the Node says about this machine, the GPU assignments, the token cache,
the namespace views and the event recorder. Must not: run processes (the runtime does),
compute a pod's specs or status (:mod:`.podspec`, :mod:`.status`), or stop pods when it stops
itself: they outlive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sys
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from kubetrain import _aio, kube
from kubetrain.kube import record, resource, tasks
from kubetrain.kube import watch as watch_
from kubetrain.local.node import (
    addresses,
    heartbeat,
    hosts,
    podspec,
    podssh,
    runtime,
    server,
    tools,
    worker,
)
from kubetrain.local.node import settings as node_settings

log = logging.getLogger(__name__)

PODS: Final = resource.PODS
SERVICES: Final = kube.Resource("", "v1", "services", kind="Service")
CONFIGMAPS: Final = resource.CONFIGMAPS
SECRETS: Final = kube.Resource("", "v1", "secrets", kind="Secret")
CLAIMS: Final = kube.Resource("", "v1", "persistentvolumeclaims", kind="PersistentVolumeClaim")
VOLUMES: Final = kube.Resource(
    "", "v1", "persistentvolumes", namespaced=False, kind="PersistentVolume"
)
SERVICE_ACCOUNTS: Final = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The kubelet's token manager asks for a new token once 80% of the old one's life is over.
TOKEN_REFRESH: Final = 0.8
NO_CREDENTIALS: Final = "ServiceAccountTokenNotMounted"


def now() -> datetime:
    return datetime.now(timezone.utc)


# -- this machine -------------------------------------------------------------------------------


def memory_bytes(meminfo: str = "/proc/meminfo") -> int:
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


async def count_gpus() -> int:
    """GPUs ``nvidia-smi -L`` lists (one ``GPU n: ...`` line each); 0 without the tool."""
    try:
        process = await asyncio.create_subprocess_exec(
            "nvidia-smi",
            "-L",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            stdin=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return 0
    try:
        async with _aio.timeout(10):
            out, _ = await process.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        log.warning("nvidia-smi -L did not answer within 10s; reporting no GPUs")
        return 0
    if process.returncode != 0:
        return 0
    return sum(1 for line in out.decode(errors="replace").splitlines() if line.startswith("GPU "))


class Machine:
    """What this machine offers, looked up once at start."""

    def __init__(self, cpus: int, memory: int, storage: int, gpus: int) -> None:
        self.cpus = cpus
        self.memory = memory
        self.storage = storage
        self.gpus = gpus

    @classmethod
    async def probe(cls, config: node_settings.Settings) -> Machine:
        gpus = config.gpus if config.gpus is not None else await count_gpus()
        os.makedirs(config.root, exist_ok=True)
        storage = (await asyncio.to_thread(shutil.disk_usage, config.root)).total
        memory = await asyncio.to_thread(memory_bytes)
        return cls(os.cpu_count() or 1, memory, storage, gpus)

    def capacity(self, max_pods: int) -> dict[str, str]:
        out = {
            "cpu": str(self.cpus),
            "memory": f"{self.memory // 1024}Ki",
            "ephemeral-storage": f"{self.storage // 1024}Ki",
            "pods": str(max_pods),
        }
        if self.gpus:
            out[podspec.GPU] = str(self.gpus)
        return out


# -- GPUs ---------------------------------------------------------------------------------------


class DeviceShortage(podspec.SpecError):
    """Fewer free GPUs than a container needs (the scheduler should not have bound it here)."""


class Devices:
    """Which GPU indices each pod's containers hold, exclusively.

    A container gets its devices when it first starts and keeps them across restarts while
    its pod is here. Init containers run alone, before the app containers, so they may take
    devices their own pod holds, and app containers those of their pod's init containers. The
    assignment is not written anywhere of ours: a restarted agent reads it back from the specs
    of the containers still running (:meth:`recover`)."""

    def __init__(self, count: int) -> None:
        self.ids = tuple(str(i) for i in range(count))
        self.assigned: dict[str, dict[str, tuple[str, ...]]] = {}

    def recover(self, node_runtime: runtime.Runtime) -> None:
        """Take back what running containers hold (blocking: reads the runtime's disk)."""
        for state in node_runtime.containers():
            if not state.running:
                continue
            gpus = node_runtime.gpus(state.id)
            if gpus:
                held = self.assigned.setdefault(state.id.pod_uid, {})
                held[state.id.name] = tuple(str(g) for g in gpus)

    def assign(self, uid: str, pod: Mapping[str, Any], name: str) -> tuple[str, ...]:
        """The devices of container ``name`` of pod ``uid``; chosen on its first start."""
        wanted = {
            str(c.get("name") or ""): podspec.gpu_limit(c) for c in podspec.all_containers(pod)
        }
        count = wanted.get(name, 0)
        if not count:
            return ()
        held = self.assigned.setdefault(uid, {})
        if len(held.get(name, ())) == count:
            return held[name]
        inits = {str(c.get("name") or "") for c in podspec.init_containers(pod)}
        shareable = set()  # devices of this pod this container may take too
        busy = set()
        for owner, by_name in self.assigned.items():
            for other, ids in by_name.items():
                if owner == uid and (other == name or name in inits or other in inits):
                    shareable.update(ids)
                else:
                    busy.update(ids)
        free = [i for i in self.ids if i not in busy]
        free.sort(key=lambda i: i not in shareable)  # this pod's own first
        if len(free) < count:
            raise DeviceShortage(
                "UnexpectedAdmissionError",
                "Allocate failed due to requested number of devices unavailable for "
                f"{podspec.GPU}. Requested: {count}, Available: {len(free)}, which is unexpected",
            )
        held[name] = tuple(sorted(free[:count], key=int))
        return held[name]

    def release(self, uid: str) -> None:
        self.assigned.pop(uid, None)


# -- ServiceAccount tokens ---------------------------------------------------------------------


class Tokens:
    """The tokens of the pods' ``serviceAccountToken`` projections, as the kubelet's token
    manager keeps them: requested from ``serviceaccounts/<name>/token`` bound to the pod, with
    the audience and lifetime the projection asks for, and asked for again once
    :data:`TOKEN_REFRESH` of their life is over (a pod's worker fetches its sources every
    ``resync`` seconds, so the file is rewritten in time). Forgotten with the pod."""

    def __init__(self, client: kube.Client) -> None:
        self.client = client
        self._held: dict[podspec.TokenNeed, tuple[str, datetime]] = {}  # token, refresh after

    async def get(self, namespace: str, need: podspec.TokenNeed) -> str:
        """The token for ``need``; raises :class:`kube.ApiError` when the API issues none."""
        held = self._held.get(need)
        if held is not None and now() < held[1]:
            return held[0]
        spec: dict[str, Any] = {
            "expirationSeconds": need.expiration_seconds,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": need.pod_name,
                "uid": need.pod_uid,
            },
        }
        if need.audience:
            spec["audiences"] = [need.audience]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        asked = now()
        answer = await self.client.create(
            SERVICE_ACCOUNTS,
            body,
            namespace=namespace,
            name=need.service_account,
            subresource="token",
        )
        status = answer.get("status") or {}
        token = str(status.get("token") or "")
        expires = _parse_time(status.get("expirationTimestamp")) or (
            asked + timedelta(seconds=need.expiration_seconds)
        )
        self._held[need] = (token, asked + (expires - asked) * TOKEN_REFRESH)
        return token

    def forget(self, uid: str) -> None:
        for need in [n for n in self._held if n.pod_uid == uid]:
            del self._held[need]


def _parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def api_address(url: str) -> tuple[str, int] | None:
    """The host and port of the API server's URL (``https://127.0.0.1:6443``), for the pods'
    ``KUBERNETES_SERVICE_*``: on this node they share the host network, so the address the
    node reaches the API server at is the one its pods reach it at."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def credentials_mountable(isolation: str) -> str:
    """Why pods on this node cannot get the ServiceAccount mount at
    ``/var/run/secrets/kubernetes.io/serviceaccount``, or "" when they can: it needs a private
    mount namespace, where the mount point is made without touching the host (on the host, that
    directory would make in-cluster detectors take the machine for a pod)."""
    if isolation != "namespace":
        return "this node runs pods without a private mount namespace"
    return ""


def _api_access_mounts(pod: Mapping[str, Any]) -> bool:
    return any(
        podspec.is_api_access_mount(m)
        for c in podspec.all_containers(pod)
        for m in c.get("volumeMounts") or []
        if isinstance(m, Mapping)
    )


# -- namespaces ---------------------------------------------------------------------------------


class NamespaceView:
    """The Services and pods of one namespace this node has pods in, for their hosts files."""

    def __init__(self) -> None:
        self.services: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.task: asyncio.Task[None] | None = None

    def signature(self) -> tuple[Any, ...]:
        """What the hosts files depend on; a change here rewrites them."""
        services = sorted(
            (name, (s.get("spec") or {}).get("type")) for name, s in self.services.items()
        )
        pods = sorted(
            {
                ((p.get("spec") or {}).get("hostname"), (p.get("spec") or {}).get("subdomain"))
                for p in self.pods.values()
                if (p.get("spec") or {}).get("hostname") and (p.get("spec") or {}).get("subdomain")
            }
        )
        return (tuple(services), tuple(pods))


def _names_of(plural: str, obj: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    """What one Service or pod adds to its namespace's hosts files."""
    if obj is None:
        return None
    spec = obj.get("spec") or {}
    if plural == "services":
        return ("service", _name(obj), spec.get("type"))
    if spec.get("hostname") and spec.get("subdomain"):
        return ("pod", spec["hostname"], spec["subdomain"])
    return None


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


# -- the agent ----------------------------------------------------------------------------------


class Agent:
    """One node agent. :meth:`run` is its whole life; the rest is what workers and the
    server ask of it."""

    def __init__(
        self,
        client: kube.Client,
        config: node_settings.Settings,
        node_runtime: runtime.Runtime | None = None,
    ) -> None:
        self.client = client
        self.settings = config
        self.name = config.node_name
        self._own_runtime = node_runtime is None
        self.runtime = node_runtime or make_runtime(config, None)
        # the kubelet's events: source kubelet on this host, written in the background
        self.events = record.Broadcaster(client)
        self.recorder = record.Recorder(
            client, "kubelet", self.name, broadcaster=self.events, assumed=("v1", "Pod")
        )
        self.tokens = Tokens(client)
        self.devices = Devices(0)
        self.host = podspec.Host(self.name, config.address)
        self.machine: Machine | None = None
        self.port = 0
        self.heartbeat: heartbeat.Heartbeat | None = None
        self._pods: dict[str, dict[str, Any]] = {}  # uid → the latest Pod bound here
        self._by_name: dict[tuple[str, str], str] = {}
        self._workers: dict[str, worker.Worker] = {}
        self._done: set[str] = set()  # uids whose worker has finished for good
        self._views: dict[str, NamespaceView] = {}
        self._tasks: tasks.Tasks | None = None
        self._listed = asyncio.Event()
        self._no_credentials = ""  # why pods get no ServiceAccount mount here, or ""

    # -- what workers and the server ask -----------------------------------------------------

    @staticmethod
    def now() -> datetime:
        return now()

    def pod(self, uid: str) -> dict[str, Any] | None:
        return self._pods.get(uid)

    def pod_by_name(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod, with the status its worker last wrote (the watch may lag behind it)."""
        uid = self._by_name.get((namespace, name))
        pod = self._pods.get(uid) if uid else None
        known = self._workers.get(uid) if uid else None
        if pod is None or known is None:
            return pod
        return {**pod, "status": known.current_status(pod)}

    def hosts_text(self, pod: Mapping[str, Any]) -> str:
        """The pod's /etc/hosts. Without isolation the runtime can give a pod no file of its
        own: then "" (the host's) unless its namespace has names to resolve, in which case
        the runtime refuses the pod and says why."""
        view = self._views.get(_namespace(pod))
        if self.runtime.isolation == "none" and (view is None or view.signature() == ((), ())):
            return ""
        services = view.services.values() if view else ()
        pods = view.pods.values() if view else ()
        return hosts.hosts_file(
            pod, services, pods, self.settings.address, self.settings.cluster_domain
        )

    async def fetch_sources(self, namespace: str, needs: podspec.Needs) -> podspec.Sources:
        """The ConfigMaps, Secrets and claims (with their PersistentVolumes) a pod refers to;
        one not found is None."""

        async def get(r: kube.Resource, name: str, ns: str | None) -> dict[str, Any] | None:
            try:
                return await self.client.get(r, name, namespace=ns)
            except kube.NotFound:
                return None

        configmaps = sorted(needs.configmaps)
        secrets = sorted(needs.secrets)
        claims = sorted(needs.claims)
        found = await asyncio.gather(
            *(get(CONFIGMAPS, n, namespace) for n in configmaps),
            *(get(SECRETS, n, namespace) for n in secrets),
            *(get(CLAIMS, n, namespace) for n in claims),
        )
        cm = dict(zip(configmaps, found[: len(configmaps)], strict=True))
        sec = dict(
            zip(secrets, found[len(configmaps) : len(configmaps) + len(secrets)], strict=True)
        )
        cl = dict(zip(claims, found[len(configmaps) + len(secrets) :], strict=True))
        pv_names = sorted(
            {
                str((c.get("spec") or {}).get("volumeName"))
                for c in cl.values()
                if c is not None and (c.get("spec") or {}).get("volumeName")
            }
        )
        pvs = await asyncio.gather(*(get(VOLUMES, n, None) for n in pv_names))
        tokens, token_errors = await self._fetch_tokens(namespace, needs.tokens)
        return podspec.Sources(
            cm, sec, cl, dict(zip(pv_names, pvs, strict=True)), tokens, token_errors
        )

    async def _fetch_tokens(
        self, namespace: str, needs: Iterable[podspec.TokenNeed]
    ) -> tuple[dict[podspec.TokenNeed, str], dict[podspec.TokenNeed, str]]:
        """The tokens asked for, and the API's answer for each it would not issue (a
        server that fails is retried by the caller's sync)."""
        wanted = sorted(needs, key=lambda n: (n.service_account, n.audience))

        async def one(need: podspec.TokenNeed) -> str | kube.ApiError:
            try:
                return await self.tokens.get(namespace, need)
            except (
                kube.NotFound,
                kube.Forbidden,
                kube.Invalid,
                kube.BadRequest,
                kube.Conflict,
            ) as exc:
                return exc

        answers = await asyncio.gather(*(one(n) for n in wanted))
        tokens = {n: a for n, a in zip(wanted, answers, strict=True) if isinstance(a, str)}
        errors = {n: str(a) for n, a in zip(wanted, answers, strict=True) if not isinstance(a, str)}
        return tokens, errors

    # -- life -----------------------------------------------------------------------------------

    async def run(self, registered: asyncio.Event | None = None) -> None:
        """Register, serve, and run pods until cancelled. Pods keep running afterwards.

        ``registered`` is set once the Node carries this agent's serving port: until then the
        API server would send ``kubectl logs`` and ``exec`` to the port of an earlier run."""
        config = self.settings
        self.machine = await Machine.probe(config)
        self.devices = Devices(self.machine.gpus)
        await asyncio.to_thread(tools.install, config.root)
        if self._own_runtime:  # the runtime gives out the GPUs counted here, no others
            self.runtime = make_runtime(config, self.devices.ids)
        isolation = await asyncio.to_thread(lambda: self.runtime.isolation)
        await asyncio.to_thread(self.devices.recover, self.runtime)
        capacity = self.machine.capacity(config.max_pods)
        self._no_credentials = credentials_mountable(isolation)
        if self._no_credentials:
            log.warning(
                "pods on this node get no ServiceAccount credentials at %s: %s",
                podspec.API_ACCESS_PATH,
                self._no_credentials,
            )
        self.host = podspec.Host(
            self.name,
            config.address,
            allocatable=capacity,
            base_env=(
                *(config.environment or (("PATH", DEFAULT_PATH),)),
                *podssh.environment(tools.program(config.root, podssh.PROGRAM)),
            ),
            api=api_address(self.client.host),
            api_credentials=not self._no_credentials,
            entrypoints=tools.ENTRYPOINTS,
            containers=config.container_runtime != "none",
        )
        endpoint = server.NodeServer(self.runtime, self, token=config.token)
        context = await asyncio.to_thread(server.tls_context, config, self.name)
        self.port = await endpoint.start(config.address, config.port, context)
        try:
            identity = await asyncio.to_thread(self.identity, capacity)
            self.heartbeat = heartbeat.Heartbeat(self.client, identity, config)
            await self.heartbeat.register_until_done()
            if registered is not None:
                registered.set()
            log.info(
                "node %s ready: %s cpu, %s memory, %s GPUs; serving on %s:%s (isolation %s)",
                self.name,
                capacity["cpu"],
                capacity["memory"],
                self.machine.gpus,
                config.address,
                self.port,
                isolation,
            )
            async with _aio.TaskGroup() as group:
                self._tasks = tasks.Tasks(group)
                group.create_task(
                    tasks.guarded("node agent: heartbeat", self.heartbeat.run()),
                    name="node heartbeat",
                )
                group.create_task(
                    tasks.guarded("node agent: events", self.events.run()), name="node events"
                )
                group.create_task(
                    tasks.guarded("node agent: pods", self._watch_pods()), name="node pods"
                )
                group.create_task(self._adopt(), name="node adoption")  # once, after the list
        finally:
            self._tasks = None
            await endpoint.close()

    def identity(self, capacity: Mapping[str, str]) -> heartbeat.Identity:
        """What the Node says about this node once its endpoint serves: the addresses the API
        server reaches it at (:mod:`.addresses`), the port, capacity and machine. Blocking:
        reads the serving certificate and asks the resolver."""
        config = self.settings
        with open(server.certificate_file(config), "rb") as f:
            covered = addresses.Covered.of(f.read())
        resolves = addresses.resolves_to(self.name, config.address)
        found = addresses.node_addresses(
            self.name, config.address, resolves=resolves, covered=covered
        )
        dialed = addresses.dialed(found)
        if dialed is None or not covered(dialed):
            log.warning(
                "node %s: its serving certificate %s does not cover %s, the address an API "
                "server reaches it at: kube-apiserver will refuse it for logs and exec",
                self.name,
                server.certificate_file(config),
                dialed,
            )
        return heartbeat.Identity(
            name=self.name,
            labels=heartbeat.labels(self.name, config.labels),
            addresses=found,
            port=self.port,
            capacity=capacity,
            info=heartbeat.node_info(config.kubelet_version),
        )

    # -- pods -----------------------------------------------------------------------------------

    async def _watch_pods(self) -> None:
        stream = self.client.watch(
            PODS, field_selector=f"spec.nodeName={self.name}", settings=self.settings.watch
        )
        async for event in stream:
            if event.type == watch_.SYNC:
                listed = {
                    _uid(p): p for p in event.object.get("items") or [] if isinstance(p, dict)
                }
                for uid in [u for u in self._pods if u not in listed]:
                    self._forget(uid)
                for pod in listed.values():
                    self._observe(pod)
                self._listed.set()
            elif event.type in (watch_.ADDED, watch_.MODIFIED):
                self._observe(event.object)
            elif event.type == watch_.DELETED:
                self._forget(_uid(event.object))

    async def _adopt(self) -> None:
        """After the first list: pods on disk that are no longer bound here are removed (their
        workers find no Pod); the others were adopted by their workers."""
        await self._listed.wait()
        on_disk = await asyncio.to_thread(self.runtime.pods)
        for uid in on_disk:
            if uid not in self._pods and uid not in self._workers:
                log.info("pod %s on disk is no longer bound to this node; removing it", uid)
                self._spawn(uid, f"pod {uid} (gone)")

    def _observe(self, pod: dict[str, Any]) -> None:
        uid = _uid(pod)
        if not uid or uid in self._done:
            return
        if (pod.get("spec") or {}).get("nodeName") != self.name:
            self._forget(uid)
            return
        self._pods[uid] = pod
        namespace = _namespace(pod)
        self._by_name[(namespace, _name(pod))] = uid
        self._ensure_view(namespace)
        known = self._workers.get(uid)
        if known is not None:
            known.poke()
        else:
            self._spawn(uid, f"pod {namespace}/{_name(pod)}")

    def _forget(self, uid: str) -> None:
        self._done.discard(uid)  # a deleted pod's uid never comes back
        pod = self._pods.pop(uid, None)
        if pod is not None:
            key = (_namespace(pod), _name(pod))
            if self._by_name.get(key) == uid:
                del self._by_name[key]
        known = self._workers.get(uid)
        if known is not None:
            known.poke()

    def _spawn(self, uid: str, name: str) -> None:
        assert self._tasks is not None
        pod = self._pods.get(uid)
        if self._no_credentials and pod is not None and _api_access_mounts(pod):
            self.recorder.emit(
                pod,
                "Warning",
                NO_CREDENTIALS,
                f"the ServiceAccount token is not mounted at {podspec.API_ACCESS_PATH}: "
                f"{self._no_credentials}; in-cluster API access will not work in this pod",
            )
        pod_worker = worker.Worker(self, uid)
        self._workers[uid] = pod_worker
        task = self._tasks.spawn(pod_worker.run(), name=name)
        task.add_done_callback(lambda _t, uid=uid: self._finished(uid))

    def _finished(self, uid: str) -> None:
        self._workers.pop(uid, None)
        self.tokens.forget(uid)
        self._done.add(uid)
        self._drop_unused_views()

    # -- namespace views ----------------------------------------------------------------------

    def _ensure_view(self, namespace: str) -> None:
        if namespace in self._views or self._tasks is None:
            return
        view = NamespaceView()
        self._views[namespace] = view
        view.task = self._tasks.spawn(self._watch_namespace(namespace, view), f"names {namespace}")

    def _drop_unused_views(self) -> None:
        used = {_namespace(p) for p in self._pods.values()}
        for namespace in [n for n in self._views if n not in used]:
            view = self._views.pop(namespace)
            if view.task is not None:
                view.task.cancel()

    async def _watch_namespace(self, namespace: str, view: NamespaceView) -> None:
        """Follow the namespace's Services and pods until cancelled."""
        async with _aio.TaskGroup() as group:
            group.create_task(self._follow(namespace, SERVICES, view.services, view))
            group.create_task(self._follow(namespace, PODS, view.pods, view))

    async def _follow(
        self,
        namespace: str,
        r: kube.Resource,
        objects: dict[str, dict[str, Any]],
        view: NamespaceView,
    ) -> None:
        """One watch of the view. One that cannot be had (say, no RBAC for it on a cluster)
        is retried, never fatal to the agent: the pods then resolve fewer names."""
        while True:
            try:
                stream = self.client.watch(r, namespace=namespace, settings=self.settings.watch)
                async for event in stream:
                    self._apply(namespace, r, event, objects, view)
            except kube.ApiError as exc:
                log.warning(
                    "names of namespace %s: watching %s failed: %s; trying again in %.0fs",
                    namespace,
                    r.plural,
                    exc,
                    self.settings.retry_max,
                )
            await asyncio.sleep(self.settings.retry_max)

    def _apply(
        self,
        namespace: str,
        r: kube.Resource,
        event: watch_.Event,
        objects: dict[str, dict[str, Any]],
        view: NamespaceView,
    ) -> None:
        if event.type == watch_.SYNC:
            before = view.signature()
            objects.clear()
            for item in event.object.get("items") or []:
                objects[_name(item)] = item
            changed = view.signature() != before
        else:
            name = _name(event.object)
            old = objects.get(name)
            if event.type == watch_.DELETED:
                objects.pop(name, None)
                new = None
            else:
                objects[name] = new = event.object
            changed = _names_of(r.plural, old) != _names_of(r.plural, new)
        if changed:
            for uid, pod in list(self._pods.items()):
                if _namespace(pod) == namespace and uid in self._workers:
                    self._workers[uid].poke()


def runtime_settings(
    config: node_settings.Settings, gpus: Sequence[str] | None
) -> runtime.Settings:
    options: dict[str, Any] = {"isolation": config.isolation, "node_gpus": gpus}
    if config.path_prefix is not None:
        options["path_prefix"] = tuple(config.path_prefix)
    else:  # this Python's environment first, then the node's own tools (nslookup)
        tools_dir = os.path.join(config.root, tools.BIN)
        options["path_prefix"] = (os.path.dirname(sys.executable), tools_dir)
    if config.log_max_bytes is not None:
        options["log_max_bytes"] = config.log_max_bytes
    return runtime.Settings(root=config.root, **options)


def make_runtime(config: node_settings.Settings, gpus: Sequence[str] | None) -> Any:
    """The process runtime, behind a :class:`~kubetrain.local.node.router.Router` with a
    container engine when the settings name one."""
    processes = runtime.Runtime(runtime_settings(config, gpus))
    if config.container_runtime == "none":
        return processes
    try:  # the containers extra: only a node given an engine needs it
        from kubetrain.local.node import engine, router
    except ImportError as exc:
        raise runtime.StartError(
            runtime.CREATE_CONTAINER_ERROR,
            f"--container-runtime {config.container_runtime}: {exc}; accepted: install "
            "kubetrain[containers], or --container-runtime none",
        ) from exc
    url = config.container_host or engine.find(config.container_runtime)
    return router.Router(
        processes, engine.Engine(processes.settings, config.container_runtime, url)
    )


async def run(
    client: kube.Client,
    settings: node_settings.Settings,
    registered: asyncio.Event | None = None,
) -> None:
    """Run a node agent until cancelled; its pods keep running after it stops."""
    await Agent(client, settings).run(registered)
