"""MPIJob v1: a launcher that reaches idle workers through ``kubectl exec``; no services.

Upstream: ``pkg/controller.v1/mpi/{mpijob,mpijob_controller}.go`` (v1.9.4). This module says
what goes into the ``<job>-config`` ConfigMap (hostfile, kubexec.sh, discover_hosts.sh) and
what the launcher and worker pods get (env, mounts, the kubectl-delivery init container, the
``sleep 365d`` default command). It builds text and plain dicts only; the reconciler creates
the objects. A failed MPIJob's reason is ``MPIJobFailed``, like every other kind (upstream
prefixes the kind twice: ``MPIJobMPIJobFailed``). Pure: no I/O, no logging.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Iterable
from typing import Any

from kubetrain import api
from kubetrain.frameworks import _replicas
from kubetrain.frameworks._framework import (
    ContainerEnv,
    EnvVar,
    Framework,
    Messages,
    PodExtras,
    Settings,
    StatusRules,
)

CONFIG_VOLUME = "mpi-job-config"
CONFIG_MOUNT_PATH = "/etc/mpi"
KUBECTL_VOLUME = "mpi-job-kubectl"
KUBECTL_MOUNT_PATH = "/opt/kube"
KUBEXEC = "kubexec.sh"
HOSTFILE = "hostfile"
DISCOVER_HOSTS = "discover_hosts.sh"
KUBECTL_DELIVERY = "kubectl-delivery"
SCRIPT_MODE = 0o555
HOSTFILE_MODE = 0o444


def is_master(present: Collection[str], rtype: str, index: int) -> bool:
    return rtype == "Launcher"


def launcher_name(job: api.JobKind) -> str:
    return f"{job.name}-launcher"


def config_map_name(job: api.JobKind) -> str:
    return f"{job.name}-config"


def worker_name(job: api.JobKind, index: int) -> str:
    return f"{job.name}-worker-{index}"


def slots(job: api.JobKind) -> int:
    """``spec.slotsPerWorker``, 1 when unset."""
    given = job.spec.slots_per_worker
    return 1 if given is None else given


def is_gpu_launcher(job: api.JobKind) -> bool:
    """A launcher container limits a resource named ``*.com/gpu`` or containing ``gpu``."""
    for container in _replicas.containers(_replicas.specs(job).get("Launcher")):
        resources = container.get("resources") or {}
        for key in resources.get("limits") or {}:
            if str(key).endswith(".com/gpu") or "gpu" in str(key):
                return True
    return False


def hostfile(job: api.JobKind) -> str:
    """One ``<worker> slots=<n>`` line per worker, the launcher first when it has a GPU."""
    n = slots(job)
    lines = [f"{launcher_name(job)} slots={n}\n"] if is_gpu_launcher(job) else []
    lines += [
        f"{worker_name(job, i)} slots={n}\n" for i in range(_replicas.replicas(job, "Worker"))
    ]
    return "".join(lines)


def kubexec_script(job: api.JobKind) -> str:
    """The rsh agent Open MPI and Intel MPI call to start a rank: ``kubectl exec`` into a pod."""
    command = f"{KUBECTL_MOUNT_PATH}/kubectl exec ${{POD_NAME}}"
    if job.spec.main_container:
        # quoted: admission takes any string here, and this is a shell script (a container
        # name, all a valid one can be, comes out as upstream writes it)
        command += f" --container {shlex.quote(job.spec.main_container)}"
    return f'#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n{command} -- /bin/sh -c "$*"'


def discover_hosts_script(job: api.JobKind, running_workers: Iterable[str]) -> str:
    """``echo <pod>:<slots>`` for each Running worker pod name, sorted, for Horovod elastic.

    Upstream's text has a blank line after the launcher's entry; it is kept.
    """
    n = slots(job)
    text = "#!/bin/sh"
    if is_gpu_launcher(job):
        text += f"\necho {launcher_name(job)}:{n}\n"
    for name in sorted(running_workers):
        text += f"\necho {name}:{n}"
    return text


def config_map_data(job: api.JobKind) -> dict[str, str]:
    """The ConfigMap's data when it is first created; discover_hosts.sh is added later."""
    return {HOSTFILE: hostfile(job), KUBEXEC: kubexec_script(job)}


def env(job: api.JobKind, rtype: str, index: int, settings: Settings) -> ContainerEnv:
    """Launcher only, first container only; the user's I_MPI_HYDRA_* values are respected."""
    if rtype != "Launcher":
        return {}
    found = _replicas.containers(_replicas.specs(job).get(rtype))
    if not found:
        return {}
    kubexec = f"{CONFIG_MOUNT_PATH}/{KUBEXEC}"
    vars_: list[EnvVar] = [
        _replicas.value("OMPI_MCA_plm_rsh_agent", kubexec),
        _replicas.value("OMPI_MCA_orte_default_hostfile", f"{CONFIG_MOUNT_PATH}/{HOSTFILE}"),
    ]
    if not is_gpu_launcher(job):
        # Keep a CPU launcher off the node's GPUs whatever the runtime would expose.
        vars_ += [
            _replicas.value("NVIDIA_VISIBLE_DEVICES", ""),
            _replicas.value("NVIDIA_DRIVER_CAPABILITIES", ""),
        ]
    user = {var.get("name") for var in found[0].get("env") or [] if isinstance(var, dict)}
    if "I_MPI_HYDRA_BOOTSTRAP" not in user:
        vars_.append(_replicas.value("I_MPI_HYDRA_BOOTSTRAP", "rsh"))
    if "I_MPI_HYDRA_BOOTSTRAP_EXEC" not in user:
        vars_.append(_replicas.value("I_MPI_HYDRA_BOOTSTRAP_EXEC", kubexec))
    return {str(found[0].get("name", "")): tuple(vars_)}


def _config_volume(job: api.JobKind, keys: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    items = [{"key": key, "path": key, "mode": mode} for key, mode in keys]
    return {"name": CONFIG_VOLUME, "configMap": {"name": config_map_name(job), "items": items}}


def _kubectl_delivery(job: api.JobKind, image: str) -> dict[str, Any]:
    amounts = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
    return {
        "name": KUBECTL_DELIVERY,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            _replicas.value("TARGET_DIR", KUBECTL_MOUNT_PATH),
            _replicas.value("NAMESPACE", _replicas.namespace(job)),
        ],
        "volumeMounts": [
            {"name": KUBECTL_VOLUME, "mountPath": KUBECTL_MOUNT_PATH},
            {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH},
        ],
        "resources": {"limits": dict(amounts), "requests": dict(amounts)},
    }


def extras(job: api.JobKind, rtype: str, index: int, settings: Settings) -> PodExtras:
    found = _replicas.containers(_replicas.specs(job).get(rtype))
    first = str(found[0].get("name", "")) if found else ""
    config_mount = {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH}
    if rtype == "Worker":
        return PodExtras(
            volumes=(_config_volume(job, ((KUBEXEC, SCRIPT_MODE),)),),
            volume_mounts={first: (config_mount,)} if found else {},
            idle_command=(("sleep",), ("365d",)),
        )
    if rtype != "Launcher":
        return PodExtras()
    kubectl_mount = {"name": KUBECTL_VOLUME, "mountPath": KUBECTL_MOUNT_PATH}
    keys = ((KUBEXEC, SCRIPT_MODE), (HOSTFILE, HOSTFILE_MODE), (DISCOVER_HOSTS, SCRIPT_MODE))
    return PodExtras(
        init_containers=(_kubectl_delivery(job, settings.kubectl_delivery_image),),
        volumes=({"name": KUBECTL_VOLUME, "emptyDir": {}}, _config_volume(job, keys)),
        volume_mounts={first: (kubectl_mount, config_mount)} if found else {},
        service_account_name=launcher_name(job),
    )


FRAMEWORK = Framework(
    job_class=api.MPIJob,
    name="mpi",
    controller="mpijob-controller",
    is_master=is_master,
    env=env,
    extras=extras,
    creates_services=False,
    unindexed=frozenset({"Launcher"}),
    restarts_failed_pods=False,
    status=StatusRules(
        order=("Launcher", "Worker"),
        leaders=("Launcher",),
        restart_policies=frozenset({"ExitCode"}),
        messages=Messages.standard("MPIJob"),
    ),
)
