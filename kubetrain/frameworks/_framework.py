"""The ``Framework`` record: everything the generic v1 reconciler needs to know about one kind.

A framework is data plus three small pure functions (who is master, what env a pod gets, what
else a pod gets). The v1 reconciler stays generic by reading these fields; if it ever needs an
``if kind == ...``, a field is missing here. This module also holds the operator settings that
shape pods and the one error the contracts raise.

It must not read the environment, files or the clock, log, or import anything beyond
``kubetrain.api`` and ``kubetrain.errors``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain import api
from kubetrain.errors import KubetrainError

# A Kubernetes EnvVar as a plain dict: {"name", "value"} or {"name", "valueFrom"}.
EnvVar = dict[str, Any]
# Env vars to append, per container name, in the order upstream appends them.
ContainerEnv = dict[str, tuple[EnvVar, ...]]

DEFAULT_INIT_CONTAINER_IMAGE = "alpine:3.10"
DEFAULT_INIT_CONTAINER_MAX_TRIES = 100
DEFAULT_KUBECTL_DELIVERY_IMAGE = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"


class ContractError(KubetrainError):
    """A job cannot be turned into pods: upstream stops reconciling it with an error too.

    The message reads ``<Kind> <ns>/<name>: <field.path>: <problem>; accepted: <values>``.
    """


# A pod of a job: (CamelCase replica type, index).
PodKey = tuple[str, int]


class HostPorts(Mapping[PodKey, int]):
    """Host ports by pod, read-only and hashable, so that :class:`Settings` stays a value."""

    __slots__ = ("_ports",)

    def __init__(self, ports: Mapping[PodKey, int] | Iterable[tuple[PodKey, int]] = ()) -> None:
        self._ports: dict[PodKey, int] = dict(ports)

    def __getitem__(self, key: PodKey) -> int:
        return self._ports[key]

    def __iter__(self) -> Iterator[PodKey]:
        return iter(self._ports)

    def __len__(self) -> int:
        return len(self._ports)

    def __hash__(self) -> int:
        return hash(frozenset(self._ports.items()))

    def __repr__(self) -> str:
        return f"HostPorts({self._ports!r})"


@dataclass(frozen=True)
class Settings:
    """Operator flags that change what pods look like (upstream command-line flags).

    ``cluster_domain`` is upstream's ``CUSTOM_CLUSTER_DOMAIN``: when set, TF endpoints end in
    ``.svc.<domain>``. The init-container and kubectl-delivery images are the
    ``--pytorch-init-container-*`` and ``--mpi-kubectl-delivery-image`` flags.

    ``host_ports``: the port each host-network pod was given, by (replica type, index). Pods
    sharing a host cannot all listen on their template's port, so such a pod listens on its own
    one, and every env contract that names a pod's port (its own or a peer's) names that one.
    Pods not listed listen on their template's named port.
    """

    cluster_domain: str = ""
    init_container_image: str = DEFAULT_INIT_CONTAINER_IMAGE
    init_container_max_tries: int = DEFAULT_INIT_CONTAINER_MAX_TRIES
    kubectl_delivery_image: str = DEFAULT_KUBECTL_DELIVERY_IMAGE
    host_ports: Mapping[PodKey, int] = field(default_factory=HostPorts)

    def __post_init__(self) -> None:
        if not isinstance(self.host_ports, HostPorts):
            object.__setattr__(self, "host_ports", HostPorts(self.host_ports))


@dataclass(frozen=True)
class PodExtras:
    """What a framework adds to a pod besides labels and env (init containers, MPI wiring).

    ``volume_mounts`` is keyed by container name. ``idle_command`` is (command, args) given to
    the first container when it has no command of its own; upstream then replaces its args too.
    ``service_account_name`` is used only when the template names none.
    """

    init_containers: tuple[dict[str, Any], ...] = ()
    volumes: tuple[dict[str, Any], ...] = ()
    volume_mounts: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    service_account_name: str | None = None
    idle_command: tuple[tuple[str, ...], tuple[str, ...]] | None = None


@dataclass(frozen=True)
class Messages:
    """Condition messages, word for word from upstream's ``UpdateJobStatus``.

    Placeholders: ``{name}``, ``{namespace}``, ``{failed}`` (a count) and ``{rtype}`` (the
    CamelCase replica type). ``*_leader`` messages are used when a leader type decides, the
    others when the fallback type (Worker) does; upstream words them differently.
    """

    running_leader: str
    succeeded_leader: str
    running: str
    succeeded: str
    restarting: str
    failed: str

    @staticmethod
    def standard(kind: str, lower_kind: str | None = None) -> Messages:
        """The wording PyTorch, Paddle, JAX, XGBoost, MPI and MXNet share.

        ``lower_kind`` is for MXNet, whose restart and failure messages say ``mxjob``.
        """
        prefix = lower_kind or kind
        because = "because {failed} {rtype} replica(s) failed."
        return Messages(
            running_leader=f"{kind} {{name}} is running.",
            succeeded_leader=f"{kind} {{name}} is successfully completed.",
            running=f"{kind} {{namespace}}/{{name}} is running.",
            succeeded=f"{kind} {{namespace}}/{{name}} successfully completed.",
            restarting=f"{prefix} {{name}} is restarting {because}",
            failed=f"{prefix} {{name}} is failed {because}",
        )


@dataclass(frozen=True)
class StatusRules:
    """How one framework turns replica counts into job conditions (reference 3.3), as data.

    For each replica type, in ``order``: a *leader* type (Chief/Master, Launcher, Scheduler)
    sets Running while it has active pods and Succeeded when all its replicas succeeded. Without
    any leader present, the ``fallback`` type (Worker) decides: Succeeded when all succeeded
    (or worker-0 / elastic shortcuts), else Running while any is active. Then failures: a type
    with failed pods makes the job Restarting when its restartPolicy is in
    ``restart_policies``, else Failed.
    """

    order: tuple[str, ...]
    leaders: tuple[str, ...] = ()
    fallback: str | None = None
    # MXNet: a job of exactly one Worker (no Scheduler, no Server) is led by every type.
    single_worker_leads: bool = False
    # A leader's success ends the evaluation, so later failures are not looked at.
    leader_success_stops: bool = True
    # XGBoost sets Running before Succeeded and before judging a failure.
    running_before_outcome: bool = False
    # Failures count only while replicas > succeeded + active (a replacement is not up yet).
    failure_needs_shortfall: bool = False
    restart_policies: frozenset[str] = frozenset()
    # TF: a Restarting condition already on the job is re-set instead of failing it.
    keeps_restarting: bool = False
    # TF: with spec.enableDynamicWorker, Worker failures are ignored.
    dynamic_workers_ignore_failures: bool = False
    # TF: worker-0 exiting 0 ends the job unless spec.successPolicy is AllWorkers.
    worker0_success: bool = False
    # PyTorch: with spec.elasticPolicy, one succeeded Worker ends the job.
    elastic_success: bool = False
    messages: Messages | None = None


# (replica types present in the job, this pod's replica type, its index) -> master role?
MasterRule = Callable[[Collection[str], str, int], bool]
EnvRule = Callable[[api.JobKind, str, int, Settings], ContainerEnv]
ExtrasRule = Callable[[api.JobKind, str, int, Settings], PodExtras]


@dataclass(frozen=True)
class Framework:
    """One ``kubeflow.org/v1`` framework: its job class, names, and per-pod rules."""

    job_class: type[api.JobKind]
    name: str  # the ``framework`` label of the training_operator_jobs_* metrics
    controller: str  # the training.kubeflow.org/operator-name label and event source
    is_master: MasterRule
    env: EnvRule
    status: StatusRules
    extras: ExtrasRule | None = None
    creates_services: bool = True
    # Replica types with one pod named ``<job>-<rtype>`` and no replica-index label (MPI).
    unindexed: frozenset[str] = frozenset()
    # Whether a failed pod is deleted and recreated by the generic pod loop (MPI: no).
    restarts_failed_pods: bool = True
    # Whether status.replicaStatuses[rt].selector is written (PyTorch, Paddle, JAX).
    reports_selector: bool = False

    @property
    def kind(self) -> str:
        return self.job_class.KIND
