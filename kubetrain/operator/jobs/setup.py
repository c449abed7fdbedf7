"""Wiring the v1 job controllers into a manager: one controller per framework.

Each controller is named like upstream's (``pytorchjob-controller``, ...), reconciles its kind,
and is woken by events of the pods, Services (and PodGroups, MPI's ConfigMap) its jobs
control. Passing fewer frameworks is upstream's ``--enable-scheme``.

Must not: start anything (the manager runs what is registered here) or read flags.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetrain import frameworks as frameworks_
from kubetrain.operator import hostports
from kubetrain.operator.jobs import children, reconciler
from kubetrain.operator.jobs import settings as settings_
from kubetrain.operator.runtime import manager


def setup(
    mgr: manager.Manager,
    settings: settings_.Settings | None = None,
    frameworks: Iterable[frameworks_.Framework] = frameworks_.FRAMEWORKS,
) -> dict[str, reconciler.JobReconciler]:
    """Register one controller per framework with ``mgr``; returns the reconcilers by kind."""
    settings = settings or settings_.Settings()
    book = hostports.book(mgr, children.SERVICES)  # the TrainJob controller's too
    made = {}
    for framework in frameworks:
        job_reconciler = reconciler.JobReconciler(mgr, framework, settings, book)
        mgr.controller(
            framework.controller,
            job_reconciler,
            for_=job_reconciler.resource,
            owns=job_reconciler.owns,
            workers=settings.workers,
        )
        made[framework.kind] = job_reconciler
    return made
