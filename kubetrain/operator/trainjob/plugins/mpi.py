"""MPI (OpenMPI): SSH keys and a hostfile so that the launcher can ``mpirun`` over the nodes.

- enforce: the ``node`` job's size (one less when the launcher counts as a node), the slots per
  host, the SSH-auth Secret volume on ``node`` and ``launcher`` (mounted at
  ``sshAuthMountPath`` in their ``node`` containers), and on the launcher the hostfile
  ConfigMap at ``/etc/mpi`` plus the four ``OMPI_MCA_*`` variables;
- pre-build: only OpenMPI is supported (upstream's words), and ``runLauncherAsNode`` with two
  or more nodes needs both the ``launcher`` and the ``node`` jobs;
- build: the Secret ``<job>-mpi-ssh-auth`` (type ``kubernetes.io/ssh-auth``, immutable; built
  only when the reconciler hands in a fresh key pair, i.e. when it does not exist yet) and the
  ConfigMap ``<job>-mpi-hostfile`` with one ``<pod DNS name> slots=<n>`` line per host.

The contract (names, modes, env, slots, hostfile text) is
:mod:`kubetrain.frameworks.trainjob.mpi`'s.
"""

from __future__ import annotations

import base64
from typing import Any

from kubetrain import api
from kubetrain.frameworks.trainjob import mpi as contract
from kubetrain.operator.trainjob import phases, runtime_info, upserts

SECRET_TYPE = "kubernetes.io/ssh-auth"


def _implementation(info: runtime_info.RuntimeInfo) -> str:
    mpi = info.ml_policy.mpi if info.ml_policy is not None else None
    impl = mpi.mpi_implementation if mpi is not None else None
    return impl or contract.OPEN_MPI


class MPI:
    name = "MPI"

    def enforce_ml_policy(self, info: runtime_info.RuntimeInfo) -> None:
        policy = info.ml_policy.mpi if info.ml_policy is not None else None
        if policy is None:
            return
        node_set = info.pod_set(api.NODE)
        if node_set is not None:
            node_set.count = contract.node_count(info.job, info.runtime)
        policy.num_proc_per_node = contract.slots(info.job, info.runtime)
        supported = _implementation(info) == contract.OPEN_MPI
        for pod_set in info.pod_sets:
            if pod_set.name not in (api.NODE, api.LAUNCHER):
                continue
            upserts.upsert_volumes(pod_set.volumes, contract.volumes(info.job, pod_set.name))
            container = pod_set.container(api.NODE)
            if container is None:
                continue
            upserts.upsert_mounts(
                container.volume_mounts, contract.volume_mounts(info.runtime, pod_set.name)
            )
            if pod_set.name == api.LAUNCHER and supported:
                upserts.upsert_env(container.env, contract.launcher_env(info.job, info.runtime))

    def pre_build(self, info: runtime_info.RuntimeInfo) -> list[api.FieldError]:
        policy = info.ml_policy.mpi if info.ml_policy is not None else None
        if policy is None:
            return []
        errors: list[api.FieldError] = []
        impl = _implementation(info)
        if impl != contract.OPEN_MPI:
            errors.append(
                api.FieldError(
                    api.ErrorType.NOT_SUPPORTED,
                    "spec.runtimeRef",
                    f"MPI implementation for {impl} doesn't supported",
                    impl,
                )
            )
        trainer = info.trainer
        nodes = trainer.num_nodes if trainer is not None and trainer.num_nodes is not None else 1
        if (
            nodes >= 2
            and policy.run_launcher_as_node
            and (info.pod_set(api.LAUNCHER) is None or info.pod_set(api.NODE) is None)
        ):
            errors.append(
                api.FieldError(
                    api.ErrorType.INVALID,
                    "spec.trainer.numNodes",
                    api.MPI_LAUNCHER_AS_NODE_MESSAGE,
                    nodes,
                )
            )
        return errors

    def build(
        self, info: runtime_info.RuntimeInfo, context: phases.BuildContext
    ) -> list[dict[str, Any]]:
        if info.ml_policy is None or info.ml_policy.mpi is None:
            return []
        objects: list[dict[str, Any]] = []
        if context.ssh_key_pair is not None:
            private, public = context.ssh_key_pair
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": info.object_meta(contract.ssh_auth_secret_name(info.job)),
                    "type": SECRET_TYPE,
                    "immutable": True,
                    "data": {
                        contract.SSH_PRIVATE_KEY: base64.b64encode(private).decode(),
                        contract.SSH_PUBLIC_KEY: base64.b64encode(public).decode(),
                    },
                }
            )
        hosts = {pod_set.name: pod_set.endpoints for pod_set in info.pod_sets}
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": info.object_meta(contract.hostfile_config_map_name(info.job)),
                "data": {contract.HOSTFILE_NAME: contract.hostfile(info.job, info.runtime, hosts)},
            }
        )
        return objects
