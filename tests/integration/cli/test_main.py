"""The entry point imports only the command module of the verb it runs, and each verb only
what it uses: `kubetrain --version` nothing, `list` and `get` no control plane, no SDK. Seen
from a fresh Python child, whose imports no other test has made; the entry point's other
behaviour is tested in tests/unit/cli/test_main.py."""

from __future__ import annotations

import json
import subprocess
import sys

import kubetrain

# What each step of a command may not import: what it has no use for and costs it time.
HEAVY_FOR_VERSION = ("kubetrain.kube", "kubetrain.api", "kubernetes", "aiohttp", "pydantic")


HEAVY_FOR_LIST_AND_GET = (
    "kubetrain.sdk",  # `from kubetrain import kube` once loaded the SDK, and every layer
    "kubetrain.operator",
    "kubetrain.local.daemon",  # a running control plane is found through local.statedir
    "kubetrain.local.apiserver",
    "kubetrain.local.node",
    "kubetrain.local.scheduler.scheduler",  # `get` explains a wait with its pure modules
    "kubetrain.cli.controlplane",
    "kubetrain.api",  # every job model, built by pydantic: cli.jobkinds writes out the kinds
    "kubetrain.frameworks",
    "cryptography",
    "kubernetes.client",  # the library's synchronous half: kubetrain uses kubernetes.aio
    "kubernetes.aio.dynamic",
    "requests",
)


PROBE = """
import json, sys
import kubetrain
from kubetrain.cli import main
seen = {}
main.main(["--version"])
seen["version"] = sorted(sys.modules)
main.build_parser("list")
seen["list"] = sorted(sys.modules)
main.build_parser("get")
seen["get"] = sorted(sys.modules)
import kubernetes  # the library stays whole for whoever uses the rest of it
from kubernetes import client
seen["library"] = [kubernetes.__version__, client.V1Pod.__name__]
print(json.dumps(seen))
"""


def test_version_list_and_get_import_only_what_they_use() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == f"kubetrain {kubetrain.__version__}"
    seen = json.loads(lines[1])

    def loaded(step: str, packages: tuple[str, ...]) -> list[str]:
        return [m for m in seen[step] if any(m == p or m.startswith(f"{p}.") for p in packages)]

    assert loaded("version", HEAVY_FOR_VERSION) == []
    assert "kubetrain.cli.listing" not in seen["version"]
    assert loaded("list", (*HEAVY_FOR_LIST_AND_GET, "kubetrain.local.scheduler")) == []
    assert loaded("get", HEAVY_FOR_LIST_AND_GET) == []
    assert {"kubetrain.cli.listing", "kubernetes.aio.client"} <= set(seen["list"])
    assert "kubetrain.cli.get" in seen["get"]
    assert seen["library"][1] == "V1Pod"
