"""The MXJob env contract and a parameter-server round trip, in plain Python (no MXNet).

MXNet is retired (its last release requires numpy<2, which cannot be installed beside the
numpy 2 the other examples need), so this script does not run MXNet. It does what MXNet's
ps-lite would do with the same env, with the standard library only:

1. Check the contract: MX_CONFIG (cluster and task) and the DMLC_* variables the operator
   sets must agree: DMLC_ROLE is the task's type, DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT are
   the scheduler's entry, DMLC_NUM_SERVER and DMLC_NUM_WORKER count the cluster's entries,
   and a worker's DMLC_WORKER_ID is its index.
2. The handshake: the scheduler listens at DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT; every server
   (listening at its own MX_CONFIG address) and every worker registers there, and once all
   have, the scheduler sends each of them the table of servers, as ps-lite's ADD_NODE does.
3. Push and pull: worker ``w`` pushes ``(w + 1) * (k + 1)`` for each key ``k``, each key to
   server ``k % servers``; a server answers a pull once every worker pushed that key, with the
   sum. Every worker prints what it pulled and exits 1 unless it is exactly
   ``(k + 1) * W(W + 1)/2`` for W workers.
4. Shutdown: each worker tells the scheduler it is done; when all are, the scheduler stops the
   servers and exits last, so its success (the MXJob's success rule) means the whole round
   trip worked.

Messages are one JSON object per line over TCP, one request and one reply per connection.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import socketserver
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

WAIT = 60.0  # seconds to reach a peer, and for the others to arrive


@dataclass(frozen=True)
class Contract:
    role: str
    index: int
    root: tuple[str, int]
    servers: list[tuple[str, int]]
    workers: int
    me: tuple[str, int]


def contract() -> Contract:
    """MX_CONFIG and DMLC_*, checked against each other; exit 2 naming every mismatch."""
    env = os.environ
    config = json.loads(env["MX_CONFIG"])
    cluster, task = config["cluster"], config["task"]
    scheduler = cluster["scheduler"][0]
    problems = []
    expected = {
        "DMLC_ROLE": task["type"],
        "DMLC_PS_ROOT_URI": scheduler["url"],
        "DMLC_PS_ROOT_PORT": str(scheduler["port"]),
        "DMLC_NUM_SERVER": str(len(cluster.get("server", []))),
        "DMLC_NUM_WORKER": str(len(cluster.get("worker", []))),
        "DMLC_USE_KUBERNETES": "1",
    }
    if task["type"] == "worker":
        expected["DMLC_WORKER_ID"] = str(task["index"])
    for name, value in expected.items():
        if env.get(name) != value:
            problems.append(f"{name} is {env.get(name)!r}, MX_CONFIG says {value!r}")
    if problems:
        sys.exit(f"{task['type']}-{task['index']}: " + "; ".join(problems))
    entry = cluster[task["type"]][task["index"]]
    return Contract(
        role=task["type"],
        index=int(task["index"]),
        root=(env["DMLC_PS_ROOT_URI"], int(env["DMLC_PS_ROOT_PORT"])),
        servers=[(s["url"], int(s["port"])) for s in cluster.get("server", [])],
        workers=int(env["DMLC_NUM_WORKER"]),
        me=(entry["url"], int(entry["port"])),
    )


def request(address: tuple[str, int], message: dict[str, Any], wait: float = WAIT) -> Any:
    """Send one message and return the reply, retrying until the peer listens (a pod name
    may resolve, and its process listen, a moment after this one starts)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with socket.create_connection(address, timeout=wait) as connection:
                connection.sendall(json.dumps(message).encode() + b"\n")
                reply = connection.makefile("rb").readline()
            return json.loads(reply)
        except (OSError, json.JSONDecodeError) as error:
            if time.monotonic() > deadline:
                raise SystemExit(f"cannot reach {address[0]}:{address[1]}: {error}") from error
            time.sleep(0.2)


class Server(socketserver.ThreadingTCPServer):
    """A listener whose ``handle`` gets each request and returns the reply."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int) -> None:
        super().__init__(("", port), _Handler)

    def handle(self, message: dict[str, Any]) -> Any:
        raise NotImplementedError


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        message = json.loads(self.rfile.readline())
        reply = self.server.handle(message)  # type: ignore[attr-defined]
        self.wfile.write(json.dumps(reply).encode() + b"\n")


class Scheduler(Server):
    def __init__(self, job: Contract) -> None:
        super().__init__(job.root[1])
        self.job = job
        self.lock = threading.Condition()
        self.registered: dict[str, set[int]] = {"server": set(), "worker": set()}
        self.finished: set[int] = set()

    def handle(self, message: dict[str, Any]) -> Any:
        with self.lock:
            if message["op"] == "register":
                self.registered[message["role"]].add(message["index"])
                self.lock.notify_all()
                # Every node gets the table once all have registered, as ps-lite's ADD_NODE.
                self.lock.wait_for(self.everyone_registered, timeout=WAIT)
                return {"servers": self.job.servers, "workers": self.job.workers}
            if message["op"] == "done":
                self.finished.add(message["index"])
                self.lock.notify_all()
                return {"ok": True}
        return {"error": f"unknown op {message['op']}"}

    def everyone_registered(self) -> bool:
        return (
            len(self.registered["server"]) == len(self.job.servers)
            and len(self.registered["worker"]) == self.job.workers
        )

    def run(self) -> None:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        print(f"scheduler: listening on port {self.job.root[1]}", flush=True)
        with self.lock:
            if not self.lock.wait_for(self.everyone_registered, timeout=WAIT):
                sys.exit(f"scheduler: only {self.registered} registered")
            print(
                f"scheduler: {len(self.job.servers)} servers and {self.job.workers} workers "
                "registered",
                flush=True,
            )
            if not self.lock.wait_for(lambda: len(self.finished) == self.job.workers, WAIT * 2):
                sys.exit(f"scheduler: only workers {sorted(self.finished)} finished")
        for address in self.job.servers:
            request(address, {"op": "stop"})
        print("scheduler: every worker finished; servers stopped", flush=True)
        self.shutdown()


class KeyServer(Server):
    def __init__(self, job: Contract) -> None:
        super().__init__(job.me[1])
        self.job = job
        self.lock = threading.Condition()
        self.sums: dict[int, float] = {}
        self.pushes: dict[int, set[int]] = {}
        self.stopped = threading.Event()

    def handle(self, message: dict[str, Any]) -> Any:
        key = message.get("key")
        with self.lock:
            if message["op"] == "push":
                if message["worker"] not in self.pushes.setdefault(key, set()):
                    self.pushes[key].add(message["worker"])
                    self.sums[key] = self.sums.get(key, 0.0) + message["value"]
                    self.lock.notify_all()
                return {"ok": True}
            if message["op"] == "pull":
                complete = self.lock.wait_for(
                    lambda: len(self.pushes.get(key, ())) == self.job.workers, timeout=WAIT
                )
                return {"value": self.sums[key]} if complete else {"error": "incomplete"}
        if message["op"] == "stop":
            self.stopped.set()
            return {"ok": True}
        return {"error": f"unknown op {message['op']}"}

    def run(self) -> None:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        name = f"server-{self.job.index}"
        table = request(
            self.job.root, {"op": "register", "role": "server", "index": self.job.index}
        )
        print(f"{name}: registered; {len(table['servers'])} servers in the table", flush=True)
        if not self.stopped.wait(WAIT * 3):
            sys.exit(f"{name}: the scheduler never stopped this server")
        with self.lock:
            print(f"{name}: stopped; held keys {sorted(self.sums)}", flush=True)
        self.shutdown()


def work(job: Contract, keys: int) -> None:
    name = f"worker-{job.index}"
    table = request(job.root, {"op": "register", "role": "worker", "index": job.index})
    servers = [tuple(s) for s in table["servers"]]
    print(f"{name}: registered; servers {[f'{h}:{p}' for h, p in servers]}", flush=True)
    for key in range(keys):
        value = float((job.index + 1) * (key + 1))
        push = {"op": "push", "key": key, "value": value, "worker": job.index}
        request(servers[key % len(servers)], push)
    pulled = []
    for key in range(keys):
        reply = request(servers[key % len(servers)], {"op": "pull", "key": key}, wait=WAIT * 2)
        if "value" not in reply:
            sys.exit(f"{name}: pull of key {key}: {reply}")
        pulled.append(reply["value"])
    expected = [float((k + 1) * job.workers * (job.workers + 1) // 2) for k in range(keys)]
    print(f"{name}: pulled {pulled} (expected {expected})", flush=True)
    print(f"{name}: sum {sum(pulled):g} (expected {sum(expected):g})", flush=True)
    request(job.root, {"op": "done", "index": job.index})
    if pulled != expected:
        sys.exit(f"{name}: pulled {pulled}, expected {expected}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=4)
    args = parser.parse_args()
    job = contract()
    print(
        f"{job.role}-{job.index}: MX_CONFIG and DMLC_* agree: root {job.root[0]}:{job.root[1]}, "
        f"{len(job.servers)} servers, {job.workers} workers",
        flush=True,
    )
    if job.role == "scheduler":
        Scheduler(job).run()
    elif job.role == "server":
        KeyServer(job).run()
    elif job.role == "worker":
        work(job, args.keys)
    else:
        sys.exit(f"{job.role}-{job.index}: this example has no {job.role} role")


if __name__ == "__main__":
    main()
