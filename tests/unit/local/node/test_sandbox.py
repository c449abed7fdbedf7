"""A pod's directory on the host: volumes materialised and refreshed, the hosts file rewritten
in place, mounts resolved to host paths with their errors named; and the probe of a private
mount namespace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubetrain.local.node import runtime as rt
from kubetrain.local.node import sandbox


def pod(*volumes: rt.Volume, hosts: str = "127.0.0.1 localhost\n") -> rt.Sandbox:
    return rt.Sandbox(uid="u", namespace="ns", name="p", hostname="p", hosts=hosts, volumes=volumes)


def test_materialise_writes_files_with_their_modes_and_refreshes_only_what_changed(
    tmp_path: Path,
) -> None:
    root = str(tmp_path)
    files = rt.Volume(
        "cfg", "files", files=(rt.File("a", b"1"), rt.File("d/b", b"2", 0o600), rt.File("c", b"3"))
    )
    sandbox.materialise(root, pod(files, rt.Volume("scratch", "empty")))
    base = Path(sandbox.volume_dir(root, "u", "cfg"))
    assert (base / "a").read_bytes() == b"1"
    assert (base / "d" / "b").read_bytes() == b"2"
    assert (base / "d" / "b").stat().st_mode & 0o777 == 0o600
    assert Path(sandbox.volume_dir(root, "u", "scratch")).is_dir()
    untouched = (base / "a").stat().st_ino
    changed = rt.Volume("cfg", "files", files=(rt.File("a", b"1"), rt.File("c", b"new")))
    sandbox.materialise(root, pod(changed))
    assert (base / "a").stat().st_ino == untouched
    assert (base / "c").read_bytes() == b"new"
    assert not (base / "d").exists()  # no longer listed: removed, empty dirs too
    assert sandbox.prepared(root, "u")


def test_the_hosts_file_is_rewritten_in_place(tmp_path: Path) -> None:
    path = str(tmp_path / "hosts")
    sandbox.write_hosts(path, "10.0.0.1 a-long-name\n")
    inode = os.stat(path).st_ino
    sandbox.write_hosts(path, "10.0.0.2 b\n")
    assert Path(path).read_text() == "10.0.0.2 b\n"
    assert os.stat(path).st_ino == inode  # a bind mount of it sees the change


def test_a_missing_host_path_is_created_and_left_when_the_pod_goes(tmp_path: Path) -> None:
    host = tmp_path / "data" / "set"
    sandbox.materialise(str(tmp_path / "node"), pod(rt.Volume("d", "host", host_path=str(host))))
    assert host.is_dir()
    sandbox.remove(str(tmp_path / "node"), "u")
    assert host.is_dir()
    assert not Path(sandbox.pod_dir(str(tmp_path / "node"), "u")).exists()


def test_mounts_resolve_to_host_paths_and_files_volumes_are_read_only(tmp_path: Path) -> None:
    root = str(tmp_path)
    sb = pod(
        rt.Volume("cfg", "files", files=(rt.File("a", b"1"),)),
        rt.Volume("scratch", "empty"),
        rt.Volume("host", "host", host_path="/srv/data"),
    )
    sandbox.materialise(root, sb)
    resolved = sandbox.resolve_mounts(
        root,
        sb,
        [
            rt.Mount("cfg", "/etc/cfg/"),
            rt.Mount("scratch", "/out", sub_path="run/1"),
            rt.Mount("host", "/data", read_only=True),
        ],
    )
    assert resolved == [
        {"source": sandbox.volume_dir(root, "u", "cfg"), "target": "/etc/cfg", "readOnly": True},
        {
            "source": os.path.join(sandbox.volume_dir(root, "u", "scratch"), "run/1"),
            "target": "/out",
            "readOnly": False,
        },
        {"source": "/srv/data", "target": "/data", "readOnly": True},
    ]
    assert os.path.isdir(resolved[1]["source"])  # a missing subPath is made, as kubelet does


@pytest.mark.parametrize(
    ("sentence", "mount", "message"),
    [
        (
            "an unknown volume",
            rt.Mount("nope", "/x"),
            'volume "nope" is not a volume of the pod; accepted: cfg',
        ),
        ("a relative mount path", rt.Mount("cfg", "x"), "mountPath 'x' is not absolute"),
        (
            "a subPath out of the volume",
            rt.Mount("cfg", "/x", sub_path="../../etc"),
            "must be a relative path inside the volume",
        ),
        (
            "a subPath missing from a files volume",
            rt.Mount("cfg", "/x", sub_path="zz"),
            "subPath 'zz' is not in the volume",
        ),
    ],
)
def test_mount_errors_say_what_is_wrong(
    tmp_path: Path, sentence: str, mount: rt.Mount, message: str
) -> None:
    sb = pod(rt.Volume("cfg", "files", files=(rt.File("a", b"1"),)))
    sandbox.materialise(str(tmp_path), sb)
    with pytest.raises(sandbox.SandboxError) as error:
        sandbox.resolve_mounts(str(tmp_path), sb, [mount])
    assert message in str(error.value), sentence


@pytest.mark.parametrize(
    ("sentence", "volume", "message"),
    [
        (
            "a file path out of the volume",
            rt.Volume("v", "files", files=(rt.File("../x", b""),)),
            "must be a relative path",
        ),
        (
            "an unknown kind",
            rt.Volume("v", "nfs"),
            "unknown kind 'nfs'; accepted: empty, host, files",
        ),  # type: ignore[arg-type]
        (
            "a relative host path",
            rt.Volume("v", "host", host_path="data"),
            "host path 'data' is not absolute",
        ),
        (
            "a volume name with a slash",
            rt.Volume("a/b", "empty"),
            "volume name 'a/b' is not a valid name",
        ),
    ],
)
def test_volume_errors_say_what_is_wrong(
    tmp_path: Path, sentence: str, volume: rt.Volume, message: str
) -> None:
    with pytest.raises(sandbox.SandboxError) as error:
        sandbox.materialise(str(tmp_path), pod(volume))
    assert message in str(error.value), sentence
