"""Wiring the TrainJob controller into an operator manager (:mod:`kubetrain.operator.runtime`).

``setup(manager, settings)`` registers the controller ``trainjob_controller`` (upstream's name)
for TrainJobs, owning the Pods, Services, ConfigMaps and Secrets it creates (their events
enqueue the TrainJob that controls them), and watching TrainingRuntimes and
ClusterTrainingRuntimes (a runtime that appears re-queues the TrainJobs that name it). Pod
events also tick off the reconciler's expectations.

PodGroups are not watched unless ``Settings.watch_pod_groups``: on a cluster without the
Volcano or scheduler-plugins CRDs an informer for them would never sync and the controller
would never start. Unwatched, a PodGroup is created once per TrainJob (409 = exists) and
changed only while the job is suspended, which is all the controller needs.

``force_host_network`` puts every pod on the host's network (the local control plane, whose
pods all share the host's network, runs the operator with it): each TrainJob is then given a
port from ``host_port_range`` for its rank 0 to listen on, instead of 29500 for all of them.

Must not: reconcile, or do I/O itself (the manager starts the informers).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetrain.operator import hostports
from kubetrain.operator.runtime import expectations, manager
from kubetrain.operator.trainjob import framework, kinds, reconciler

CONTROLLER_NAME = "trainjob_controller"
EVENT_COMPONENT = "trainjob-controller"
DEFAULT_WORKERS = 5  # upstream's groupKindConcurrency for TrainJob


@dataclass(frozen=True)
class Settings:
    workers: int = DEFAULT_WORKERS
    watch_pod_groups: bool = False
    expectations_ttl: float = expectations.TTL
    host_port_range: tuple[int, int] = hostports.DEFAULT_RANGE
    force_host_network: bool = False

    def __post_init__(self) -> None:
        hostports.check_range(*self.host_port_range)


def setup(
    manager_: manager.Manager, settings: Settings | None = None
) -> reconciler.TrainJobReconciler:
    """Register the TrainJob controller with ``manager_`` (before it runs); returns its
    reconciler."""
    settings = settings or Settings()
    framework.check()
    pod_group_resources = (
        (kinds.COSCHEDULING_POD_GROUPS, kinds.VOLCANO_POD_GROUPS)
        if settings.watch_pod_groups
        else ()
    )
    stores = reconciler.Stores(
        trainjobs=manager_.store(kinds.TRAINJOBS),
        training_runtimes=manager_.store(kinds.TRAINING_RUNTIMES),
        cluster_training_runtimes=manager_.store(kinds.CLUSTER_TRAINING_RUNTIMES),
        pods=manager_.store(kinds.PODS),
        services=manager_.store(kinds.SERVICES),
        configmaps=manager_.store(kinds.CONFIGMAPS),
        secrets=manager_.store(kinds.SECRETS),
        pod_groups={r.api_version: manager_.store(r) for r in pod_group_resources},
    )
    made = reconciler.TrainJobReconciler(
        manager_.client,
        stores,
        manager_.recorder(EVENT_COMPONENT),
        expectations.Expectations(ttl=settings.expectations_ttl),
        host_ports=settings.host_port_range if settings.force_host_network else None,
        book=hostports.book(manager_, kinds.SERVICES),  # the v1 controllers' too
    )
    stores.pods.subscribe(made.observe_pod)
    manager_.controller(
        CONTROLLER_NAME,
        made,
        for_=kinds.TRAINJOBS,
        owns=(kinds.PODS, kinds.SERVICES, kinds.CONFIGMAPS, kinds.SECRETS, *pod_group_resources),
        watches=(
            (kinds.TRAINING_RUNTIMES, made.jobs_using_runtime),
            (kinds.CLUSTER_TRAINING_RUNTIMES, made.jobs_using_runtime),
        ),
        workers=settings.workers,
    )
    return made
