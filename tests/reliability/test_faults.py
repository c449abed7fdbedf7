"""Jobs converge through an unreliable connection to the API server.

The operator (``kubetrain operator``), a node agent and the scheduler, each a process of its
own, reach the session's API server only through :mod:`~tests.reliability.faultproxy`, which
delays, refuses (409, 429, 500, 503), cuts and loses a seeded share of their requests, cuts
watch streams mid-way and answers some watches 410. A mix of small jobs runs through it for
real (PyTorchJobs that succeed, fail, or are retried after a retryable exit code, TFJobs, bare
pods; :data:`~tests.reliability.fault_fixtures.SCENARIOS`).

The test's own client (submissions, and the monitor's watches) goes to the API server
directly, so what it sees is the truth. It requires, at the end:

- every job in its scenario's terminal state, with upstream's reason, none left Restarting,
  and each still showing the end it showed when first seen finished;
- every pod name with exactly as many pods (uids) over the run as its scenario calls for:
  one, two for the pod a retryable exit code replaced; never a duplicate;
- every pod of every finished job serving its log; no process of the run left on the node;
- faults injected into every component's traffic.

``KUBETRAIN_FAULT_JOBS`` sets the number of jobs (default 20) and ``KUBETRAIN_FAULT_RATE``
the share of requests that get a fault (default 0.15), for longer manual runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
from collections import Counter
from pathlib import Path
from typing import Final

from kubetrain import _aio, kube
from tests.apiserver.cascade import eventually, run
from tests.reliability import fault_fixtures, faultproxy
from tests.reliability.fault_fixtures import (
    Figures,
    Monitor,
    Settling,
    check_logs,
    check_outcomes,
    check_processes,
    duplicates,
    lost,
    node_process,
    node_ready,
    operator_process,
    process_table,
    scheduler_process,
    submit,
)

figures = fault_fixtures.figures

SEED: Final = 20241121
JOBS: Final = int(os.environ.get("KUBETRAIN_FAULT_JOBS", "20"))
RATE: Final = float(os.environ.get("KUBETRAIN_FAULT_RATE", "0.15"))
FAULTS: Final = faultproxy.Faults(rate=RATE, seed=SEED, watch_drop=0.3)
SUBMIT_GAP: Final = (0.0, 0.3)  # seconds between two submissions
FINISH_TIMEOUT: Final = 120.0
CLIENTS: Final = ("kubetrain-operator", "kubetrain-node", "default-scheduler")


def test_jobs_converge_through_faults(
    kubeconfig: str, namespace: str, tmp_path: Path, figures: Figures
) -> None:
    pki = fault_fixtures.local_pki(kubeconfig)
    rng = random.Random(SEED)
    token = secrets.token_hex(8)
    marks = tmp_path / "marks"
    marks.mkdir()
    root = tmp_path / "node"
    node = f"kt-faults-{token[:6]}"
    jobs = fault_fixtures.plan(JOBS, rng)
    url, upstream_tls = fault_fixtures.upstream_of(kubeconfig)
    serving = fault_fixtures.serving_tls(pki)

    async def body() -> None:
        async with (
            faultproxy.running(url, upstream_tls, FAULTS, serving_tls=serving) as proxy,
            await kube.Client.from_kubeconfig(kubeconfig) as client,
        ):
            proxied = proxy.write_kubeconfig(kubeconfig, tmp_path / "proxied.kubeconfig")
            try:
                async with fault_fixtures.processes() as started:
                    started += [
                        node_process(proxied, root, node, pki, tmp_path / "node.log"),
                        scheduler_process(proxied, namespace, node, tmp_path / "scheduler.log"),
                        operator_process(proxied, namespace, tmp_path / "operator.log"),
                    ]
                    for process in started:
                        await asyncio.to_thread(process.start)
                    await node_ready(client, node)
                    await converge(client, proxy, started)
            finally:
                with contextlib.suppress(kube.ApiError):
                    await client.delete(fault_fixtures.NODES, node)

    async def converge(
        client: kube.Client, proxy: faultproxy.FaultProxy, started: list[fault_fixtures.Process]
    ) -> None:
        monitor = Monitor(client, namespace, {j.name: j for j in jobs})
        async with _aio.TaskGroup() as group:
            watching = group.create_task(monitor.run(), name="monitor")
            try:
                acknowledged: list[str] = []
                await submit(client, jobs, namespace, token, marks, rng, SUBMIT_GAP, acknowledged)

                settled = Settling(client, jobs, namespace)
                try:
                    state = await eventually(
                        settled, "every job at its end", timeout=FINISH_TIMEOUT
                    )
                except AssertionError as exc:
                    evidence = await fault_fixtures.unsettled(
                        client, jobs, namespace, monitor, started
                    )
                    raise AssertionError(
                        f"{exc}: {settled.waiting}; faults {dict(proxy.counts)}\n{evidence}"
                    ) from None
                faults = sum(proxy.counts.values())
                wrong = check_outcomes(jobs, acknowledged, state, monitor)
                doubled, missing = duplicates(jobs, monitor)
                wrong += doubled + missing
                wrong += await check_logs(client, jobs, namespace, state)
                table = await asyncio.to_thread(process_table, root, token)
                wrong += check_processes(table, state)
            finally:
                watching.cancel()
        hit: Counter[str] = Counter()
        for (client_name, _), count in proxy.by_client.items():
            hit[client_name] += count
        figures.add(
            f"faults: {len(jobs)} jobs through {proxy.requests} requests, {faults} faults "
            f"injected ({fault_fixtures.counted(proxy.counts)}; per client: "
            f"{fault_fixtures.counted(hit)}); jobs lost {len(lost(acknowledged, state))}, "
            f"duplicate pods {len(doubled)}"
        )
        assert wrong == [], "\n".join(wrong)
        assert all(hit[name] > 0 for name in CLIENTS), f"faults per client: {dict(hit)}"

    try:
        run(body())
    finally:
        fault_fixtures.sweep(root, token)
