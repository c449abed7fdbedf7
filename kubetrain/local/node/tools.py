"""Small programs a container image would have had and local pods still need, put on their PATH.

- ``nslookup``: upstream's PyTorch init container waits for the master with
  ``nslookup <service>`` (busybox). On the local node names resolve through the pod's own
  ``/etc/hosts``, which a real ``nslookup`` would bypass by asking a DNS server, and the host
  may have none installed; the ``nslookup`` here answers from the resolver the pod's processes
  use, in busybox's format.
- ``kubectl-delivery``: the MPIJob launcher's init container names the ``kubectl-delivery``
  image and no command; the image's entrypoint is ``cp /bin/kubectl /opt/kube/kubectl``, so
  that the launcher's ``kubexec.sh`` finds kubectl in the shared emptyDir. The program here
  copies this node's ``kubectl`` (the first on the pod's PATH) into ``$TARGET_DIR`` (default
  ``/opt/kube``), and :data:`ENTRYPOINTS` tells the pod spec resolver to run it for that image,
  so the launcher's pod spec stays upstream's. A node without kubectl fails the init container
  with a message that says so.
- upstream's ``dataset-initializer`` and ``model-initializer`` images, named with no command by
  the TorchTune runtimes: :data:`ENTRYPOINTS` runs kubetrain's initializer program
  (``python3 -m kubetrain.initializers dataset|model``) for them, which keeps their environment
  contract (``STORAGE_URI`` into ``/workspace/dataset`` or ``/workspace/model``).
- ``kubetrain-pod-ssh``: ``ssh`` to a pod of this node, for Open MPI's launcher
  (:mod:`kubetrain.local.node.podssh`, which says why and how); not named ``ssh``, so it shadows
  nothing: the node names it in every container's ``OMPI_MCA_plm_rsh_agent``.

Owns: writing the tools into ``<root>/bin`` at start, and which images they stand in for.
Must not: shadow anything but the tools listed here (the directory comes after the Python
environment's bin on PATH).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Final

from kubetrain.local.node import podssh

BIN: Final = "bin"
KUBECTL_DELIVERY: Final = "kubectl-delivery"
# image name (last path component, no tag) → the program that does what its entrypoint does
ENTRYPOINTS: Final[Mapping[str, tuple[str, ...]]] = {
    KUBECTL_DELIVERY: (KUBECTL_DELIVERY,),
    # upstream's initializer images (the torchtune runtimes name them with no command): their
    # entrypoint fetches STORAGE_URI into /workspace, as kubetrain's initializer program does
    "dataset-initializer": ("python3", "-m", "kubetrain.initializers", "dataset"),
    "model-initializer": ("python3", "-m", "kubetrain.initializers", "model"),
}

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


DELIVERY: Final = '''#!{python} -I
"""kubectl-delivery: copy this node's kubectl into $TARGET_DIR, as the image's entrypoint
(cp /bin/kubectl /opt/kube/kubectl) does, for the MPI launcher's kubexec.sh."""
import os
import shutil
import sys

target = os.environ.get("TARGET_DIR") or "/opt/kube"
source = shutil.which("kubectl")
if source is None:
    print(
        "kubectl-delivery: no kubectl on this node (PATH=" + os.environ.get("PATH", "") + "); "
        "the MPI launcher starts its ranks with kubectl exec: install kubectl on the host",
        file=sys.stderr,
    )
    sys.exit(1)
os.makedirs(target, exist_ok=True)
destination = os.path.join(target, "kubectl")
shutil.copyfile(source, destination + ".tmp")
os.chmod(destination + ".tmp", 0o755)
os.replace(destination + ".tmp", destination)
print(f"copied {{source}} to {{destination}}")
'''

POD_SSH: Final = '''#!{python} -I
"""ssh [options] HOST COMMAND...: COMMAND in the pod of this node that HOST names."""
import sys

from kubetrain.local.node import podssh

sys.exit(podssh.main({root!r}, {python!r}, sys.argv[1:]))
'''

PROGRAMS: Final[Mapping[str, str]] = {
    "nslookup": NSLOOKUP,
    KUBECTL_DELIVERY: DELIVERY,
    podssh.PROGRAM: POD_SSH,
}


def program(root: str, name: str) -> str:
    """Where ``install(root)`` puts the tool ``name``."""
    return os.path.join(root, BIN, name)


def install(root: str) -> str:
    """Write the tools under ``root``; returns the directory to put on PATH."""
    directory = os.path.join(root, BIN)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    for name, template in PROGRAMS.items():
        path = os.path.join(directory, name)
        temporary = f"{path}.tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(template.format(python=sys.executable, root=os.path.abspath(root)))
        os.chmod(temporary, 0o755)
        os.replace(temporary, path)
    return directory
