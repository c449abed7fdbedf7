"""What makes pods run on the local control plane: the scheduler, a node agent for this machine,
the operator, and the built-in training runtimes, composed for the daemon.

``kubetrain up`` (through ``kubetrain apiserver --with-workloads``) hands :func:`workloads` to
:func:`kubetrain.local.daemon.run`. It lives here because it needs both ``kubetrain.local``
and ``kubetrain.operator``, which never import each other (they meet only through the API
server), and the command line is the one layer above both.

Each workload is an ordinary API client of the control plane, with the settings a single
machine needs: the operator forces host networking on the pods it creates (every local pod
shares the host's network, so each gets a port of its own) and runs without leader election
or endpoints; the node agent serves a certificate from the control plane's CA.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence

from kubetrain import _aio, kube
from kubetrain.local import daemon, tls
from kubetrain.local.node import agent
from kubetrain.local.node import settings as node_settings
from kubetrain.local.scheduler import scheduler
from kubetrain.operator import process
from kubetrain.operator.jobs import settings as job_settings
from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import builtin
from kubetrain.operator.trainjob import setup as trainjob_setup

log = logging.getLogger(__name__)

# What pods get from the daemon's own environment, as an image's ENV would give them.
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER")
STOP_GRACE = 5.0  # seconds each container gets to stop when the control plane goes down
BACKOFF_SPAN = 30  # the kubelet's crash back-off ends at 30 times its first delay (300 s / 10 s)
RUNTIMES = kube.Resource(
    "trainer.kubeflow.org",
    "v1alpha1",
    "clustertrainingruntimes",
    namespaced=False,
    kind="ClusterTrainingRuntime",
)


def operator_options() -> process.Options:
    return process.Options(
        manager=manager.Settings(leader_election=False, metrics_address="", probe_address=""),
        jobs=job_settings.Settings(force_host_network=True),
        trainjob=trainjob_setup.Settings(force_host_network=True),
    )


def workloads(
    paths: daemon.Paths,
    environ: Mapping[str, str] | None = None,
    *,
    node_backoff: float | None = None,
    container_runtime: str = "none",
) -> list[daemon.Component]:
    """The scheduler, the node agent, the operator and the runtime installer, in start order.

    ``node_backoff`` shortens the node's crash back-off (tests): the first delay in seconds,
    doubling up to :data:`BACKOFF_SPAN` times it; None keeps the kubelet's 10 s up to 300 s.
    """
    environ = os.environ if environ is None else environ
    kubeconfig = paths.kubeconfig
    environment = tuple((k, environ[k]) for k in INHERITED if k in environ)

    registered = asyncio.Event()  # `kubectl logs` right after `kubetrain up` finds the node

    async def run_node(client: kube.Client) -> None:
        cluster = await kube.from_kubeconfig(kubeconfig)
        config = node_settings.Settings(
            root=os.path.join(paths.home, "node"),
            ca_cert=os.path.join(paths.pki, tls.CA_CERT),
            ca_key=os.path.join(paths.pki, tls.CA_KEY),
            token=node_settings.token_of(cluster.configuration),
            environment=environment,
            container_runtime=container_runtime,  # type: ignore[arg-type]  # the CLI's choices
        )
        if node_backoff is not None:
            config = dataclasses.replace(
                config, backoff_initial=node_backoff, backoff_max=node_backoff * BACKOFF_SPAN
            )
        try:
            await agent.run(client, config, registered)
        finally:
            await stop_pods(config)

    installed = asyncio.Event()  # the first `kubetrain submit trainjob` finds the runtimes

    async def install(client: kube.Client) -> None:
        await install_runtimes(client, installed=installed)

    return [
        daemon.client_component(
            "runtime-installer",
            kubeconfig,
            install,
            user_agent="kubetrain-runtimes",
            ready=installed.wait,
        ),
        daemon.client_component(
            "scheduler", kubeconfig, scheduler.run, user_agent="default-scheduler"
        ),
        daemon.client_component(
            "node",
            kubeconfig,
            run_node,
            user_agent="kubetrain-node",
            field_manager="kubelet",
            ready=registered.wait,
        ),
        daemon.client_component(
            "operator",
            kubeconfig,
            lambda client: process.run(client, operator_options()),
            user_agent="kubetrain-operator",
        ),
    ]


async def stop_pods(config: node_settings.Settings, grace: float = STOP_GRACE) -> None:
    """Stop every container still running: the control plane is going down, and it leaves no
    process behind (a node agent on its own leaves them running, to adopt them after a
    restart). Their pods read as terminated when it comes back, and restart by their policy."""
    node_runtime = agent.make_runtime(config, None)
    if config.container_runtime != "none":  # and the engine keeps none of its containers
        await node_runtime.release(grace)
    running = [state for state in node_runtime.containers() if state.running]
    if not running:
        return
    log.info("stopping %d running container(s)", len(running))
    try:
        async with _aio.timeout(grace + 5.0):
            await asyncio.gather(
                *(node_runtime.stop(state.id, grace) for state in running),
                return_exceptions=True,
            )
    except _aio.TIMEOUT_ERRORS:
        log.warning("containers still stopping after %.0fs; leaving them", grace + 5.0)


async def install_runtimes(
    client: kube.Client,
    runtimes: Sequence[dict] | None = None,
    *,
    installed: asyncio.Event | None = None,
) -> None:
    """Create the built-in ClusterTrainingRuntimes that are missing; one a user has changed or
    deleted-and-recreated is left as it is. Runs once (then sets ``installed``), then waits to
    be stopped."""
    for blueprint in builtin.runtimes() if runtimes is None else runtimes:
        try:
            await client.create(RUNTIMES, blueprint)
        except kube.AlreadyExists:
            continue
        log.info("installed the built-in runtime %s", blueprint["metadata"]["name"])
    if installed is not None:
        installed.set()
    await _forever()


async def _forever() -> None:
    await asyncio.Event().wait()
