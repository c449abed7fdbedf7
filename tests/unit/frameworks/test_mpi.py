"""MPIJob v1: ConfigMap texts, launcher and worker pods, GPU launchers, Intel MPI, status."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import frameworks
from kubetrain.frameworks import mpi
from tests.builders import mpijob


def job_with(workers: int = 2, *, gpu: str | None = None, **spec: Any) -> Any:
    limits = {gpu: 1} if gpu else None
    builder = mpijob("ns", "m").replica("Launcher", 1, limits=limits).workers(workers)
    return builder.spec(**spec).build()


GPU = [
    pytest.param("nvidia.com/gpu", True, id="isNvidiaGPU: a *.com/gpu limit"),
    pytest.param("vendor-domain/gpu", True, id="isExtendedGPU: a limit whose name contains gpu"),
    pytest.param("vendor-domain/resourcetype", False, id="notGPU: any other limit"),
    pytest.param(None, False, id="no limits at all"),
]


@pytest.mark.parametrize(("resource", "expected"), GPU)
def test_gpu_launcher_detection(resource: str | None, expected: bool) -> None:
    assert mpi.is_gpu_launcher(job_with(gpu=resource)) is expected


def test_a_gpu_request_without_a_limit_does_not_make_a_gpu_launcher() -> None:
    job = job_with()
    container = job.replica_specs()["Launcher"].template["spec"]["containers"][0]
    container["resources"] = {"requests": {"nvidia.com/gpu": 1}}
    assert not mpi.is_gpu_launcher(job)


HOSTFILE = [
    pytest.param({}, None, "m-worker-0 slots=1\nm-worker-1 slots=1\n", id="one slot by default"),
    pytest.param(
        {"slotsPerWorker": 4}, None, "m-worker-0 slots=4\nm-worker-1 slots=4\n",
        id="slotsPerWorker sets every line",
    ),
    pytest.param(
        {}, "nvidia.com/gpu", "m-launcher slots=1\nm-worker-0 slots=1\nm-worker-1 slots=1\n",
        id="a GPU launcher is listed first",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "gpu", "expected"), HOSTFILE)
def test_hostfile(spec: dict[str, Any], gpu: str | None, expected: str) -> None:
    assert mpi.hostfile(job_with(gpu=gpu, **spec)) == expected


def test_a_job_with_no_workers_has_an_empty_hostfile() -> None:
    job = mpijob("ns", "m").replica("Launcher", 1).replica("Worker", None).build()
    assert mpi.hostfile(job) == ""


def test_kubexec_script_without_a_main_container() -> None:
    assert mpi.kubexec_script(job_with()) == (
        "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n"
        '/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c "$*"'
    )


def test_kubexec_script_targets_the_main_container() -> None:
    assert mpi.kubexec_script(job_with(mainContainer="trainer")) == (
        "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n"
        '/opt/kube/kubectl exec ${POD_NAME} --container trainer -- /bin/sh -c "$*"'
    )


def test_config_map_starts_with_hostfile_and_kubexec() -> None:
    job = job_with()
    assert mpi.config_map_name(job) == "m-config"
    assert mpi.config_map_data(job) == {
        "hostfile": mpi.hostfile(job),
        "kubexec.sh": mpi.kubexec_script(job),
    }


DISCOVER = [
    pytest.param(None, ["m-worker-1", "m-worker-0"],
                 "#!/bin/sh\necho m-worker-0:1\necho m-worker-1:1",
                 id="running workers sorted by name"),
    pytest.param(None, [], "#!/bin/sh", id="no running worker leaves only the shebang"),
    pytest.param("nvidia.com/gpu", ["m-worker-0"],
                 "#!/bin/sh\necho m-launcher:1\n\necho m-worker-0:1",
                 id="a GPU launcher first, with upstream's blank line after it"),
]  # fmt: skip


@pytest.mark.parametrize(("gpu", "running", "expected"), DISCOVER)
def test_discover_hosts_script(gpu: str | None, running: list[str], expected: str) -> None:
    assert mpi.discover_hosts_script(job_with(gpu=gpu), running) == expected


def test_the_launcher_pod_is_named_without_index_and_has_the_master_role() -> None:
    contract = frameworks.pod_contract(job_with(), "Launcher", 0)
    assert contract.name == "m-launcher"
    assert dict(contract.labels) == {
        "training.kubeflow.org/operator-name": "mpijob-controller",
        "training.kubeflow.org/job-name": "m",
        "training.kubeflow.org/replica-type": "launcher",
        "training.kubeflow.org/job-role": "master",
    }


def test_a_cpu_launcher_gets_open_mpi_intel_mpi_and_empty_nvidia_vars() -> None:
    contract = frameworks.pod_contract(job_with(), "Launcher", 0)
    assert contract.env == {
        "mpi": (
            {"name": "OMPI_MCA_plm_rsh_agent", "value": "/etc/mpi/kubexec.sh"},
            {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": ""},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
            {"name": "I_MPI_HYDRA_BOOTSTRAP", "value": "rsh"},
            {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC", "value": "/etc/mpi/kubexec.sh"},
        )
    }


def test_a_gpu_launcher_keeps_the_nvidia_vars_of_its_runtime() -> None:
    env = frameworks.pod_contract(job_with(gpu="nvidia.com/gpu"), "Launcher", 0).env["mpi"]
    assert [var["name"] for var in env] == [
        "OMPI_MCA_plm_rsh_agent",
        "OMPI_MCA_orte_default_hostfile",
        "I_MPI_HYDRA_BOOTSTRAP",
        "I_MPI_HYDRA_BOOTSTRAP_EXEC",
    ]


KUBEXEC_PATH = "/etc/mpi/kubexec.sh"

INTEL = [
    pytest.param({"X_MPI_HYDRA_BOOTSTRAP": "foo"},
                 {"I_MPI_HYDRA_BOOTSTRAP": "rsh", "I_MPI_HYDRA_BOOTSTRAP_EXEC": KUBEXEC_PATH},
                 id="withoutIMPIValues"),
    pytest.param({"I_MPI_HYDRA_BOOTSTRAP": "RSH"},
                 {"I_MPI_HYDRA_BOOTSTRAP": "RSH", "I_MPI_HYDRA_BOOTSTRAP_EXEC": KUBEXEC_PATH},
                 id="withIMPIBootstrap"),
    pytest.param({"I_MPI_HYDRA_BOOTSTRAP_EXEC": "/script.sh"},
                 {"I_MPI_HYDRA_BOOTSTRAP": "rsh", "I_MPI_HYDRA_BOOTSTRAP_EXEC": "/script.sh"},
                 id="withIMPIBootstrapExec"),
    pytest.param({"I_MPI_HYDRA_BOOTSTRAP": "RSH", "I_MPI_HYDRA_BOOTSTRAP_EXEC": "/script.sh"},
                 {"I_MPI_HYDRA_BOOTSTRAP": "RSH", "I_MPI_HYDRA_BOOTSTRAP_EXEC": "/script.sh"},
                 id="withIMPIBootstrapAndExec"),
]  # fmt: skip


@pytest.mark.parametrize(("user", "expected"), INTEL)
def test_intel_mpi_defaults_yield_to_the_users_values(
    user: dict[str, str], expected: dict[str, str]
) -> None:
    user_env = [{"name": k, "value": v} for k, v in user.items()]
    job = mpijob("ns", "m").replica("Launcher", 1, env=user_env).workers(1).build()
    template = job.replica_specs()["Launcher"].template
    pod = frameworks.pod_contract(job, "Launcher", 0).apply(template)
    env = pod["spec"]["containers"][0]["env"]
    intel = [(var["name"], var["value"]) for var in env if var["name"].startswith("I_MPI")]
    assert dict(intel) == expected
    assert len(intel) == 2  # a user's value is never duplicated by a default


def test_the_launcher_pod_gets_kubectl_delivery_mounts_volumes_and_service_account() -> None:
    job = job_with()
    pod = frameworks.pod_contract(job, "Launcher", 0).apply(
        job.replica_specs()["Launcher"].template
    )
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "m-launcher"
    assert spec["restartPolicy"] == "Never"
    assert spec["initContainers"] == [
        {
            "name": "kubectl-delivery",
            "image": "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest",
            "imagePullPolicy": "IfNotPresent",
            "env": [
                {"name": "TARGET_DIR", "value": "/opt/kube"},
                {"name": "NAMESPACE", "value": "ns"},
            ],
            "volumeMounts": [
                {"name": "mpi-job-kubectl", "mountPath": "/opt/kube"},
                {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
            ],
            "resources": {
                "limits": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
                "requests": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
            },
        }
    ]
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "mpi-job-kubectl", "mountPath": "/opt/kube"},
        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
    ]
    assert spec["volumes"] == [
        {"name": "mpi-job-kubectl", "emptyDir": {}},
        {
            "name": "mpi-job-config",
            "configMap": {
                "name": "m-config",
                "items": [
                    {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555},
                    {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                    {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
                ],
            },
        },
    ]


def test_a_service_account_in_the_launcher_template_is_kept() -> None:
    job = mpijob("ns", "m").replica("Launcher", 1, service_account="runner").workers(1).build()
    template = job.replica_specs()["Launcher"].template
    pod = frameworks.pod_contract(job, "Launcher", 0).apply(template)
    assert pod["spec"]["serviceAccountName"] == "runner"


def test_the_kubectl_delivery_image_is_an_operator_setting() -> None:
    settings = frameworks.Settings(kubectl_delivery_image="registry.local/kubectl:1")
    contract = frameworks.pod_contract(job_with(), "Launcher", 0, settings)
    assert contract.init_containers[0]["image"] == "registry.local/kubectl:1"


def test_a_worker_without_a_command_sleeps_and_mounts_kubexec() -> None:
    job = job_with()
    contract = frameworks.pod_contract(job, "Worker", 1)
    assert contract.name == "m-worker-1"
    assert contract.labels["training.kubeflow.org/replica-index"] == "1"
    assert frameworks.JOB_ROLE_LABEL not in contract.labels
    assert contract.env == {}
    pod = contract.apply(job.replica_specs()["Worker"].template)
    container = pod["spec"]["containers"][0]
    assert (container["command"], container["args"]) == (["sleep"], ["365d"])
    assert container["volumeMounts"] == [{"name": "mpi-job-config", "mountPath": "/etc/mpi"}]
    assert pod["spec"]["volumes"] == [
        {
            "name": "mpi-job-config",
            "configMap": {
                "name": "m-config",
                "items": [{"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555}],
            },
        }
    ]


def test_a_worker_with_its_own_command_keeps_it() -> None:
    job = mpijob("ns", "m").replica("Launcher", 1).workers(1, command=["sshd", "-D"]).build()
    pod = frameworks.pod_contract(job, "Worker", 0).apply(job.replica_specs()["Worker"].template)
    assert pod["spec"]["containers"][0]["command"] == ["sshd", "-D"]
    assert "args" not in pod["spec"]["containers"][0]


def test_mpi_creates_no_services_and_leaves_failed_pods_to_the_status_rules() -> None:
    job = job_with()
    framework = frameworks.for_kind("MPIJob")
    assert not framework.creates_services
    with pytest.raises(frameworks.ContractError, match="MPIJob creates no services"):
        frameworks.service_contract(job, "Worker", 0)
    assert frameworks.on_pod_failed(job, "Worker", 137) is None


def C(kind: str, message: str, reason: str | None = None) -> frameworks.Condition:
    return frameworks.Condition(kind, reason or f"MPIJob{kind}", message)


STATUS = [
    pytest.param(None, {"Launcher": (1, 0, 0)}, (C("Running", "MPIJob m is running."),),
                 id="a running launcher with pending workers makes the job Running"),
    pytest.param(None, {"Launcher": (0, 1, 0), "Worker": (2, 0, 0)},
                 (C("Succeeded", "MPIJob m is successfully completed."),),
                 id="a succeeded launcher ends the job"),
    pytest.param(None, {"Launcher": (0, 0, 1), "Worker": (2, 0, 0)},
                 (C("Failed", "MPIJob m is failed because 1 Launcher replica(s) failed.",
                    "MPIJobFailed"),),
                 id="a failed launcher fails the job with reason MPIJobFailed, "
                    "not upstream's doubled MPIJobMPIJobFailed"),
    pytest.param("ExitCode", {"Launcher": (1, 0, 0), "Worker": (1, 0, 1)},
                 (C("Running", "MPIJob m is running."),
                  C("Restarting", "MPIJob m is restarting because 1 Worker replica(s) failed.")),
                 id="a failed worker under ExitCode makes the job Restarting"),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "observed", "expected"), STATUS)
def test_status(policy: str | None, observed: dict[str, Any], expected: tuple[Any, ...]) -> None:
    job = (
        mpijob("ns", "m")
        .replica("Launcher", 1, restart_policy=policy)
        .workers(2, restart_policy=policy)
        .build()
    )
    counts = {
        rtype: frameworks.ReplicaCounts(active=a, succeeded=s, failed=f)
        for rtype, (a, s, f) in observed.items()
    }
    assert frameworks.evaluate(job, counts).changes == expected
