"""A pretend cluster for planning tests: it holds one job and what the job owns, applies a
:class:`~kubetrain.operator.jobs.plan.Plan` the way the reconciler would, and lets a test play
the node (pod phases, exit codes, restarts). No sockets, no clock: time is given per step.
"""

from __future__ import annotations

import copy
import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

from kubetrain import frameworks
from kubetrain.operator.jobs import children, plan, settings

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """A JSON merge patch, in place."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class World:
    def __init__(
        self, doc: dict[str, Any], config: settings.Settings | None = None, **observed: Any
    ) -> None:
        self.job = copy.deepcopy(doc)
        self.job["metadata"].setdefault("uid", "job-uid")
        self.framework = frameworks.for_kind(self.job["kind"])
        self.settings = config or settings.Settings()
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.extra = observed
        self.deleted = False
        self.ensured: list[str] = []
        self.announced: list[plan.Event] = []
        self._uids = itertools.count(1)

    # -- what the cache would hold ---------------------------------------------------------------

    def of(self, plural: str) -> list[dict[str, Any]]:
        return [obj for (kind, _), obj in sorted(self.objects.items()) if kind == plural]

    @property
    def pods(self) -> dict[str, dict[str, Any]]:
        return {children.name_of(p): p for p in self.of("pods")}

    @property
    def services(self) -> dict[str, dict[str, Any]]:
        return {children.name_of(s): s for s in self.of("services")}

    @property
    def status(self) -> dict[str, Any]:
        return self.job.get("status") or {}

    def condition(self, type_: str) -> dict[str, Any] | None:
        for condition in self.status.get("conditions") or []:
            if condition["type"] == type_:
                return condition
        return None

    def observed(self) -> plan.Observed:
        group = None
        for (kind, name), obj in self.objects.items():
            if kind == "podgroups" and name == self.job["metadata"]["name"]:
                group = obj
        cached = {
            key: obj for key, obj in self.objects.items() if key[0] not in ("pods", "services")
        }
        return plan.Observed(
            job=copy.deepcopy(self.job),
            pods=self.of("pods"),
            services=self.of("services"),
            pod_group=group,
            cached=cached,
            **self.extra,
        )

    # -- one reconcile ---------------------------------------------------------------------------

    def plan(self, now: datetime = T0) -> plan.Plan:
        return plan.plan(self.framework, self.settings, self.observed(), now)

    def step(self, now: datetime = T0) -> plan.Plan:
        decided = self.plan(now)
        self.apply(decided)
        return decided

    def apply(self, decided: plan.Plan) -> None:
        if decided.status is not None and decided.status_changed:
            self.job["status"] = copy.deepcopy(decided.status)
        for delete in decided.deletes:
            if delete.before is not None:
                self.patch(delete.before)
            self.objects.pop((delete.resource.plural, delete.name), None)
            if delete.announce is not None:
                self.announced.append(delete.announce)
        for create in decided.creates:
            step: plan.Create | None = create
            while step is not None:
                self.add(step.resource.plural, step.body)
                step = step.then
        for patch in decided.patches:
            self.patch(patch)
        self.ensured += [f"{c.resource.plural}/{c.name}" for c in decided.ensure]
        self.deleted = self.deleted or decided.delete_job

    def add(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(body)
        obj["metadata"].setdefault("uid", f"uid-{next(self._uids)}")
        key = (plural, obj["metadata"]["name"])
        self.objects.setdefault(key, obj)
        return self.objects[key]

    def patch(self, patch: plan.Patch) -> None:
        target = self.objects.get((patch.resource.plural, patch.name))
        if target is not None:
            merge(target, patch.patch)

    # -- playing the node ------------------------------------------------------------------------

    def run(self, *names: str) -> None:
        for name in names or tuple(self.pods):
            self.pods[name]["status"] = {"phase": "Running"}

    def exit(self, name: str, code: int, *, container: str | None = None) -> None:
        """The pod's default container exits with ``code``; the pod ends with it."""
        pod = self.pods[name]
        container = container or self.framework.job_class.DEFAULT_CONTAINER
        pod["status"] = {
            "phase": "Succeeded" if code == 0 else "Failed",
            "containerStatuses": [
                {"name": container, "restartCount": 0, "state": {"terminated": {"exitCode": code}}}
            ],
        }

    def restarted(self, name: str, count: int) -> None:
        """The kubelet restarted the pod's default container in place ``count`` times."""
        container = self.framework.job_class.DEFAULT_CONTAINER
        self.pods[name]["status"] = {
            "phase": "Running",
            "containerStatuses": [{"name": container, "restartCount": count, "state": {}}],
        }

    def edit(self, **spec: Any) -> None:
        """Change the job's spec as a user would (``runPolicy`` fields merge)."""
        for key, value in spec.items():
            if key == "runPolicy":
                self.job["spec"].setdefault("runPolicy", {}).update(value)
            else:
                self.job["spec"][key] = value
