"""The MPI env contract (OpenMPI): hostfile, slots, SSH keys and the launcher's OMPI env.

An MPI runtime has a ``launcher`` replicated job that runs ``mpirun`` and a ``node`` job whose
pods run sshd; with ``runLauncherAsNode`` the launcher is also one of the hosts. As upstream:

- the ``node`` job runs ``trainer.numNodes`` pods, or one fewer (at least 1) when the launcher
  counts as a node; without ``trainer.numNodes``, what the runtime sets;
- slots per host: the TrainJob's ``numProcPerNode``, else the runtime's (default 1); a runtime
  value of 1 becomes the node's GPU count when that is more than 1;
- the hostfile has one line ``<pod DNS name> slots=<n>`` per host, launcher pods first when
  they count as nodes, then node pods, in replicated-job order;
- both jobs mount the SSH-auth Secret ``<job>-mpi-ssh-auth`` at ``sshAuthMountPath`` in their
  ``node`` container; the launcher also mounts ConfigMap ``<job>-mpi-hostfile`` at ``/etc/mpi``
  and gets four reserved ``OMPI_MCA_*`` variables. There is no ``K_MPI_JOB_ROLE`` in v2.

Only OpenMPI is supported; asking for another implementation raises
:class:`UnsupportedImplementation` with upstream's words. Generating the SSH key pair is the
controller's job (it needs randomness); this module only names the Secret and its keys.

Admission (:func:`validate`, upstream's MPI ``Validate``): ``numProcPerNode`` must be a number;
``runLauncherAsNode`` with two or more nodes needs both the ``launcher`` and ``node`` jobs;
and the TrainJob may not set the four ``OMPI_MCA_*`` variables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubetrain import api
from kubetrain.errors import KubetrainError
from kubetrain.frameworks.trainjob import node, reserved

HOSTFILE_ENV = "OMPI_MCA_orte_default_hostfile"
KEEP_FQDN_ENV = "OMPI_MCA_orte_keep_fqdn_hostnames"
DEFAULT_SLOTS_ENV = "OMPI_MCA_orte_set_default_slots"
RSH_ARGS_ENV = "OMPI_MCA_plm_rsh_args"
RSH_ARGS = "-o ConnectionAttempts=10"
RESERVED_ENV: tuple[str, ...] = (HOSTFILE_ENV, RSH_ARGS_ENV, KEEP_FQDN_ENV, DEFAULT_SLOTS_ENV)

OPEN_MPI = "OpenMPI"
DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
SSH_AUTH_VOLUME = "mpi-ssh-auth"
SSH_AUTH_SECRET_SUFFIX = "-mpi-ssh-auth"
SSH_PRIVATE_KEY = "ssh-privatekey"
SSH_PUBLIC_KEY = "ssh-publickey"
SSH_AUTH_DEFAULT_MODE = 0o400
SSH_PRIVATE_KEY_MODE = 0o640
SSH_PUBLIC_KEY_MODE = 0o644
HOSTFILE_VOLUME = "mpi-hostfile"
HOSTFILE_CONFIG_MAP_SUFFIX = "-mpi-hostfile"
HOSTFILE_DIR = "/etc/mpi"
HOSTFILE_NAME = "hostfile"
HOSTFILE_MODE = 0o444
NUM_PROC_MESSAGE = "must have an int value for MPI TrainJob"


class UnsupportedImplementation(KubetrainError):
    """The runtime asks for an MPI implementation other than OpenMPI."""


def _policy(runtime: api.Runtime) -> Any:
    policy = node.ml_policy(runtime)
    return policy.mpi if policy is not None else None


def run_launcher_as_node(runtime: api.Runtime) -> bool:
    mpi = _policy(runtime)
    return bool(mpi is not None and mpi.run_launcher_as_node)


def _has_job(runtime: api.Runtime, name: str) -> bool:
    return any(rjob["name"] == name for rjob in node.replicated_jobs(runtime))


def node_count(job: api.TrainJob, runtime: api.Runtime) -> int:
    """Pods in the ``node`` job."""
    trainer = job.spec.trainer if job.spec else None
    if trainer is None or trainer.num_nodes is None:
        return node.runtime_pod_counts(runtime).get(api.NODE, 1)
    if run_launcher_as_node(runtime):
        return max(trainer.num_nodes - 1, 1)
    return trainer.num_nodes


def pod_counts(job: api.TrainJob, runtime: api.Runtime) -> dict[str, int]:
    """Pods per Job of each replicated job; the TrainJob's node count applies to ``node`` only."""
    counts = node.runtime_pod_counts(runtime)
    if _has_job(runtime, api.NODE):
        counts[api.NODE] = node_count(job, runtime)
    return counts


def endpoints(job: api.TrainJob, runtime: api.Runtime) -> dict[str, list[str]]:
    return node.endpoints(job, runtime, pod_counts(job, runtime))


def slots(job: api.TrainJob, runtime: api.Runtime) -> int:
    """Processes per host: the hostfile's ``slots`` and ``OMPI_MCA_orte_set_default_slots``."""
    trainer = job.spec.trainer if job.spec else None
    if trainer is not None and isinstance(trainer.num_proc_per_node, int):
        return trainer.num_proc_per_node
    mpi = _policy(runtime)
    value = mpi.num_proc_per_node if mpi is not None and mpi.num_proc_per_node else 1
    gpus = node.gpus_per_node(job, runtime)
    return gpus if value == 1 and gpus > 1 else value


def hostfile(
    job: api.TrainJob,
    runtime: api.Runtime,
    hosts: Mapping[str, Iterable[str]] | None = None,
) -> str:
    """The hostfile text; ``hosts`` maps replicated job to pod names (computed if omitted)."""
    hosts = endpoints(job, runtime) if hosts is None else hosts
    launcher_is_host = run_launcher_as_node(runtime)
    per_host = slots(job, runtime)
    lines = []
    for name in (rjob["name"] for rjob in node.replicated_jobs(runtime)):
        if name == api.NODE or (launcher_is_host and name == api.LAUNCHER):
            lines += [f"{host} slots={per_host}\n" for host in hosts.get(name, ())]
    return "".join(lines)


def _implementation(runtime: api.Runtime) -> str:
    mpi = _policy(runtime)
    impl = mpi.mpi_implementation if mpi is not None else None
    return OPEN_MPI if impl is None else impl


def launcher_env(job: api.TrainJob, runtime: api.Runtime) -> list[dict[str, Any]]:
    """The env for container ``node`` of the ``launcher`` job."""
    impl = _implementation(runtime)
    if impl != OPEN_MPI:
        raise UnsupportedImplementation(f"MPI implementation for {impl} doesn't supported")
    return [
        node.value_env(HOSTFILE_ENV, f"{HOSTFILE_DIR}/{HOSTFILE_NAME}"),
        node.value_env(KEEP_FQDN_ENV, "true"),
        node.value_env(DEFAULT_SLOTS_ENV, str(slots(job, runtime))),
        node.value_env(RSH_ARGS_ENV, RSH_ARGS),
    ]


def ssh_auth_secret_name(job: api.TrainJob) -> str:
    return node.job_name(job) + SSH_AUTH_SECRET_SUFFIX


def hostfile_config_map_name(job: api.TrainJob) -> str:
    return node.job_name(job) + HOSTFILE_CONFIG_MAP_SUFFIX


def ssh_auth_volume(job: api.TrainJob) -> dict[str, Any]:
    """The SSH-auth Secret as ``id_rsa``, ``id_rsa.pub`` and ``authorized_keys``."""
    return {
        "name": SSH_AUTH_VOLUME,
        "secret": {
            "secretName": ssh_auth_secret_name(job),
            "defaultMode": SSH_AUTH_DEFAULT_MODE,
            "items": [
                {"key": SSH_PRIVATE_KEY, "path": "id_rsa", "mode": SSH_PRIVATE_KEY_MODE},
                {"key": SSH_PUBLIC_KEY, "path": "id_rsa.pub", "mode": SSH_PUBLIC_KEY_MODE},
                {"key": SSH_PUBLIC_KEY, "path": "authorized_keys", "mode": SSH_PUBLIC_KEY_MODE},
            ],
        },
    }


def hostfile_volume(job: api.TrainJob) -> dict[str, Any]:
    return {
        "name": HOSTFILE_VOLUME,
        "configMap": {
            "name": hostfile_config_map_name(job),
            "items": [{"key": HOSTFILE_NAME, "path": HOSTFILE_NAME, "mode": HOSTFILE_MODE}],
        },
    }


def ssh_auth_mount(runtime: api.Runtime) -> dict[str, Any]:
    mpi = _policy(runtime)
    path = mpi.ssh_auth_mount_path if mpi is not None and mpi.ssh_auth_mount_path else None
    return {"name": SSH_AUTH_VOLUME, "mountPath": path or DEFAULT_SSH_AUTH_MOUNT_PATH}


def hostfile_mount() -> dict[str, Any]:
    return {"name": HOSTFILE_VOLUME, "mountPath": HOSTFILE_DIR}


def volumes(job: api.TrainJob, replicated_job: str) -> list[dict[str, Any]]:
    """Pod volumes for one replicated job: SSH keys on ``node`` and ``launcher``, plus the
    hostfile on ``launcher``; nothing on other jobs."""
    if replicated_job == api.LAUNCHER:
        return [ssh_auth_volume(job), hostfile_volume(job)]
    if replicated_job == api.NODE:
        return [ssh_auth_volume(job)]
    return []


def volume_mounts(runtime: api.Runtime, replicated_job: str) -> list[dict[str, Any]]:
    """Mounts for the ``node`` container of ``replicated_job``."""
    if replicated_job == api.LAUNCHER:
        return [ssh_auth_mount(runtime), hostfile_mount()]
    if replicated_job == api.NODE:
        return [ssh_auth_mount(runtime)]
    return []


def lacks_launcher_or_node(runtime: api.Runtime) -> bool:
    """What ``runLauncherAsNode`` needs for two or more nodes: both named jobs."""
    return not (_has_job(runtime, api.LAUNCHER) and _has_job(runtime, api.NODE))


def validate(
    job: api.TrainJob, runtime: api.Runtime, _: api.PriorityClassLookup | None = None
) -> list[api.FieldError]:
    """The MPI plugin's admission checks; none without an MPI policy or a trainer."""
    mpi = _policy(runtime)
    trainer = job.spec.trainer if job.spec else None
    if mpi is None or trainer is None:
        return []
    errors: list[api.FieldError] = []
    nproc = trainer.num_proc_per_node
    if isinstance(nproc, str):
        errors.append(
            api.FieldError(
                api.ErrorType.INVALID, "spec.trainer.numProcPerNode", NUM_PROC_MESSAGE, nproc
            )
        )
    nodes = trainer.num_nodes if trainer.num_nodes is not None else 1
    if nodes >= 2 and mpi.run_launcher_as_node and lacks_launcher_or_node(runtime):
        errors.append(
            api.FieldError(
                api.ErrorType.INVALID,
                "spec.trainer.numNodes",
                api.MPI_LAUNCHER_AS_NODE_MESSAGE,
                trainer.num_nodes,
            )
        )
    return errors + reserved.env_errors(job, RESERVED_ENV)
