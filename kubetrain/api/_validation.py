"""Validation of the ``kubeflow.org/v1`` kinds: upstream's webhook rules and messages.

Upstream validates TF, PyTorch, XGBoost, Paddle and JAX jobs in admission webhooks, and MPI
(v1) and MXJob (v1.8) inside the controller with one-line errors. kubetrain checks every kind
at admission with field-path errors, and fixes upstream's known gaps:

- managedBy is immutable for every kind (upstream's PyTorchJob update check compares the new
  object with itself, and JAXJob skips runPolicy validation entirely);
- replica types outside the framework's set are rejected for TFJob and MXJob as well, since
  their controllers would silently never look at them;
- an empty replica-spec map is rejected like a missing one.

Validation runs on the object as the user wrote it (replica keys CamelCased first), before
defaulting, as upstream's webhooks do: so ``Master`` without ``replicas`` is rejected.
"""

from __future__ import annotations

import re

from kubetrain.api import _fielderrors as fe
from kubetrain.api import _podtemplate
from kubetrain.api._fielderrors import FieldError, Path
from kubetrain.api._v1 import (
    MANAGED_BY_VALUES,
    JobKind,
    MPIJob,
    MXJob,
    PyTorchJob,
    ReplicaSpec,
    RunPolicy,
    TFJob,
    XGBoostJob,
)

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1035_MESSAGE = (
    "a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character "
    "(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MAX = 63


def dns1035_problems(name: str) -> list[str]:
    """Kubernetes' ``IsDNS1035Label``: every reason ``name`` is not a valid label."""
    problems = []
    if len(name) > DNS1035_MAX:
        problems.append(f"must be no more than {DNS1035_MAX} characters")
    if not _DNS1035.match(name):
        problems.append(DNS1035_MESSAGE)
    return problems


def validate_name(meta_name: str | None, generate_name: str | None) -> list[FieldError]:
    if not meta_name:
        if generate_name:
            return []  # the server picks the name; it is checked then
        return [fe.required("metadata.name", "name or generateName is required")]
    problems = dns1035_problems(meta_name)
    if problems:
        return [fe.invalid("metadata.name", meta_name, "should match: " + ",".join(problems))]
    return []


def validate_run_policy(new: RunPolicy | None, old: RunPolicy | None) -> list[FieldError]:
    errors: list[FieldError] = []
    managed_by = new.managed_by if new else None
    if managed_by is not None and managed_by not in MANAGED_BY_VALUES:
        errors.append(fe.not_supported("spec.runPolicy.managedBy", managed_by, MANAGED_BY_VALUES))
    if old is not None:
        errors += _immutable_run_policy(new or RunPolicy(), old)
    return errors


def _immutable_run_policy(new: RunPolicy, old: RunPolicy) -> list[FieldError]:
    """managedBy may never change; queue may be set once (the CRD's ``self == oldSelf``)."""
    errors = []
    if new.managed_by != old.managed_by:
        errors.append(fe.immutable("spec.runPolicy.managedBy", new.managed_by))
    old_queue = old.scheduling_policy.queue if old.scheduling_policy else None
    new_queue = new.scheduling_policy.queue if new.scheduling_policy else None
    if old_queue is not None and new_queue is not None and old_queue != new_queue:
        errors.append(
            fe.invalid(
                "spec.runPolicy.schedulingPolicy.queue",
                new_queue,
                "spec.runPolicy.schedulingPolicy.queue is immutable",
            )
        )
    return errors


def validate(job: JobKind, old: JobKind | None = None) -> list[FieldError]:
    """Every problem with ``job`` (and with the change from ``old``, on update)."""
    errors = validate_name(job.metadata.name, job.metadata.generate_name)
    old_policy = (old.spec.run_policy or RunPolicy()) if old is not None else None
    errors += validate_run_policy(job.spec.run_policy, old_policy)
    errors += _validate_replica_specs(job)
    if isinstance(job, PyTorchJob):
        errors += _validate_pytorch(job)
    return errors


def _validate_replica_specs(job: JobKind) -> list[FieldError]:
    root = Path("spec").child(job.REPLICA_FIELD)
    specs = job.replica_specs()
    if not specs:
        return [fe.required(str(root), "must be required")]
    errors: list[FieldError] = []
    lower_seen: dict[str, str] = {}
    for rtype, spec in specs.items():
        role = root.key(rtype)
        if rtype.lower() in lower_seen:
            errors.append(fe.duplicate(str(role), rtype))
        elif rtype not in job.REPLICA_TYPES:
            errors.append(fe.not_supported(str(role), rtype, job.REPLICA_TYPES))
        lower_seen[rtype.lower()] = rtype
        errors += _validate_replica(job, rtype, spec, role)
    errors += _validate_roles(job, specs, root)
    return errors


def _validate_replica(
    job: JobKind, rtype: str, spec: ReplicaSpec | None, role: Path
) -> list[FieldError]:
    containers_path = role.child("template", "spec", "containers")
    template = spec.template if spec else None
    errors = _podtemplate.check_template(template, role.child("template"))
    containers = _podtemplate.containers(template)
    if not containers:
        errors.append(fe.required(str(containers_path), "must be specified"))
    for i, container in enumerate(containers):
        if not container.get("image"):
            errors.append(
                fe.required(str(containers_path.index(i).child("image")), "must be required")
            )
    if spec is not None and spec.replicas is not None and spec.replicas < 0:
        errors.append(
            fe.invalid(
                str(role.child("replicas")), spec.replicas, "must be greater than or equal to 0"
            )
        )
    if isinstance(job, MPIJob):
        return errors  # MPI runs in container 0 (or mainContainer): no required name
    if not any(c.get("name") == job.DEFAULT_CONTAINER for c in containers):
        name = f'"{job.DEFAULT_CONTAINER}"' if job.KIND == "PaddleJob" else job.DEFAULT_CONTAINER
        errors.append(
            fe.required(str(containers_path), f"must have at least one container with name {name}")
        )
    return errors


def _replicas(spec: ReplicaSpec | None) -> int | None:
    return spec.replicas if spec else None


def _validate_roles(
    job: JobKind, specs: dict[str, ReplicaSpec | None], root: Path
) -> list[FieldError]:
    """The per-framework rules about which roles exist and how many replicas they have."""
    errors: list[FieldError] = []
    if isinstance(job, TFJob):
        chiefs = sum(1 for t in specs if t in ("Chief", "Master"))
        if chiefs > 1:
            errors.append(fe.forbidden(str(root), "must not have more than 1 Chief or Master role"))
    elif isinstance(job, PyTorchJob):
        for rtype, spec in specs.items():
            path = str(root.key(rtype).child("replicas"))
            if rtype == "Master":
                if _replicas(spec) != 1:
                    errors.append(fe.forbidden(path, "must be 1"))
            elif _replicas(spec) is not None and _replicas(spec) < 1:  # type: ignore[operator]
                errors.append(fe.forbidden(path, "must be at least 1"))
    elif isinstance(job, XGBoostJob):
        if "Master" not in specs:
            errors.append(fe.required(str(root.key("Master")), "must be present"))
        elif _replicas(specs["Master"]) != 1:
            errors.append(fe.forbidden(str(root.key("Master").child("replicas")), "must be 1"))
    elif isinstance(job, MPIJob):
        if "Launcher" not in specs:
            errors.append(fe.required(str(root.key("Launcher")), "must be present"))
        elif _replicas(specs["Launcher"]) not in (None, 1):
            errors.append(
                fe.forbidden(
                    str(root.key("Launcher").child("replicas")),
                    "there must be only 1 launcher replica",
                )
            )
    elif isinstance(job, MXJob):
        scheduler = specs.get("Scheduler")
        if scheduler is not None and _replicas(scheduler) not in (None, 1):
            errors.append(fe.forbidden(str(root.key("Scheduler").child("replicas")), "must be 1"))
    return errors


def _validate_pytorch(job: PyTorchJob) -> list[FieldError]:
    errors: list[FieldError] = []
    elastic = job.spec.elastic_policy
    if elastic is None:
        return errors
    specs = job.replica_specs() or {}
    if "Worker" not in specs:
        errors.append(
            fe.required(
                "spec.pytorchReplicaSpecs[Worker]", "must be configured if elastic policy is used"
            )
        )
    if elastic.n_proc_per_node is not None and job.spec.nproc_per_node is not None:
        errors.append(
            fe.forbidden(
                "spec.elasticPolicy.nProcPerNode", "must not be used with spec.nprocPerNode"
            )
        )
    low, high = elastic.min_replicas, elastic.max_replicas
    if low is not None and high is not None and low > high:
        errors.append(
            fe.invalid(
                "spec.elasticPolicy.minReplicas",
                low,
                f"must be less than or equal to spec.elasticPolicy.maxReplicas ({high})",
            )
        )
    return errors


def warnings(job: JobKind) -> list[str]:
    """Admission warnings: accepted, but the user should change something."""
    found = []
    if job.DEPRECATION:
        found.append(job.DEPRECATION)
    elastic = job.spec.elastic_policy if isinstance(job, PyTorchJob) else None
    if elastic is not None and elastic.n_proc_per_node is not None:
        found.append("spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead")
    return found
