"""kubetrain's garbage collector and namespace controller, each the only one at work: a local
API server started with no controllers beside it, and the two run in-process on kube.Client.

The scenarios are those of tests/apiserver (the documented Kubernetes behaviour); here they
prove that kubetrain.local.gc and kubetrain.local.namespaces produce it. Added: what only a
controller test can show — collecting what happened while it was not running, and the
namespace deletion conditions it reports.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from kubetrain import _aio, kube
from kubetrain.kube import watch
from kubetrain.local import gc, namespaces
from tests import processes
from tests.apiserver import test_gc, test_namespace_deletion
from tests.apiserver.cascade import (
    CONFIGMAPS,
    HOLD,
    NAMESPACES,
    configmap,
    create,
    eventually,
    fetch,
    new_namespace,
    ref,
    release,
    run,
    wait_deleting,
    wait_gone,
)

START_TIMEOUT = 60.0
# Without its controllers the daemon is a bare API server; the rest is `kubetrain apiserver`.
BARE_APISERVER = (
    "import sys; from kubetrain.local import daemon; daemon.components = lambda *args: []; "
    "from kubetrain.cli.main import main; sys.exit(main(sys.argv[1:]))"
)
GC_SETTINGS = gc.Settings(
    workers=4,
    rediscover_every=1.0,
    retry_initial=0.05,
    retry_max=1.0,
    watch=watch.Settings(timeout_seconds=60),
)
NS_SETTINGS = namespaces.Settings(retry_initial=0.05, retry_max=0.5)


def _ready(home: Path, pid: int) -> bool:
    from kubetrain.local import daemon  # where the test server says it listens

    paths = daemon.Paths(str(home))
    status = daemon.read_status(paths)
    if not status or status.get("pid") != pid or not status.get("url"):
        return False
    return daemon.probe_ready(paths, status["url"], timeout=1.0)


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local API server with no garbage collector or namespace controller of its own."""
    home = tmp_path_factory.mktemp("bare-apiserver")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = str(home)
    command = [sys.executable, "-c", BARE_APISERVER, "apiserver", "--home", str(home)]
    command += ["--memory", "--port", "0"]
    log_path = home / "apiserver.log"
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _ready(home, process.pid):
            if process.poll() is not None:
                pytest.fail(
                    f"the API server exited:\n{log_path.read_text(errors='replace')[-4000:]}"
                )
            if time.monotonic() > deadline:
                pytest.fail("the API server did not become ready in time")
            time.sleep(0.05)
        yield str(home / "kubeconfig")
    finally:
        processes.stop(process, timeout=20)


async def with_controllers(
    kubeconfig: str,
    body: Callable[[kube.Client], Awaitable[None]],
    *,
    collector: bool = True,
    namespace_controller: bool = True,
) -> None:
    """Run ``body`` while kubetrain's controllers run beside it; stop them after."""
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        stop = asyncio.Event()
        async with _aio.TaskGroup() as group:
            if collector:
                group.create_task(gc.run(client, stop=stop, settings=GC_SETTINGS), name="gc")
            if namespace_controller:
                group.create_task(
                    namespaces.run(client, stop=stop, settings=NS_SETTINGS), name="namespaces"
                )
            try:
                await body(client)
            finally:
                stop.set()


def in_fresh_namespace(
    scenario: Callable[[kube.Client, str], Awaitable[None]],
) -> Callable[[kube.Client], Awaitable[None]]:
    async def body(client: kube.Client) -> None:
        ns = await new_namespace(client)
        try:
            await scenario(client, ns)
        finally:
            await client.delete(NAMESPACES, ns)
            await wait_gone(client, None, ns, NAMESPACES)  # the namespace controller's work too

    return body


@pytest.mark.parametrize("scenario", test_gc.SCENARIOS.values(), ids=test_gc.SCENARIOS.keys())
def test_garbage_collection_by_kubetrain(kubeconfig: str, scenario: test_gc.Scenario) -> None:
    run(with_controllers(kubeconfig, in_fresh_namespace(scenario)))


@pytest.mark.parametrize(
    "name",
    ["custom resources cascade", "custom resources orphaned", "custom owner in the foreground"],
)
def test_garbage_collection_of_custom_resources_by_kubetrain(
    kubeconfig: str, widgets: kube.Resource, name: str
) -> None:
    scenario = test_gc.custom_resource_scenarios(widgets)[name]
    run(with_controllers(kubeconfig, in_fresh_namespace(scenario)))


@pytest.mark.parametrize(
    "scenario",
    test_namespace_deletion.SCENARIOS.values(),
    ids=test_namespace_deletion.SCENARIOS.keys(),
)
def test_namespace_deletion_by_kubetrain(
    kubeconfig: str, scenario: test_namespace_deletion.Scenario
) -> None:
    run(with_controllers(kubeconfig, scenario))


def test_custom_resources_are_deleted_with_their_namespace_by_kubetrain(
    kubeconfig: str, widgets: kube.Resource
) -> None:
    run(with_controllers(kubeconfig, test_namespace_deletion.custom_resource_scenario(widgets)))


def test_without_the_controllers_nothing_cascades(kubeconfig: str) -> None:
    """The baseline that makes the tests above mean something: this API server alone only
    marks deletions."""

    async def body(client: kube.Client) -> None:
        ns = await new_namespace(client)
        owner = await create(client, ns, configmap("owner"))
        await create(client, ns, configmap("dep", ref(owner)))
        await client.delete(CONFIGMAPS, "owner", namespace=ns)
        await wait_gone(client, ns, "owner")
        assert await fetch(client, ns, "dep") is not None
        await client.delete(NAMESPACES, ns)
        marked = await fetch(client, None, ns, NAMESPACES)
        assert marked is not None
        assert marked["status"]["phase"] == "Terminating"
        # leave it for the next test's controllers to finish
        await with_controllers_on(client, ns)

    async def with_controllers_on(client: kube.Client, ns: str) -> None:
        stop = asyncio.Event()
        async with _aio.TaskGroup() as group:
            group.create_task(gc.run(client, stop=stop, settings=GC_SETTINGS), name="gc")
            group.create_task(namespaces.run(client, stop=stop, settings=NS_SETTINGS), name="ns")
            try:
                await wait_gone(client, None, ns, NAMESPACES)
            finally:
                stop.set()

    run(with_controllers(kubeconfig, body, collector=False, namespace_controller=False))


def test_what_happened_while_the_collector_was_down_is_collected_when_it_starts(
    kubeconfig: str,
) -> None:
    state: dict[str, str] = {}

    async def before(client: kube.Client) -> None:
        ns = state["ns"] = await new_namespace(client)
        gone_owner = await create(client, ns, configmap("gone-owner"))
        await create(client, ns, configmap("dep-of-gone", ref(gone_owner)))
        orphaner = await create(client, ns, configmap("orphaner"))
        await create(client, ns, configmap("dep-of-orphaner", ref(orphaner)))
        waiter = await create(client, ns, configmap("waiter"))
        await create(client, ns, configmap("dep-of-waiter", ref(waiter, block=True)))
        await client.delete(CONFIGMAPS, "gone-owner", namespace=ns, propagation_policy="Background")
        await client.delete(CONFIGMAPS, "orphaner", namespace=ns, propagation_policy="Orphan")
        await client.delete(CONFIGMAPS, "waiter", namespace=ns, propagation_policy="Foreground")
        await wait_gone(client, ns, "gone-owner")
        await wait_deleting(client, ns, "orphaner")
        await wait_deleting(client, ns, "waiter")

    async def after(client: kube.Client) -> None:
        ns = state["ns"]
        await wait_gone(client, ns, "dep-of-gone")
        await wait_gone(client, ns, "orphaner")
        await wait_gone(client, ns, "dep-of-waiter")
        await wait_gone(client, ns, "waiter")
        kept = await fetch(client, ns, "dep-of-orphaner")
        assert kept is not None
        assert not kept["metadata"].get("ownerReferences")
        await client.delete(NAMESPACES, ns)
        await wait_gone(client, None, ns, NAMESPACES)

    run(with_controllers(kubeconfig, before, collector=False, namespace_controller=False))
    run(with_controllers(kubeconfig, after))


def test_a_terminating_namespace_reports_what_it_waits_for(kubeconfig: str) -> None:
    """kube's namespace controller conditions: content remaining, and the finalizers that
    hold it, until the content is gone."""

    async def body(client: kube.Client) -> None:
        ns = await new_namespace(client)
        await create(client, ns, configmap("held", finalizers=[HOLD]))
        await client.delete(NAMESPACES, ns)

        async def reported() -> dict[str, dict] | None:
            got = await fetch(client, None, ns, NAMESPACES)
            assert got is not None
            conditions = {c["type"]: c for c in got["status"].get("conditions") or []}
            waiting = conditions.get("NamespaceFinalizersRemaining", {}).get("status") == "True"
            return conditions if waiting else None

        conditions = await eventually(reported, "the namespace reports the finalizer it waits for")
        assert conditions["NamespaceContentRemaining"]["status"] == "True"
        assert conditions["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
        assert (
            "configmaps has 1 resource instances"
            in conditions["NamespaceContentRemaining"]["message"]
        )
        assert conditions["NamespaceFinalizersRemaining"]["reason"] == "SomeFinalizersRemain"
        assert (
            f"{HOLD} in 1 resource instances"
            in conditions["NamespaceFinalizersRemaining"]["message"]
        )
        assert conditions["NamespaceDeletionDiscoveryFailure"]["status"] == "False"
        assert conditions["NamespaceDeletionContentFailure"]["status"] == "False"
        await release(client, ns, "held")
        await wait_gone(client, None, ns, NAMESPACES)

    run(with_controllers(kubeconfig, body))


def test_a_namespace_waits_for_the_held_dependent_of_a_foreground_owner(kubeconfig: str) -> None:
    """The namespace controller deletes content in the background (as kube's does, which
    also ends the owner's foreground wait); the held dependent still holds the namespace."""

    async def body(client: kube.Client) -> None:
        ns = await new_namespace(client)
        owner = await create(client, ns, configmap("owner"))
        await create(client, ns, configmap("dep", ref(owner, block=True), finalizers=[HOLD]))
        await client.delete(CONFIGMAPS, "owner", namespace=ns, propagation_policy="Foreground")
        await client.delete(NAMESPACES, ns)
        await wait_deleting(client, ns, "dep")
        await wait_gone(client, ns, "owner")
        assert await fetch(client, None, ns, NAMESPACES) is not None
        await release(client, ns, "dep")
        await wait_gone(client, None, ns, NAMESPACES)

    run(with_controllers(kubeconfig, body))
