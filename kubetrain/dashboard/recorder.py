"""Keeps the training curves of every TrainJob the dashboard sees (:mod:`.curves` says where
and why): each new report in a TrainJob's ``trainerStatus`` becomes a point in its ConfigMap.

The hub's watches bring every change of a TrainJob, so every report made while a dashboard
runs is seen (a report replaces the last one at most every two seconds). New points wait in
memory until written; a write is a compare-and-swap on the ConfigMap's resourceVersion, and a
lost race (another dashboard wrote first) reads the ConfigMap again and merges. Where the
user may not write ConfigMaps, the points stay in this dashboard's memory and the job's page
says why they are not kept.

Owns: when and how a history is written. Must not: decide the format (:mod:`.curves`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from kubetrain import _aio, kube
from kubetrain.cli import jobkinds, jobs
from kubetrain.dashboard import curves, hub
from kubetrain.errors import KubetrainError
from kubetrain.kube import resource

log = logging.getLogger(__name__)

WRITE_ATTEMPTS: Final = 5

JobKey = hub.JobKey


class NotOurs(KubetrainError):
    """The ConfigMap the curves would go in exists and belongs to someone else."""


class Recorder:
    """Adds each TrainJob's new reports to its history; :meth:`points` is what a page shows
    (the stored history with what is not written yet)."""

    def __init__(self, client: kube.Client, source: hub.Hub) -> None:
        self.client = client
        self.hub = source
        self.notes: dict[JobKey, str] = {}
        self._pending: dict[JobKey, list[curves.Point]] = {}
        self._unsaved: dict[JobKey, list[curves.Point]] = {}  # not allowed to write: kept here
        self._wake = asyncio.Event()

    def points(self, job: dict[str, Any]) -> list[curves.Point]:
        key = hub.job_key(job)
        stored = self.hub.curves_of(jobs.namespace_of(job), jobs.name_of(job))
        mine = curves.decode(stored) if stored and curves.owned_by(stored, job) else []
        current = curves.point_of(job)
        extra = [*self._unsaved.get(key, ()), *self._pending.get(key, ())]
        return curves.merged(mine, [*extra, *([current] if current else [])])

    async def run(self) -> None:
        """Record until cancelled."""
        async with _aio.TaskGroup() as group:
            group.create_task(self._watch(), name="dashboard: curves of TrainJobs")
            group.create_task(self._write_loop(), name="dashboard: curves writer")

    async def _watch(self) -> None:
        async with self.hub.listen() as listener:
            await self.hub.ready(jobkinds.TRAINJOB.kind, hub.CURVES_CONFIGMAP)
            for job in list(self.hub.stores[jobkinds.TRAINJOB.kind].values()):
                self._consider(hub.job_key(job))
            while True:
                for topic, key in await listener.next():
                    if topic == hub.JOB and key[0] == jobkinds.TRAINJOB.kind:
                        self._consider(key)

    def _consider(self, key: JobKey) -> None:
        job = self.hub.job(key)
        if job is None:
            self._pending.pop(key, None)
            self._unsaved.pop(key, None)
            self.notes.pop(key, None)
            return
        point = curves.point_of(job)
        if point is None or any(p.time == point.time for p in self.points_known(key, job)):
            return
        self._pending.setdefault(key, []).append(point)
        self._wake.set()

    def points_known(self, key: JobKey, job: dict[str, Any]) -> list[curves.Point]:
        """What is stored or waiting to be, without the job's current report."""
        stored = self.hub.curves_of(key[1], key[2])
        mine = curves.decode(stored) if stored and curves.owned_by(stored, job) else []
        return [*mine, *self._unsaved.get(key, ()), *self._pending.get(key, ())]

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            for key in list(self._pending):
                points = self._pending.pop(key, [])
                job = self.hub.job(key)
                if job is None or not points:
                    continue
                try:
                    await self._write(job, points)
                except (kube.Forbidden, NotOurs) as exc:
                    self._keep_unsaved(key, points, f"not saved in the cluster: {exc}")
                except kube.ApiError as exc:
                    log.warning("dashboard: training curves of %s: %s", key, exc)
                    self._keep_unsaved(key, points, f"not saved in the cluster: {exc.message}")
                except Exception as exc:  # one job's history must not stop the others'
                    log.exception("dashboard: training curves of %s", key)
                    self._keep_unsaved(key, points, f"not saved in the cluster: {exc}")

    def _keep_unsaved(self, key: JobKey, points: list[curves.Point], why: str) -> None:
        self._unsaved[key] = curves.merged(self._unsaved.get(key, []), points)
        if self.notes.get(key) != why:
            self.notes[key] = why
            self.hub.tell([(hub.CURVES, (key[1], key[2]))])

    async def _write(self, job: dict[str, Any], points: list[curves.Point]) -> None:
        namespace, name = jobs.namespace_of(job), jobs.name_of(job)
        stored = self.hub.curves_of(namespace, name)
        for _ in range(WRITE_ATTEMPTS):
            if stored is None:
                try:
                    await self.client.create(
                        resource.CONFIGMAPS, curves.configmap(job, curves.merged([], points))
                    )
                    return
                except kube.AlreadyExists:
                    stored = await self._read(namespace, name)
                    continue
            labels = (stored.get("metadata") or {}).get("labels") or {}
            if labels.get(curves.LABEL) != name:
                raise NotOurs(
                    f"ConfigMap {namespace}/{curves.configmap_name(name)} exists and is not "
                    f"the dashboard's (it has no label {curves.LABEL}={name})"
                )
            kept = curves.decode(stored) if curves.owned_by(stored, job) else []
            body = curves.configmap(job, curves.merged(kept, points))
            body["metadata"]["resourceVersion"] = (stored.get("metadata") or {}).get(
                "resourceVersion"
            )
            try:
                await self.client.replace(resource.CONFIGMAPS, body)
                return
            except kube.Conflict:
                stored = await self._read(namespace, name)
            except kube.NotFound:
                stored = None
        raise kube.Conflict(
            f"ConfigMap {namespace}/{curves.configmap_name(name)} kept changing", code=409
        )

    async def _read(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(
                resource.CONFIGMAPS, curves.configmap_name(name), namespace=namespace
            )
        except kube.NotFound:
            return None
