"""One operator process: a manager with the v1 job controllers and the TrainJob controller.

This is what ``kubetrain operator`` runs on a cluster (in the Deployment from ``deploy/``) and
what the local control plane runs beside its API server. Both pass an :class:`Options`; the
difference between them is only in the options (the local one forces host networking, since
every local pod shares the host's network, and needs no leader election or endpoints).

Must not: read argv or the environment (``kubetrain.cli.operator`` does), or know whether the
API server is a real one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from kubetrain import frameworks, kube
from kubetrain.operator.jobs import settings as job_settings
from kubetrain.operator.jobs import setup as job_setup
from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import setup as trainjob_setup
from kubetrain.operator.webhook import server as webhook_server
from kubetrain.operator.webhook import settings as webhook_settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    """Everything an operator process is configured with.

    ``schemes`` is upstream's ``--enable-scheme``: the v1 kinds to run controllers for, by
    kind name, case-insensitive (empty: all seven). ``trainjobs`` turns the Trainer v2
    controller on or off (off on a cluster whose trainer.kubeflow.org CRDs are not installed).
    ``webhook`` serves the admission webhooks (None: not served; the local control plane
    admits in its API server). ``controllers`` off leaves only the webhook.
    """

    manager: manager.Settings = field(default_factory=manager.Settings)
    jobs: job_settings.Settings = field(default_factory=job_settings.Settings)
    trainjob: trainjob_setup.Settings = field(default_factory=trainjob_setup.Settings)
    schemes: Sequence[str] = ()
    trainjobs: bool = True
    webhook: webhook_settings.Settings | None = None
    controllers: bool = True


def enabled_frameworks(schemes: Sequence[str]) -> list[frameworks.Framework]:
    """The frameworks named in ``schemes`` (all when empty); ValueError names an unknown one."""
    if not schemes:
        return list(frameworks.FRAMEWORKS)
    by_name = {f.kind.lower(): f for f in frameworks.FRAMEWORKS}
    chosen = []
    for scheme in schemes:
        found = by_name.get(scheme.lower())
        if found is None:
            accepted = ", ".join(f.kind for f in frameworks.FRAMEWORKS)
            raise ValueError(f"--enable-scheme: unknown kind {scheme!r}; accepted: {accepted}")
        if found not in chosen:
            chosen.append(found)
    return chosen


def build(client: kube.Client, options: Options) -> manager.Manager:
    """A manager with the webhook and every enabled controller registered, not yet running
    (its controllers start once the webhook serves)."""
    mgr = manager.Manager(client, options.manager)
    if options.webhook is not None:
        mgr.add(webhook_server.Webhook(client, options.webhook))
    if not options.controllers:
        return mgr
    job_setup.setup(mgr, options.jobs, enabled_frameworks(options.schemes))
    if options.trainjobs:
        trainjob_setup.setup(mgr, options.trainjob)
    return mgr


async def run(client: kube.Client, options: Options | None = None) -> None:
    """Run the operator until cancelled."""
    options = options or Options()
    mgr = build(client, options)
    log.info("operator starting (identity %s)", mgr.identity)
    await mgr.run()
