"""The job kinds the command line manages, and how users name them and their jobs.

Jobs are the seven ``kubeflow.org/v1`` kinds and ``trainer.kubeflow.org`` TrainJob. A user
names a kind as kubectl accepts it (``pytorchjob``, ``pytorchjobs``, ``PyTorchJob``,
``pytorchjobs.kubeflow.org``) or by its framework (``pytorch``, ``tf``), and a job as
``NAME`` or ``KIND/NAME``.

Owns: the table of kinds (resource, replica field, replica types, default container, the
labels that find a job's pods) and parsing of kind and job references. Pure: no I/O.

The table is written out here rather than read off ``kubetrain.api``'s models and
``kubetrain.frameworks``: importing those builds every job model with pydantic, about a
sixth of what ``kubetrain list`` and ``get`` cost, for a handful of names. The models stay
the authority: ``tests/unit/cli/test_jobkinds.py`` checks every entry against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.cli.errors import UserError
from kubetrain.kube.resource import Resource

V1_GROUP, V1_VERSION = "kubeflow.org", "v1"
TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"  # the served storage version of TrainJob
# What JobSet puts on the pods of a TrainJob (the TrainJob controller names the JobSet after it).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
# What the v1 controllers put on their pods (kubetrain.api's labels).
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
NODE = "node"  # a TrainJob's trainer: its replicated job and container (kubetrain.api.NODE)

FRAMEWORK_NAMES: Mapping[str, tuple[str, ...]] = {
    "TFJob": ("tf", "tensorflow"),
    "PyTorchJob": ("pytorch", "torch"),
    "XGBoostJob": ("xgboost", "xgb"),
    "PaddleJob": ("paddle",),
    "JAXJob": ("jax",),
    "MPIJob": ("mpi",),
    "MXJob": ("mxnet", "mx"),
    "TrainJob": ("trainjob", "trainer"),
}


@dataclass(frozen=True)
class JobKind:
    """One job kind: where its objects live and what the command line needs to know of it."""

    kind: str
    resource: Resource
    replica_field: str | None  # v1: the replica-spec map; None for TrainJob
    replica_types: tuple[str, ...]  # CamelCase, in the framework's order
    default_container: str
    controller: str | None  # v1: the operator-name label value of its pods
    unindexed: frozenset[str] = frozenset()  # replica types whose one pod has no index

    @property
    def v1(self) -> bool:
        return self.replica_field is not None

    @property
    def lower(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """``pytorchjob.kubeflow.org``, as ``kubectl ... -o name`` prints the kind."""
        return f"{self.lower}.{self.resource.group}"

    def ref(self, name: str) -> str:
        """``pytorchjob/NAME``: how messages name a job, and what the commands accept back."""
        return f"{self.lower}/{name}"

    def pod_selector(self, name: str) -> str:
        """The label selector of a job's pods."""
        if self.controller is None:
            return f"{JOBSET_NAME_LABEL}={name}"
        return f"{JOB_NAME_LABEL}={name},{OPERATOR_NAME_LABEL}={self.controller}"

    def aliases(self) -> tuple[str, ...]:
        plural, group = self.resource.plural, self.resource.group
        return (
            self.lower,
            plural,
            f"{self.lower}.{group}",
            f"{plural}.{group}",
            *FRAMEWORK_NAMES.get(self.kind, ()),
        )


def _v1(
    kind: str,
    replica_field: str,
    replica_types: tuple[str, ...],
    default_container: str,
    unindexed: frozenset[str] = frozenset(),
) -> JobKind:
    return JobKind(
        kind=kind,
        resource=Resource(V1_GROUP, V1_VERSION, f"{kind.lower()}s", kind=kind),
        replica_field=replica_field,
        replica_types=replica_types,
        default_container=default_container,
        controller=f"{kind.lower()}-controller",
        unindexed=unindexed,
    )


TRAINJOB = JobKind(
    kind="TrainJob",
    resource=Resource(TRAINER_GROUP, TRAINER_VERSION, "trainjobs", kind="TrainJob"),
    replica_field=None,
    replica_types=(NODE,),
    default_container=NODE,
    controller=None,
)
# In the order of kubetrain.frameworks.FRAMEWORKS, then TrainJob.
KINDS: tuple[JobKind, ...] = (
    _v1("TFJob", "tfReplicaSpecs", ("Chief", "Evaluator", "Master", "PS", "Worker"), "tensorflow"),
    _v1("PyTorchJob", "pytorchReplicaSpecs", ("Master", "Worker"), "pytorch"),
    _v1("XGBoostJob", "xgbReplicaSpecs", ("Master", "Worker"), "xgboost"),
    _v1("PaddleJob", "paddleReplicaSpecs", ("Master", "Worker"), "paddle"),
    _v1("JAXJob", "jaxReplicaSpecs", ("Worker",), "jax"),
    _v1("MPIJob", "mpiReplicaSpecs", ("Launcher", "Worker"), "mpi", frozenset({"Launcher"})),
    _v1(
        "MXJob",
        "mxReplicaSpecs",
        ("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"),
        "mxnet",
    ),
    TRAINJOB,
)

_BY_ALIAS: dict[str, JobKind] = {alias: k for k in KINDS for alias in k.aliases()}
_BY_KIND: dict[str, JobKind] = {k.kind: k for k in KINDS}


def accepted() -> str:
    """The kinds as a user may name them, for messages."""
    return ", ".join(k.lower for k in KINDS)


def find(token: str) -> JobKind:
    """The kind ``token`` names (any alias, any case), or a :class:`UserError` saying which
    names are accepted."""
    found = _BY_ALIAS.get(token.strip().lower())
    if found is None:
        raise UserError(f"no job kind {token!r}; accepted: {accepted()}")
    return found


def of(obj: Mapping[str, Any]) -> JobKind:
    """The kind of a job object as the server returns it."""
    return _BY_KIND[str(obj.get("kind"))]


def is_job(obj: Mapping[str, Any]) -> bool:
    kind = _BY_KIND.get(str(obj.get("kind")))
    return kind is not None and str(obj.get("apiVersion", "")).startswith(kind.resource.group)


@dataclass(frozen=True)
class JobRef:
    """What a user typed to name a job: a name, and the kind when they gave one."""

    name: str
    kind: JobKind | None = None

    def __str__(self) -> str:
        return self.kind.ref(self.name) if self.kind else self.name


def parse_ref(text: str) -> JobRef:
    """``NAME``, ``KIND/NAME`` (``pytorchjob/foo``, ``pytorchjobs/foo``, ``trainjob/foo``,
    ``pytorchjob.kubeflow.org/foo``)."""
    kind_text, slash, name = text.strip().rpartition("/")
    if not slash:
        kind_text, name = "", text.strip()
    if not name:
        raise UserError(f"{text!r} names no job; write NAME or KIND/NAME (e.g. pytorchjob/train)")
    if slash and not kind_text:
        raise UserError(f"{text!r} names no kind; write NAME or KIND/NAME (e.g. pytorchjob/train)")
    return JobRef(name, find(kind_text) if kind_text else None)
