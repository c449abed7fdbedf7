"""The MPI (OpenMPI) contract, ported from upstream's ``mpi_test.go``.

Upstream's MPI table feeds pod endpoints in by hand (``trainJob-node-1-0.trainJob``); those
cases pass the same endpoints to :func:`mpi.hostfile`. Endpoints computed from the template
are tested on their own.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.api import _trainer_defaults
from kubetrain.frameworks.trainjob import mpi
from tests.unit.api.trainers import replicated_job, runtime, trainjob

LAUNCHER_AND_NODE = (
    replicated_job("launcher", containers=[{"name": "node"}]),
    replicated_job("node", ancestor="trainer", containers=[{"name": "node"}]),
)
DEEPSPEED = (
    replicated_job("node", containers=[{"name": "node"}]),
    replicated_job("launcher", ancestor="trainer", containers=[{"name": "node"}]),
)


def model(doc: dict[str, Any]) -> Any:
    """Parsed and defaulted; not validated, so upstream's ``trainJob`` name can be used."""
    obj, errors = api.parse(doc)
    assert obj is not None, errors
    return _trainer_defaults.set_defaults(obj)


def mpi_runtime(*, launcher_as_node: bool = False, **policy: Any) -> Any:
    doc = runtime("mpi", name="mpi").jobs(*LAUNCHER_AND_NODE)
    doc.policy("mpi", runLauncherAsNode=launcher_as_node, **policy)
    return model(doc.build())


def job(**trainer: Any) -> Any:
    builder = trainjob("trainJob", runtime_name="mpi")
    return model(builder.trainer(**trainer).build() if trainer else builder.build())


@pytest.mark.parametrize(
    ("trainer", "launcher_as_node", "hosts", "expected_count", "expected_hostfile"),
    [
        pytest.param(
            {"numNodes": 2},
            False,
            {
                "launcher": ["trainJob-launcher-0-0.trainJob"],
                "node": ["trainJob-node-1-0.trainJob", "trainJob-node-1-1.trainJob"],
            },
            2,
            "trainJob-node-1-0.trainJob slots=1\ntrainJob-node-1-1.trainJob slots=1\n",
            id="trainJob numNodes is respected rather than mlPolicy one",
        ),
        pytest.param(
            {"numNodes": 1, "numProcPerNode": 2},
            False,
            {
                "launcher": ["trainJob-launcher-0-0.trainJob"],
                "node": ["trainJob-node-1-0.trainJob"],
            },
            1,
            "trainJob-node-1-0.trainJob slots=2\n",
            id="trainJob numProcPerNode is respected rather than mlPolicy one",
        ),
        pytest.param(
            {"numNodes": 1, "resourcesPerNode": {"requests": {"custom.com/gpu": "5"}}},
            False,
            {
                "launcher": ["trainJob-launcher-0-0.trainJob"],
                "node": ["trainJob-node-1-0.trainJob"],
            },
            1,
            "trainJob-node-1-0.trainJob slots=5\n",
            id="numProcPerNode is set to number of GPUs in TrainJob",
        ),
        pytest.param(
            {"numNodes": 10},
            True,
            {
                "launcher": ["trainJob-launcher-0-0.trainJob"],
                "node": ["trainJob-node-1-0.trainJob"],
            },
            9,
            "trainJob-launcher-0-0.trainJob slots=1\ntrainJob-node-1-0.trainJob slots=1\n",
            id="runLauncherAsNode is true",
        ),
    ],
)
def test_node_count_slots_and_hostfile_follow_upstream(
    trainer: dict[str, Any],
    launcher_as_node: bool,
    hosts: dict[str, list[str]],
    expected_count: int,
    expected_hostfile: str,
) -> None:
    rt, train_job = mpi_runtime(launcher_as_node=launcher_as_node), job(**trainer)
    assert mpi.node_count(train_job, rt) == expected_count
    assert mpi.hostfile(train_job, rt, hosts) == expected_hostfile


def test_the_launcher_env_is_the_four_openmpi_variables() -> None:
    train_job, rt = job(numNodes=1, numProcPerNode=4), mpi_runtime()
    assert mpi.launcher_env(train_job, rt) == [
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": "4"},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
    ]


def test_the_ssh_and_hostfile_volumes_and_mounts() -> None:
    train_job, rt = job(), mpi_runtime(sshAuthMountPath="/home/mpiuser/.ssh")
    ssh = {
        "name": "mpi-ssh-auth",
        "secret": {
            "secretName": "trainJob-mpi-ssh-auth",
            "defaultMode": 0o400,
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
            ],
        },
    }
    hostfile = {
        "name": "mpi-hostfile",
        "configMap": {
            "name": "trainJob-mpi-hostfile",
            "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
        },
    }
    assert mpi.volumes(train_job, "launcher") == [ssh, hostfile]
    assert mpi.volumes(train_job, "node") == [ssh]
    assert mpi.volumes(train_job, "dataset-initializer") == []
    assert mpi.volume_mounts(rt, "launcher") == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
        {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
    ]
    assert mpi.volume_mounts(rt, "node") == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}
    ]


def test_the_default_ssh_mount_path_is_root_ssh() -> None:
    assert mpi.ssh_auth_mount(mpi_runtime()) == {"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"}


@pytest.mark.parametrize(
    ("runtime_nproc", "trainer", "expected"),
    [
        pytest.param(1, {}, 1, id="the runtime default"),
        pytest.param(4, {}, 4, id="the runtime's value"),
        pytest.param(4, {"numProcPerNode": 2}, 2, id="the TrainJob's value wins"),
        pytest.param(
            1,
            {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}},
            8,
            id="a runtime value of 1 becomes the GPU count",
        ),
        pytest.param(
            2,
            {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}},
            2,
            id="any other runtime value stays",
        ),
        pytest.param(
            1,
            {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "1"}}},
            1,
            id="one GPU keeps one slot",
        ),
    ],
)
def test_slots(runtime_nproc: int, trainer: dict[str, Any], expected: int) -> None:
    assert mpi.slots(job(**trainer), mpi_runtime(numProcPerNode=runtime_nproc)) == expected


def test_endpoints_and_hostfile_from_the_template() -> None:
    rt = model(
        runtime("mpi", name="deepspeed")
        .policy("mpi", runLauncherAsNode=True)
        .jobs(*DEEPSPEED)
        .build()
    )
    train_job = model(trainjob("ds", runtime_name="deepspeed").trainer(numNodes=3).build())
    assert mpi.pod_counts(train_job, rt) == {"node": 2, "launcher": 1}
    assert mpi.endpoints(train_job, rt) == {
        "node": ["ds-node-0-0.ds", "ds-node-0-1.ds"],
        "launcher": ["ds-launcher-0-0.ds"],
    }
    assert mpi.hostfile(train_job, rt) == (
        "ds-node-0-0.ds slots=1\nds-node-0-1.ds slots=1\nds-launcher-0-0.ds slots=1\n"
    )


def test_a_jobset_subdomain_names_the_hosts() -> None:
    rt = model(
        runtime("mpi", name="mpi")
        .jobs(*LAUNCHER_AND_NODE)
        .jobset(network={"subdomain": "net"})
        .build()
    )
    train_job = model(trainjob("a", runtime_name="mpi").trainer(numNodes=2).build())
    assert mpi.hostfile(train_job, rt) == "a-node-0-0.net slots=1\na-node-0-1.net slots=1\n"


def test_without_trainjob_num_nodes_the_runtime_count_stands() -> None:
    rt = model(runtime("mpi", name="mpi").ml_policy(numNodes=3).jobs(*LAUNCHER_AND_NODE).build())
    assert mpi.node_count(model(trainjob("a", runtime_name="mpi").build()), rt) == 3


def test_an_implementation_other_than_openmpi_is_refused_in_upstreams_words() -> None:
    rt = model(runtime("mpi", name="mpi").policy("mpi", mpiImplementation="Intel").build())
    with pytest.raises(
        mpi.UnsupportedImplementation, match="MPI implementation for Intel doesn't supported"
    ):
        mpi.launcher_env(job(), rt)


def test_validation_reserves_exactly_the_names_the_contract_injects() -> None:
    names = tuple(var["name"] for var in mpi.launcher_env(job(), mpi_runtime()))
    own = [{"name": name, "value": "1"} for name in names]
    errors = mpi.validate(model(trainjob("a").trainer(env=own).build()), mpi_runtime())
    assert [e.path for e in errors] == ["spec.trainer.env"]
    assert errors[0].detail.endswith("[" + " ".join(sorted(names)) + "]")
