"""Small programs a container image would have had and local pods still need, put on their PATH.

Upstream's PyTorch init container waits for the master with ``nslookup <service>`` (busybox).
On the local node names resolve through the pod's own ``/etc/hosts``, which a real
``nslookup`` would bypass by asking a DNS server, and the host may have none installed; the
``nslookup`` here answers from the resolver the pod's processes use, in busybox's format.

Owns: writing the tools into ``<root>/bin`` at start. Must not: shadow anything but the tools
listed here (the directory comes after the Python environment's bin on PATH).
"""

from __future__ import annotations

import os
import sys
from typing import Final

BIN: Final = "bin"

NSLOOKUP: Final = '''#!{python} -I
"""nslookup NAME: the addresses of NAME as this pod resolves it (its /etc/hosts first)."""
import socket
import sys

names = [a for a in sys.argv[1:] if not a.startswith("-")]
if not names:
    print("usage: nslookup NAME", file=sys.stderr)
    sys.exit(1)
name = names[0]
print("Server:\\t\\t/etc/hosts\\n")
try:
    infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
except OSError:
    print(f"** server can't find {{name}}: NXDOMAIN", file=sys.stderr)
    sys.exit(1)
for address in dict.fromkeys(info[4][0] for info in infos):
    print(f"Name:\\t{{name}}\\nAddress: {{address}}\\n")
'''


def install(root: str) -> str:
    """Write the tools under ``root``; returns the directory to put on PATH."""
    directory = os.path.join(root, BIN)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    path = os.path.join(directory, "nslookup")
    text = NSLOOKUP.format(python=sys.executable)
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(temporary, 0o755)
    os.replace(temporary, path)
    return directory
