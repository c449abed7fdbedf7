"""The local node's GPUs, end to end, on a machine that has one: a prepared check, not a test.

CI has no GPU, so this is run by hand (or by a session lent a GPU machine) as::

    python3 tools/gpu_check.py            # on the GPU machine
    .venv/bin/python tools/gpu_check.py --rehearse   # anywhere: CPU, one pretend GPU

It starts the local control plane (``python -m kubetrain up``) in a temporary
``KUBETRAIN_HOME`` and checks, in order:

1. ``node-capacity``: the Node reports ``nvidia.com/gpu`` capacity and allocatable equal to the
   GPUs ``nvidia-smi -L`` lists;
2. ``train``: a PyTorchJob whose Master asks ``nvidia.com/gpu: 1`` (limits) initialises
   ``torch.distributed`` with NCCL and trains a few steps on CUDA; it Succeeds and its log
   shows ``CUDA_VISIBLE_DEVICES`` set to the assigned device and the device's name;
3. ``queued``: a second such job, submitted while the first holds the GPU, stays Pending with
   ``PodScheduled=False`` reason ``Unschedulable`` naming ``nvidia.com/gpu`` until the first
   ends, then runs to Succeeded (the first job waits for a file this script writes once it has
   seen the second one unschedulable: a condition, not a guess at timings);
4. ``container``: with a Docker or Podman engine and an image holding PyTorch with CUDA
   (``--image``), the same job in a container of that image gets the GPU there; without
   either, one SKIP line says which is missing.

It prints PASS/FAIL/SKIP per check with its time, writes the same summary to
``$OUT/gpu_check.txt`` when ``OUT`` is set, exits 1 when any check failed, and stops the
control plane however it ends.

``--rehearse`` proves everything but CUDA on a machine without a GPU: a stand-in
``nvidia-smi`` on ``PATH`` lists one GPU (the node's own detection reads it, as it reads the
real one), and the job trains on the CPU with gloo.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the kubetrain of this tree, installed or not

from kubetrain import _aio, kube  # noqa: E402
from kubetrain.frameworks.hostimage import HOST_IMAGE  # noqa: E402
from kubetrain.kube import resource  # noqa: E402
from kubetrain.local import statedir  # noqa: E402
from kubetrain.local.node import machine  # noqa: E402

GPU = "nvidia.com/gpu"
PYTORCHJOBS = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")
NODES = kube.Resource("", "v1", "nodes", namespaced=False)
SERVICE_ACCOUNTS = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
NAMESPACE = "default"
JOB_LABEL = "training.kubeflow.org/job-name"
UP_TIMEOUT = 90.0  # seconds for `kubetrain up` to report ready
JOB_TIMEOUT = 150.0  # seconds for one job to reach a final condition
HOLD_TIMEOUT = 120  # seconds the first job waits for the go-ahead before it ends anyway
STEPS = 20

FAKE_NVIDIA_SMI = """#!/bin/sh
# a stand-in for a CPU rehearsal: one GPU, listed as `nvidia-smi -L` lists it
[ "$1" = "-L" ] && echo "GPU 0: Rehearsal GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)"
"""

# The training program each job runs: world size 1 is enough to prove the process group
# comes up with NCCL on the device the node assigned.
TRAIN = r"""
import argparse, os, sys, time
import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--hold", default="")
args = parser.parse_args()

print("CUDA_VISIBLE_DEVICES=" + os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"), flush=True)
print("LD_LIBRARY_PATH=" + os.environ.get("LD_LIBRARY_PATH", "<unset>"), flush=True)
if args.device == "cuda":
    if not torch.cuda.is_available():
        sys.exit(f"torch {torch.__version__}: torch.cuda.is_available() is False")
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    print("device_name=" + torch.cuda.get_device_name(device), flush=True)
    backend = "nccl"
else:
    device = torch.device("cpu")
    print("device_name=cpu (rehearsal)", flush=True)
    backend = "gloo"
dist.init_process_group(backend)
print(f"backend={dist.get_backend()} rank={dist.get_rank()} world_size={dist.get_world_size()}",
      flush=True)
torch.manual_seed(0)
model = torch.nn.Linear(64, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(256, 64, device=device)
y = x.sum(dim=1, keepdim=True)
for step in range(args.steps):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    optimizer.step()
    if step % 5 == 0 or step == args.steps - 1:
        print(f"step={step} loss={loss.item():.4f}", flush=True)
dist.barrier()
dist.destroy_process_group()
if args.hold:
    deadline = time.monotonic() + HOLD
    while not os.path.exists(args.hold) and time.monotonic() < deadline:
        time.sleep(0.1)
    print("hold released" if os.path.exists(args.hold) else "hold timed out", flush=True)
print("done", flush=True)
""".replace("HOLD", str(HOLD_TIMEOUT))


class CheckFailed(Exception):
    pass


@dataclass
class Check:
    name: str
    status: str = "FAIL"  # PASS, FAIL or SKIP
    seconds: float = 0.0
    detail: str = ""


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        lines = [*self.notes, ""]
        for c in self.checks:
            lines.append(f"{c.status:4} {c.name:14} {c.seconds:6.1f}s  {c.detail}")
        failed = [c.name for c in self.checks if c.status == "FAIL"]
        lines.append("")
        lines.append(f"RESULT: {'FAIL (' + ', '.join(failed) + ')' if failed else 'PASS'}")
        return "\n".join(lines) + "\n"

    @property
    def ok(self) -> bool:
        return all(c.status != "FAIL" for c in self.checks)


async def run_check(report: Report, name: str, body: Callable[[], Any]) -> Any:
    """Run one check, recording PASS with what ``body`` returns (a detail line), or FAIL with
    why; a SKIP is a :class:`Skip` raised by the body."""
    check = Check(name)
    report.checks.append(check)
    started = time.monotonic()
    print(f"--- {name}", flush=True)
    try:
        check.detail = str(await body())
        check.status = "PASS"
    except Skip as exc:
        check.status, check.detail = "SKIP", str(exc)
    except Exception as exc:
        check.detail = f"{type(exc).__name__}: {exc}"
    check.seconds = time.monotonic() - started
    print(f"{check.status} {name}: {check.detail}", flush=True)
    return check.status == "PASS"


class Skip(Exception):
    pass


# --- the control plane ------------------------------------------------------------------------


@dataclass
class Plane:
    home: str
    env: dict[str, str]
    kubeconfig: str = ""


def plane_env(home: str, rehearse: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = home
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    if rehearse:
        bin_dir = Path(home) / "rehearsal-bin"
        bin_dir.mkdir()
        smi = bin_dir / "nvidia-smi"
        smi.write_text(FAKE_NVIDIA_SMI)
        smi.chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


@contextlib.asynccontextmanager
async def control_plane(
    home: str, env: dict[str, str], container_runtime: str = "none"
) -> AsyncIterator[Plane]:
    """``kubetrain up`` in ``home``; ``kubetrain down`` (and a kill of what is left) after."""
    plane = Plane(home, env)
    command = [sys.executable, "-m", "kubetrain", "up", "--home", home, "--port", "0"]
    command += ["--timeout", str(UP_TIMEOUT), "--container-runtime", container_runtime]
    try:
        up = await asyncio.to_thread(
            subprocess.run, command, env=env, capture_output=True, text=True,
            timeout=UP_TIMEOUT + 30, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if up.returncode != 0:
            raise CheckFailed(f"kubetrain up exited {up.returncode}: {up.stderr.strip()[-2000:]}")
        plane.kubeconfig = up.stdout.strip().splitlines()[-1]
        yield plane
    finally:
        await asyncio.to_thread(stop_plane, home, env)


def stop_plane(home: str, env: dict[str, str]) -> None:
    down = [sys.executable, "-m", "kubetrain", "down", "--home", home]
    try:
        subprocess.run(down, env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        print("kubetrain down did not finish within 60s", flush=True)
    pid = statedir.running_pid(statedir.Paths(home))  # still holding its lock: still ours
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        print(f"killed the control plane (pid {pid}), which outlived kubetrain down", flush=True)


def write(path: str, text: str) -> None:
    """Write a small file (its directory made as needed): the job's program, the go-ahead."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)


# --- the jobs ---------------------------------------------------------------------------------


def pytorchjob(
    name: str, script: str, device: str, hold: str = "", image: str = HOST_IMAGE
) -> dict[str, Any]:
    command = ["python3", script, "--device", device, "--steps", str(STEPS)]
    if hold:
        command += ["--hold", hold]
    container: dict[str, Any] = {
        "name": "pytorch",
        "image": image,
        "command": command,
        "resources": {"limits": {GPU: "1"}},
    }
    if os.environ.get("LD_LIBRARY_PATH") and image == HOST_IMAGE:
        # where the driver's libcuda lives off the loader's default path: an image's ENV would
        # carry this; the node does not pass it on by itself (see the report's notes)
        container["env"] = [{"name": "LD_LIBRARY_PATH", "value": os.environ["LD_LIBRARY_PATH"]}]
    pod_spec: dict[str, Any] = {"containers": [container]}
    if image != HOST_IMAGE:  # in a container: the script's directory, at the same path
        directory = str(Path(script).parent)
        container["volumeMounts"] = [{"name": "check", "mountPath": directory}]
        pod_spec["volumes"] = [{"name": "check", "hostPath": {"path": directory}}]
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None"},
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": pod_spec},
                }
            },
        },
    }


def job_state(job: Mapping[str, Any]) -> str | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return None


async def until(what: str, timeout: float, probe: Callable[[], Any]) -> Any:
    """Poll ``probe`` every 0.2 s until it returns something truthy; fail naming ``what``."""
    try:
        async with _aio.timeout(timeout):
            while True:
                with contextlib.suppress(kube.NotFound, kube.Unavailable):
                    value = await probe()
                    if value:
                        return value
                await asyncio.sleep(0.2)
    except TimeoutError:
        raise CheckFailed(f"{what}: not within {timeout:.0f}s") from None


async def master_pod(client: kube.Client, job: str) -> dict[str, Any] | None:
    pods = await client.list(
        resource.PODS, namespace=NAMESPACE, label_selector=f"{JOB_LABEL}={job}"
    )
    items = pods.get("items") or []
    return items[0] if items else None


async def pod_log(client: kube.Client, pod: Mapping[str, Any]) -> str:
    path = resource.PODS.path(NAMESPACE, pod["metadata"]["name"], "log")
    chunks = []
    async with client.stream(path, query={"container": "pytorch"}) as body:
        async for raw in body:
            chunks.append(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
    return "\n".join(chunks)


async def describe(client: kube.Client, name: str) -> str:
    """Where job ``name`` stands, for a failure's message: its conditions and its Master pod's
    phase, conditions and container states."""
    with contextlib.suppress(kube.ApiError, kube.Unavailable):
        job = await client.get(PYTORCHJOBS, name, namespace=NAMESPACE)
        conditions = [
            f"{c.get('type')}={c.get('status')} ({c.get('reason')}: {c.get('message')})"
            for c in (job.get("status") or {}).get("conditions") or []
        ]
        pod = await master_pod(client, name)
        status = (pod or {}).get("status") or {}
        node = ((pod or {}).get("spec") or {}).get("nodeName")
        return (
            f"job conditions {conditions}; Master pod on node {node!r}, "
            f"phase {status.get('phase')!r}, conditions {status.get('conditions')}, "
            f"containers {status.get('containerStatuses')}"
        )
    return "(its state could not be read)"


async def finished(client: kube.Client, name: str) -> tuple[str, dict[str, Any], str]:
    """Wait for job ``name`` to end; its final condition, its Master pod and that pod's log."""

    async def state() -> str | None:
        return job_state(await client.get(PYTORCHJOBS, name, namespace=NAMESPACE))

    try:
        final = await until(f"PyTorchJob {name} Succeeded or Failed", JOB_TIMEOUT, state)
    except CheckFailed as exc:
        raise CheckFailed(f"{exc}; {await describe(client, name)}") from None
    pod = await until(f"the Master pod of {name}", 10, lambda: master_pod(client, name))
    return final, pod, await pod_log(client, pod)


def check_log(name: str, log: str, rehearse: bool) -> tuple[str, str]:
    """The assigned device and the device's name, from a job's log; fail if they are not
    what the node and CUDA should have given."""
    keys = ("CUDA_VISIBLE_DEVICES=", "device_name=")
    values = dict(line.split("=", 1) for line in log.splitlines() if line.startswith(keys))
    visible = values.get("CUDA_VISIBLE_DEVICES", "<missing>")
    if visible in ("", "<unset>", "<missing>") or "," in visible:
        raise CheckFailed(f"{name}: CUDA_VISIBLE_DEVICES is {visible!r}, not one device\n{log}")
    device = values.get("device_name", "<missing>")
    backend = "gloo" if rehearse else "nccl"
    if f"backend={backend} rank=0 world_size=1" not in log:
        raise CheckFailed(f"{name}: the log shows no {backend} process group\n{log}")
    if "loss=" not in log or "done" not in log:
        raise CheckFailed(f"{name}: the log shows no finished training\n{log}")
    if not rehearse and (device == "<missing>" or device.startswith("cpu")):
        raise CheckFailed(f"{name}: the log names no CUDA device\n{log}")
    return visible, device


def losses(log: str) -> str:
    return " ".join(line.split("loss=")[1] for line in log.splitlines() if "loss=" in line)


# --- the checks -------------------------------------------------------------------------------


async def wait_ready(client: kube.Client) -> dict[str, Any]:
    async def node() -> dict[str, Any] | None:
        for item in (await client.list(NODES)).get("items") or []:
            conditions = (item.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                return item
        return None

    ready = await until("a Ready node", 60, node)
    await until(
        f"the service account {NAMESPACE}/default",
        30,
        lambda: client.get(SERVICE_ACCOUNTS, "default", namespace=NAMESPACE),
    )
    return ready


async def node_capacity(client: kube.Client, expected: int) -> str:
    node = await wait_ready(client)
    status = node.get("status") or {}
    capacity = (status.get("capacity") or {}).get(GPU)
    allocatable = (status.get("allocatable") or {}).get(GPU)
    name = node["metadata"]["name"]
    if expected == 0:
        raise CheckFailed("nvidia-smi -L lists no GPU on this machine")
    if capacity != str(expected) or allocatable != str(expected):
        raise CheckFailed(
            f"Node {name}: status.capacity[{GPU}]={capacity!r}, allocatable={allocatable!r}; "
            f"nvidia-smi -L lists {expected}"
        )
    return f"Node {name}: {GPU} capacity {capacity}, allocatable {allocatable} = nvidia-smi -L"


async def train_and_queue(client: kube.Client, report: Report, home: str, rehearse: bool) -> None:
    """Checks 2 and 3 together: the second job is submitted while the first holds the GPU."""
    script = str(Path(home) / "check" / "train.py")
    hold = str(Path(home) / "check" / "go-ahead")
    device = "cpu" if rehearse else "cuda"
    first, second = "gpu-train", "gpu-queued"
    await client.create(PYTORCHJOBS, pytorchjob(first, script, device, hold=hold))

    async def running_first() -> bool:
        pod = await master_pod(client, first)
        phase = ((pod or {}).get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            raise CheckFailed(f"{first} ended ({phase}) before a second job could queue behind it")
        return phase == "Running"

    queued_detail: dict[str, str] = {}

    async def queue() -> str:
        await until(f"the Master pod of {first} Running", 60, running_first)
        started = time.monotonic()
        await client.create(PYTORCHJOBS, pytorchjob(second, script, device))

        async def unschedulable() -> dict[str, Any] | None:
            pod = await master_pod(client, second)
            for c in ((pod or {}).get("status") or {}).get("conditions") or []:
                if (
                    c.get("type") == "PodScheduled"
                    and c.get("status") == "False"
                    and c.get("reason") == "Unschedulable"
                ):
                    return {"pod": pod, "condition": c}
            return None

        seen = await until(f"{second}'s Master Unschedulable", 30, unschedulable)
        message = seen["condition"].get("message", "")
        if GPU not in message:
            raise CheckFailed(f"{second}: the Unschedulable message names no {GPU}: {message!r}")
        if (seen["pod"].get("status") or {}).get("phase") != "Pending":
            raise CheckFailed(f"{second}: phase {seen['pod']['status'].get('phase')}, not Pending")
        first_pod = await master_pod(client, first)
        if (first_pod or {}).get("status", {}).get("phase") != "Running":
            raise CheckFailed(f"{first} was no longer running when {second} was seen waiting")
        queued_detail["message"] = message
        queued_detail["after"] = f"{time.monotonic() - started:.1f}s"
        write(hold, "go\n")  # the first job may end now
        return f"{second} Pending, PodScheduled=False Unschedulable: {message!r}"

    async def train() -> str:
        state, _, log = await finished(client, first)
        print(f"{first} log:\n{log}", flush=True)
        if state != "Succeeded":
            raise CheckFailed(f"PyTorchJob {first} {state}:\n{log}")
        visible, name = check_log(first, log, rehearse)
        return f"Succeeded; CUDA_VISIBLE_DEVICES={visible}, device {name}; loss {losses(log)}"

    write(script, TRAIN)
    queued_ok = await run_check(report, "queued-wait", queue)
    if not queued_ok:
        write(hold, "go\n")  # let the first one end anyway
    await run_check(report, "train", train)

    async def then_runs() -> str:
        if not queued_ok:
            raise Skip("the wait was not seen")
        state, _, log = await finished(client, second)
        if state != "Succeeded":
            raise CheckFailed(f"PyTorchJob {second} {state}:\n{log}")
        visible, _ = check_log(second, log, rehearse)
        return (
            f"Pending/Unschedulable {queued_detail['after']} after submission "
            f"({queued_detail['message']!r}), then Succeeded on CUDA_VISIBLE_DEVICES={visible}"
        )

    await run_check(report, "queued-runs", then_runs)


def find_engine() -> tuple[str, str]:
    """(kind, address) of a container engine, or raise Skip saying why there is none."""
    try:
        from kubetrain.local.node import engine
    except ImportError as exc:
        raise Skip(f"the containers extra is not installed ({exc})") from None
    for kind in ("docker", "podman"):
        address = engine.find(kind)
        if address:
            return kind, address
    raise Skip("no container engine: no DOCKER_HOST/CONTAINER_HOST and no docker or podman socket")


async def container(args: argparse.Namespace, home_parent: str) -> str:
    kind, address = find_engine()
    if not args.image:
        raise Skip(
            f"{kind} at {address}, but no image with PyTorch and CUDA given (--image); "
            "none can be pulled here"
        )
    with tempfile.TemporaryDirectory(prefix="gpu-check-ctr-", dir=home_parent) as home:
        env = plane_env(home, args.rehearse)
        async with control_plane(home, env, kind) as plane:
            cluster = await kube.from_kubeconfig(plane.kubeconfig)
            async with kube.Client(cluster) as client:
                await wait_ready(client)
                script = str(Path(home) / "check" / "train.py")
                write(script, TRAIN)
                device = "cpu" if args.rehearse else "cuda"
                name = "gpu-container"
                job = pytorchjob(name, script, device, image=args.image)
                await client.create(PYTORCHJOBS, job)
                state, _, log = await finished(client, name)
                print(f"{name} log:\n{log}", flush=True)
                if state != "Succeeded":
                    raise CheckFailed(f"PyTorchJob {name} {state}:\n{log}")
                visible, device_name = check_log(name, log, args.rehearse)
                return f"{kind}, image {args.image}: CUDA_VISIBLE_DEVICES={visible}, {device_name}"


async def main(args: argparse.Namespace) -> Report:
    report = Report()
    mode = "rehearsal (CPU, gloo, a stand-in nvidia-smi listing 1 GPU)" if args.rehearse else "GPU"
    report.notes.append(f"kubetrain GPU check, {mode}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    report.notes.append(f"python {sys.version.split()[0]} at {sys.executable}")
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as parent:
        home = os.path.join(parent, "home")
        os.mkdir(home)
        env = plane_env(home, args.rehearse)
        saved_path = os.environ["PATH"]
        os.environ["PATH"] = env["PATH"]  # count_gpus sees what the node sees
        try:
            expected = await machine.count_gpus()
        finally:
            os.environ["PATH"] = saved_path
        report.notes.append(f"nvidia-smi -L lists {expected} GPU(s)")
        if os.environ.get("LD_LIBRARY_PATH"):
            report.notes.append(
                "LD_LIBRARY_PATH given to the jobs in their env: " + os.environ["LD_LIBRARY_PATH"]
            )
        if not args.rehearse:
            with contextlib.suppress(Exception):
                import torch

                report.notes.append(
                    f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
                    f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}"
                )
        started = time.monotonic()
        try:
            async with control_plane(home, env) as plane:
                report.notes.append(f"kubetrain up: ready in {time.monotonic() - started:.1f}s")
                cluster = await kube.from_kubeconfig(plane.kubeconfig)
                async with kube.Client(cluster) as client:
                    if await run_check(
                        report, "node-capacity", lambda: node_capacity(client, expected)
                    ):
                        await train_and_queue(client, report, home, args.rehearse)
        except Exception as exc:  # up failed, or a request outside a check: still report
            report.checks.append(
                Check(
                    "control-plane",
                    "FAIL",
                    time.monotonic() - started,
                    f"{type(exc).__name__}: {exc}",
                )
            )
        await run_check(report, "container", lambda: container(args, parent))
    return report


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rehearse", action="store_true",
        help="no GPU: a stand-in nvidia-smi lists one, the job trains on the CPU with gloo",
    )  # fmt: skip
    parser.add_argument(
        "--image", default=os.environ.get("GPU_CHECK_IMAGE", ""),
        help="an image holding PyTorch with CUDA, for the container check (default: "
        "$GPU_CHECK_IMAGE; without one the check is skipped)",
    )  # fmt: skip
    return parser.parse_args(argv)


def entry(argv: list[str] | None = None) -> int:
    args = parse(argv)
    started = time.monotonic()
    report = asyncio.run(main(args))
    report.notes.append(f"total {time.monotonic() - started:.1f}s")
    text = report.text()
    print("\n" + text, end="", flush=True)
    out = os.environ.get("OUT")
    if out:
        Path(out, "gpu_check.txt").write_text(text)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(entry())
