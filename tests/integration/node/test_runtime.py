"""The node runtime with real processes: exit codes and reasons, CRI logs, env and working dir,
volumes and /etc/hosts in a private mount namespace, graceful and forced stops of a whole tree,
memory limits, GPUs, adoption by a new Runtime after an agent restart or a killed shim, exec."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kubetrain.local.node import logs, proctree, shim
from kubetrain.local.node import runtime as rt
from tests.integration.node.runtimes import PY, needs_namespace, run
from tests.integration.node.runtimes import log_text as text

DEADLINE = 10.0


@pytest.fixture
def node(tmp_path: Path) -> rt.Runtime:
    return rt.Runtime(rt.Settings(root=str(tmp_path / "node"), node_gpus=()))


def pod(uid: str = "pod-1", *, hosts: str = "", volumes: tuple[rt.Volume, ...] = ()) -> rt.Sandbox:
    return rt.Sandbox(
        uid=uid,
        namespace="ns",
        name=f"name-{uid}",
        hostname=f"host-{uid}",
        hosts=hosts,
        volumes=volumes,
    )


def python(name: str, code: str, **kw: object) -> rt.ContainerSpec:
    return rt.ContainerSpec(name=name, argv=(PY, "-c", code), env=kw.pop("env", ()), **kw)  # type: ignore[arg-type]


async def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def logged(node: rt.Runtime, id: rt.ContainerId, needle: str) -> None:
    await until(
        lambda: os.path.exists(node.log_path(id)) and needle in text(node, id), repr(needle)
    )


def gone(pid: int) -> bool:
    return proctree.starttime(pid) is None


def test_exit_code_3_is_an_error_and_the_output_is_a_cri_log(node: rt.Runtime) -> None:
    code = "import sys; print('one'); print('two', file=sys.stderr); sys.exit(3)"

    async def scenario() -> rt.ContainerState:
        started = await node.start(pod(), python("main", code), 0)
        assert started.running
        assert started.pid
        assert started.started_at
        return await node.wait(started.id)

    state = run(scenario())
    assert (state.exit_code, state.reason) == (3, "Error")
    assert state.started_at
    assert state.finished_at
    assert state.started_at <= state.finished_at
    lines = Path(node.log_path(state.id)).read_text().splitlines()
    cri = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z (stdout|stderr) F (.*)")
    assert sorted(cri.fullmatch(line).groups() for line in lines) == [  # type: ignore[union-attr]
        ("stderr", "two"),
        ("stdout", "one"),
    ]


def test_exit_0_is_completed_and_a_signal_is_128_plus_n(node: rt.Runtime) -> None:
    async def scenario() -> tuple[rt.ContainerState, rt.ContainerState]:
        ok = await node.start(pod(), python("ok", "pass"), 0)
        killed = await node.start(pod(), python("killed", "import os; os.kill(os.getpid(), 9)"), 0)
        return await node.wait(ok.id), await node.wait(killed.id)

    ok, killed = run(scenario())
    assert (ok.exit_code, ok.reason) == (0, "Completed")
    assert (killed.exit_code, killed.reason) == (137, "Error")


def test_an_unknown_command_is_a_start_error_that_says_why(
    node: rt.Runtime, tmp_path: Path
) -> None:
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\n")

    async def scenario() -> tuple[rt.StartError, rt.StartError]:
        with pytest.raises(rt.StartError) as missing:
            await node.start(pod(), rt.ContainerSpec("c", ("kt-no-such-command", "x"), ()), 0)
        with pytest.raises(rt.StartError) as denied:
            await node.start(pod(), rt.ContainerSpec("d", (str(script),), ()), 0)
        return missing.value, denied.value

    missing, denied = run(scenario())
    assert missing.reason == "ContainerCannotRun"
    assert 'command "kt-no-such-command" not found on this node' in missing.message
    assert "images are not pulled" in missing.message
    assert "PATH=" in missing.message
    state = node.state(rt.ContainerId("pod-1", "c", 0))
    assert state is not None
    assert (state.exit_code, state.reason, state.message) == (
        127,
        "ContainerCannotRun",
        missing.message,
    )
    assert "not executable" in denied.message
    assert node.state(rt.ContainerId("pod-1", "d", 0)).exit_code == 126  # type: ignore[union-attr]


def test_a_follow_of_a_running_containers_log_ends_when_it_exits(tmp_path: Path) -> None:
    node = rt.Runtime(rt.Settings(root=str(tmp_path / "node"), log_max_bytes=4096, node_gpus=()))
    code = "import time\nfor i in range(400):\n    print('line', i, flush=True); time.sleep(5e-4)"

    async def scenario() -> tuple[bytes, rt.ContainerId]:
        started = await node.start(pod(), python("c", code), 0)
        state = node.state
        chunks = [
            chunk
            async for chunk in logs.read(
                [node.log_path(started.id)],
                follow=True,
                timestamps=False,
                tail_lines=None,
                since=None,
                limit_bytes=None,
                running=lambda: state(started.id).running,  # type: ignore[union-attr]
            )
        ]
        return b"".join(chunks), started.id

    text, id = run(scenario())
    lines = text.decode().splitlines()
    assert lines[-1] == "line 399"  # everything to the end, though the log was rotated
    assert os.path.getsize(node.log_path(id)) <= 2048
    assert os.path.getsize(node.log_path(id) + ".1") <= 2048


def test_env_working_dir_and_path_are_seen_inside(node: rt.Runtime, tmp_path: Path) -> None:
    code = "import os; print(os.environ['GREETING'], os.getcwd(), os.environ['PATH'], sep='\\n')"
    work = tmp_path / "work" / "dir"

    async def scenario() -> tuple[rt.ContainerState, rt.ContainerState]:
        given = python(
            "given",
            code,
            env=(("GREETING", "hello"), ("PATH", "/usr/bin:/bin")),
            working_dir=str(work),
        )
        default = python("default", code, env=(("GREETING", "hi"),))
        a = await node.start(pod(), given, 0)
        b = await node.start(pod(), default, 0)
        return await node.wait(a.id), await node.wait(b.id)

    a, b = run(scenario())
    assert a.exit_code == 0
    assert b.exit_code == 0
    greeting, cwd, path = text(node, a.id).splitlines()
    assert (greeting, cwd) == ("hello", str(work))
    assert path == f"{os.path.dirname(sys.executable)}:/usr/bin:/bin"
    assert text(node, b.id).splitlines()[1] == os.path.join(
        node.settings.root, "pods", "pod-1", "containers", "default", "work"
    )


@needs_namespace
def test_volumes_are_at_their_mount_paths_read_only_where_asked_and_only_inside(
    node: rt.Runtime, tmp_path: Path
) -> None:
    host_dir = tmp_path / "host-data"
    host_dir.mkdir()
    (host_dir / "h.txt").write_text("from the host")
    mnt = tmp_path / "mnt"
    volumes = (
        rt.Volume(
            "cfg",
            "files",
            files=(rt.File("a.txt", b"config"), rt.File("sub/secret", b"s3cret", 0o600)),
        ),
        rt.Volume("scratch", "empty"),
        rt.Volume("data", "host", host_path=str(host_dir)),
    )
    mounts = (
        rt.Mount("cfg", str(mnt / "cfg")),
        rt.Mount("scratch", str(mnt / "scratch")),
        rt.Mount("data", str(mnt / "data"), read_only=True),
        rt.Mount("cfg", str(mnt / "one.txt"), sub_path="a.txt"),
    )
    code = f"""
import os
m = {str(mnt)!r}
secret = m + '/cfg/sub/secret'
print(open(m + '/cfg/a.txt').read(), open(secret).read(), oct(os.stat(secret).st_mode & 0o777))
print(open(m + '/data/h.txt').read(), open(m + '/one.txt').read())
open(m + '/scratch/out.txt', 'w').write('written')
for p in ('/cfg/new', '/data/new'):
    try:
        open(m + p, 'w')
        print('writable', p)
    except OSError as e:
        print('read-only', p, e.errno)
"""

    async def scenario() -> rt.ContainerState:
        sandbox = pod(volumes=volumes)
        await node.prepare(sandbox)
        started = await node.start(sandbox, python("c", code, mounts=mounts), 0)
        return await node.wait(started.id)

    state = run(scenario())
    assert state.exit_code == 0, text(node, state.id)
    assert text(node, state.id).splitlines() == [
        "config s3cret 0o600",
        "from the host config",
        "read-only /cfg/new 30",
        "read-only /data/new 30",
    ]
    scratch = Path(node.settings.root) / "pods" / "pod-1" / "volumes" / "scratch" / "out.txt"
    assert scratch.read_text() == "written"
    # The mounts and their mount points were the container's own: the host has neither.
    assert not mnt.exists()


@needs_namespace
def test_etc_hosts_and_hostname_are_the_pods_and_updates_reach_a_running_process(
    node: rt.Runtime,
) -> None:
    before = Path("/etc/hosts").read_text()
    code = """
import socket, time
print(socket.gethostname(), socket.gethostbyname('trainer-0.svc'), flush=True)
deadline = time.monotonic() + 10
while 'worker-1.svc' not in open('/etc/hosts').read() and time.monotonic() < deadline:
    time.sleep(0.02)
print(socket.gethostbyname('worker-1.svc'))
"""

    async def scenario() -> rt.ContainerState:
        sandbox = pod(hosts="127.0.0.1 localhost\n10.9.8.7 trainer-0.svc\n")
        await node.prepare(sandbox)
        started = await node.start(sandbox, python("c", code), 0)
        await logged(node, started.id, "10.9.8.7")
        await node.update_hosts(
            "pod-1", "127.0.0.1 localhost\n10.9.8.7 trainer-0.svc\n10.9.8.8 worker-1.svc\n"
        )
        return await node.wait(started.id)

    state = run(scenario())
    assert state.exit_code == 0, text(node, state.id)
    assert text(node, state.id).splitlines() == ["host-pod-1 10.9.8.7", "10.9.8.8"]
    assert Path("/etc/hosts").read_text() == before


def test_stop_lets_a_process_that_handles_sigterm_exit_on_its_own(node: rt.Runtime) -> None:
    code = """
import signal, sys, time
def bye(*_):
    print('bye', flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
print('ready', flush=True)
time.sleep(60)
"""

    async def scenario() -> tuple[rt.ContainerState, float]:
        started = await node.start(pod(), python("c", code), 0)
        await logged(node, started.id, "ready")
        t0 = time.monotonic()
        stopped = await node.stop(started.id, grace=10)
        return stopped, time.monotonic() - t0

    state, took = run(scenario())
    assert (state.exit_code, state.reason) == (0, "Completed")
    assert took < 5
    assert "bye" in text(node, state.id)


def test_stop_kills_the_whole_tree_after_the_grace_period_when_sigterm_is_ignored(
    node: rt.Runtime,
) -> None:
    code = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, '-c', '''
import signal, subprocess, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen(['sleep', '60'], start_new_session=True)
print('pids', grandchild.pid, flush=True)
time.sleep(60)
'''])
print('pids', child.pid, flush=True)
time.sleep(60)
"""

    async def scenario() -> tuple[rt.ContainerState, float, list[int]]:
        started = await node.start(pod(), python("c", code), 0)
        await until(
            lambda: (
                os.path.exists(node.log_path(started.id))
                and text(node, started.id).count("pids") == 2
            ),
            "pids",
        )
        pids = [int(line.split()[1]) for line in text(node, started.id).splitlines()]
        t0 = time.monotonic()
        stopped = await node.stop(started.id, grace=0.3)
        return stopped, time.monotonic() - t0, [started.pid or 0, *pids]

    state, took, pids = run(scenario())
    assert (state.exit_code, state.reason) == (137, "Error")
    assert took >= 0.3
    assert all(gone(p) for p in pids), [proctree.stat(p) for p in pids]


def test_a_container_over_its_memory_limit_is_oom_killed(node: rt.Runtime) -> None:
    code = "import time; x = b'x' * 150_000_000; print('allocated', flush=True); time.sleep(30)"

    async def scenario() -> rt.ContainerState:
        started = await node.start(pod(), python("c", code, memory_limit=60_000_000), 0)
        return await asyncio.wait_for(node.wait(started.id), DEADLINE)

    state = run(scenario())
    assert (state.exit_code, state.reason) == (137, "OOMKilled")
    assert "memory limit of 60000000 bytes exceeded" in state.message


def test_a_new_runtime_adopts_running_containers_and_never_starts_a_second_copy(
    tmp_path: Path,
) -> None:
    settings = rt.Settings(root=str(tmp_path / "node"), node_gpus=())
    code = "import time; print('up', flush=True); time.sleep(60)"

    async def scenario() -> tuple[
        rt.ContainerState, rt.ContainerState, list[rt.ContainerState], rt.ContainerState
    ]:
        first = rt.Runtime(settings)
        started = await first.start(pod(), python("c", code), 0)
        again = rt.Runtime(settings)  # the agent restarted
        seen = again.containers()
        same = await again.start(pod(), python("c", code), 0)
        stopped = await again.stop(started.id, grace=5)
        return started, same, seen, stopped

    started, same, seen, stopped = run(scenario())
    assert [(s.id, s.pid, s.running) for s in seen] == [(started.id, started.pid, True)]
    assert same.pid == started.pid
    assert (stopped.exit_code, stopped.reason) == (143, "Error")
    assert rt.Runtime(settings).pods() == ["pod-1"]


def test_a_new_runtime_waits_for_an_adopted_container(tmp_path: Path) -> None:
    settings = rt.Settings(root=str(tmp_path / "node"), node_gpus=())

    async def scenario() -> rt.ContainerState:
        started = await rt.Runtime(settings).start(
            pod(), python("c", "import time; time.sleep(0.3)"), 0
        )
        return await rt.Runtime(settings).wait(started.id)

    assert run(scenario()).reason == "Completed"


def test_a_container_whose_shim_was_killed_is_still_stoppable_and_reported(
    node: rt.Runtime,
) -> None:
    code = "import time; time.sleep(60)"

    async def scenario() -> tuple[rt.ContainerState, rt.ContainerState, rt.ContainerState]:
        started = await node.start(pod(), python("c", code), 0)
        record = json.loads(Path(node.log_path(started.id)).with_name(shim.STATE).read_text())
        os.kill(record["shimPid"], signal.SIGKILL)
        await until(lambda: gone(record["shimPid"]), "the shim to die")
        unobserved = node.state(started.id)
        stopped = await node.stop(started.id, grace=5)
        again = node.state(started.id)
        return unobserved, stopped, again  # type: ignore[return-value]

    unobserved, stopped, again = run(scenario())
    assert unobserved.running
    assert unobserved.pid
    assert (stopped.exit_code, stopped.reason) == (137, "ContainerStatusUnknown")
    assert "exit status is unknown" in stopped.message
    assert gone(unobserved.pid)
    assert again == stopped  # recorded, not guessed anew


def test_remove_stops_what_runs_and_deletes_the_pod_dir(node: rt.Runtime) -> None:
    async def scenario() -> rt.ContainerState:
        started = await node.start(pod(), python("c", "import time; time.sleep(60)"), 0)
        await node.remove("pod-1", grace=5)
        return started

    started = run(scenario())
    assert started.pid
    assert gone(started.pid)
    assert node.pods() == []
    assert node.containers() == []


@needs_namespace
def test_exec_runs_in_the_containers_env_cwd_and_mounts(node: rt.Runtime, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    sandbox = pod(volumes=(rt.Volume("cfg", "files", files=(rt.File("a", b"inside"),)),))
    spec = python(
        "c",
        "import time; time.sleep(60)",
        env=(("GREETING", "hello"),),
        working_dir=str(tmp_path / "wd"),
        mounts=(rt.Mount("cfg", str(mnt)),),
    )
    probe = f"import os, sys; print(os.environ['GREETING'], os.getcwd(), open('{mnt}/a').read())"
    probe += "; sys.exit(5)"

    async def scenario() -> tuple[bytes, int, bytes, bytes, list[str]]:
        await node.prepare(sandbox)
        started = await node.start(sandbox, spec, 0)
        proc = await node.exec("pod-1", "c", [PY, "-c", probe], stdin=False, tty=False)
        out, _ = await proc.communicate()
        echo = await node.exec("pod-1", "c", ["cat"], stdin=True, tty=False)
        echoed, _ = await echo.communicate(b"round trip")
        isatty = [PY, "-c", "import sys; print(sys.stdin.isatty(), sys.stdout.isatty())"]
        tty = await node.exec("pod-1", "c", isatty, stdin=False, tty=True)
        seen, _ = await asyncio.wait_for(tty.communicate(), DEADLINE)
        upper = [PY, "-c", "print(input().upper())"]
        typed = await node.exec("pod-1", "c", upper, stdin=True, tty=True)
        seen += (await asyncio.wait_for(typed.communicate(b"hello\n"), DEADLINE))[0]
        errors = []
        with pytest.raises(rt.StartError) as missing:
            await node.exec("pod-1", "c", ["kt-no-such-command"], stdin=False, tty=False)
        errors.append(missing.value.message)
        await node.stop(started.id, grace=1)
        with pytest.raises(rt.StartError) as stopped:
            await node.exec("pod-1", "c", ["true"], stdin=False, tty=False)
        errors.append(stopped.value.message)
        return out, proc.returncode or 0, echoed, seen, errors

    out, code, echoed, seen, errors = run(scenario())
    assert out.decode().split() == ["hello", str(tmp_path / "wd"), "inside"]
    assert code == 5
    assert echoed == b"round trip"
    assert b"True True" in seen
    assert b"HELLO" in seen
    assert 'command "kt-no-such-command" not found' in errors[0]
    assert errors[1] == 'container "c" is not running'


def test_gpus_are_assigned_exclusively_through_visible_devices(tmp_path: Path) -> None:
    node = rt.Runtime(rt.Settings(root=str(tmp_path / "node"), node_gpus=("0", "1")))
    code = (
        "import os, time; env = os.environ; "
        "print(env['CUDA_VISIBLE_DEVICES'] + '|' + env['NVIDIA_VISIBLE_DEVICES'], flush=True); "
        "time.sleep(60)"
    )

    async def with_logs() -> tuple[str, str, str, str]:
        holder = await node.start(pod(), python("gpu", code, gpus=("1",)), 0)
        none = await node.start(pod(), python("cpu", code), 0)
        await logged(node, holder.id, "|")
        await logged(node, none.id, "|")
        seen = text(node, holder.id).strip(), text(node, none.id).strip()
        assert (node.gpus(holder.id), node.gpus(none.id)) == (("1",), ())
        with pytest.raises(rt.StartError) as taken:
            await node.start(pod("pod-2"), python("gpu", code, gpus=("1",)), 0)
        with pytest.raises(rt.StartError) as absent:
            await node.start(pod("pod-2"), python("gpu", code, gpus=("7",)), 1)
        await node.remove("pod-1", grace=0)
        return *seen, taken.value.message, absent.value.message

    assigned, hidden, taken, absent = run(with_logs())
    assert assigned == "1|1"
    assert hidden == "|"
    assert taken.startswith("GPU 1 is in use by container 'gpu' of pod pod-1")
    assert absent == "GPU 7 is not a GPU of this node; accepted: 0, 1"


def test_without_isolation_a_pod_that_needs_it_is_refused_with_the_reason(tmp_path: Path) -> None:
    node = rt.Runtime(rt.Settings(root=str(tmp_path / "node"), isolation="none", node_gpus=()))
    shared = tmp_path / "shared"
    volumes = (rt.Volume("scratch", "empty"), rt.Volume("shared", "host", host_path=str(shared)))

    async def scenario() -> tuple[str, str, rt.ContainerState]:
        with pytest.raises(rt.StartError) as hosts:
            await node.prepare(pod(hosts="10.0.0.1 other\n"))
        await node.prepare(pod(volumes=volumes))
        with pytest.raises(rt.StartError) as moved:
            await node.start(
                pod(volumes=volumes),
                python("c", "pass", mounts=(rt.Mount("scratch", "/scratch"),)),
                0,
            )
        same_path = python("d", "pass", mounts=(rt.Mount("shared", str(shared)),))
        ok = await node.start(pod(volumes=volumes), same_path, 0)
        return hosts.value.message, moved.value.message, await node.wait(ok.id)

    hosts, moved, ok = run(scenario())
    assert node.isolation == "none"
    assert "needs its own /etc/hosts" in hosts
    assert "isolation none" in hosts
    assert "a volume can only be used at its own path" in moved
    assert ok.reason == "Completed"
