"""The node agent: kubetrain's kubelet for one machine, an ordinary API client.

It registers its Node and keeps it and its Lease fresh (:mod:`.heartbeat`: capacity from this
machine, the addresses the API server reaches it at (:mod:`.addresses`), the port of its HTTPS
endpoint, nodeInfo, a Ready condition); watches the pods bound to it (``spec.nodeName``) and
runs one :class:`~.worker.Worker` per pod; watches the Services and pods of every namespace it
has pods in, so that each pod's /etc/hosts names them all (:mod:`.views`, :mod:`.hosts`);
assigns GPUs (:mod:`.machine`); requests the pods' ServiceAccount tokens (:mod:`.tokens`) and
tells them where the API server is, so that a process in a pod reaches it with in-cluster
configuration; writes events as the kubelet does (:mod:`kubetrain.kube.record`); and serves
logs and exec (:mod:`.server`). On start it first lists what the runtime has on disk, so a
restarted agent (even after ``kill -9``) adopts the containers still running, reports those
that finished meanwhile, and removes those whose pod is gone.

Owns: that wiring: which pods run here, their workers, and the watches of their namespaces.
Must not: run processes (the runtime does),
compute a pod's specs or status (:mod:`.podspec`, :mod:`.status`), or stop pods when it stops
itself: they outlive it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final

from kubetrain import _aio, kube
from kubetrain.kube import record, resource, tasks
from kubetrain.kube import watch as watch_
from kubetrain.local.node import (
    addresses,
    heartbeat,
    hosts,
    machine,
    podspec,
    podssh,
    runtime,
    server,
    tokens,
    tools,
    views,
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
DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def now() -> datetime:
    return datetime.now(timezone.utc)


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
        self.tokens = tokens.Tokens(client)
        self.devices = machine.Devices(0)
        self.host = podspec.Host(self.name, config.address)
        self.machine: machine.Machine | None = None
        self.port = 0
        self.heartbeat: heartbeat.Heartbeat | None = None
        self._pods: dict[str, dict[str, Any]] = {}  # uid → the latest Pod bound here
        self._by_name: dict[tuple[str, str], str] = {}
        self._workers: dict[str, worker.Worker] = {}
        self._done: set[str] = set()  # uids whose worker has finished for good
        self._views: dict[str, views.NamespaceView] = {}
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
        issued, token_errors = await self._fetch_tokens(namespace, needs.tokens)
        return podspec.Sources(
            cm, sec, cl, dict(zip(pv_names, pvs, strict=True)), issued, token_errors
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
        issued = {n: a for n, a in zip(wanted, answers, strict=True) if isinstance(a, str)}
        errors = {n: str(a) for n, a in zip(wanted, answers, strict=True) if not isinstance(a, str)}
        return issued, errors

    # -- life -----------------------------------------------------------------------------------

    async def run(self, registered: asyncio.Event | None = None) -> None:
        """Register, serve, and run pods until cancelled. Pods keep running afterwards.

        ``registered`` is set once the Node carries this agent's serving port: until then the
        API server would send ``kubectl logs`` and ``exec`` to the port of an earlier run."""
        config = self.settings
        self.machine = await machine.Machine.probe(config)
        self.devices = machine.Devices(self.machine.gpus)
        await asyncio.to_thread(tools.install, config.root)
        if self._own_runtime:  # the runtime gives out the GPUs counted here, no others
            self.runtime = make_runtime(config, self.devices.ids)
        isolation = await asyncio.to_thread(lambda: self.runtime.isolation)
        await asyncio.to_thread(self.devices.recover, self.runtime)
        capacity = self.machine.capacity(config.max_pods)
        self._no_credentials = tokens.credentials_mountable(isolation)
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
            api=tokens.api_address(self.client.host),
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
            close = getattr(self.runtime, "close", None)  # a container engine's client
            if close is not None:
                await close()

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
        if self._no_credentials and pod is not None and tokens.api_access_mounts(pod):
            self.recorder.emit(
                pod,
                "Warning",
                tokens.NO_CREDENTIALS,
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
        view = views.NamespaceView()
        self._views[namespace] = view
        view.task = self._tasks.spawn(self._watch_namespace(namespace, view), f"names {namespace}")

    def _drop_unused_views(self) -> None:
        used = {_namespace(p) for p in self._pods.values()}
        for namespace in [n for n in self._views if n not in used]:
            view = self._views.pop(namespace)
            if view.task is not None:
                view.task.cancel()

    async def _watch_namespace(self, namespace: str, view: views.NamespaceView) -> None:
        """Follow the namespace's Services and pods until cancelled."""
        async with _aio.TaskGroup() as group:
            group.create_task(self._follow(namespace, SERVICES, view.services, view))
            group.create_task(self._follow(namespace, PODS, view.pods, view))

    async def _follow(
        self,
        namespace: str,
        r: kube.Resource,
        objects: dict[str, dict[str, Any]],
        view: views.NamespaceView,
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
        view: views.NamespaceView,
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
            changed = views.names_of(r.plural, old) != views.names_of(r.plural, new)
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
