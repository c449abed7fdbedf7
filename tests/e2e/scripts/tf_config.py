"""What a TensorFlow replica needs from its TF_CONFIG, without TensorFlow: every address in
the cluster spec resolves, this replica can listen on the port it was given, and it reaches
every peer at the peer's address.

A name may resolve a moment after the replica starts (on a cluster, a headless Service's
name resolves once its pod has an address; TensorFlow's channels retry until then), so each
lookup is retried until a deadline. Each replica listens on its own entry's port, connects to
every other entry (retrying until the peer listens) and sends its name; it exits 0 once it
reached every peer and every peer reached it, so no replica stops listening before the
others are through. Exit code 3: a peer could not be reached in time; 4: an address does not
resolve.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time

WAIT = 60.0  # seconds to reach the peers


def split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def main() -> None:
    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    addresses = [a for role in sorted(config["cluster"]) for a in config["cluster"][role]]
    me = config["cluster"][task["type"]][task["index"]]
    name = f"{task['type']}-{task['index']}"
    deadline = time.monotonic() + WAIT
    for address in addresses:
        host, port = split(address)
        while True:
            try:
                found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                break
            except socket.gaierror as exc:
                if time.monotonic() > deadline:
                    print(f"{name}: {address} does not resolve: {exc}", flush=True)
                    sys.exit(4)
                time.sleep(0.1)
        print(f"{name}: {address} resolves to {found[0][4][0]}", flush=True)

    peers = [a for a in addresses if a != me]
    listener = socket.create_server(("", split(me)[1]), reuse_port=False)
    heard: list[str] = []

    def accept() -> None:
        while len(heard) < len(peers):
            connection, _ = listener.accept()
            with connection:
                heard.append(connection.recv(64).decode())

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    for peer in peers:
        while True:
            try:
                with socket.create_connection(split(peer), timeout=5) as connection:
                    connection.sendall(name.encode())
                break
            except OSError:
                if time.monotonic() > deadline:
                    print(f"{name}: cannot reach {peer}", flush=True)
                    sys.exit(3)
                time.sleep(0.1)
        print(f"{name}: reached {peer}", flush=True)
    thread.join(max(0.0, deadline - time.monotonic()))
    if len(heard) < len(peers):
        print(f"{name}: heard from {sorted(heard)} only", flush=True)
        sys.exit(3)
    print(f"{name}: listened on {me}, heard from {sorted(heard)}", flush=True)


if __name__ == "__main__":
    main()
