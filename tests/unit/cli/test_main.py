"""The entry point imports only the command module of the verb it runs, and each verb only
what it uses: `kubetrain --version` nothing, `list` and `get` no control plane, no SDK."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

import kubetrain
from kubetrain.cli import main


def _verbs(parser: argparse.ArgumentParser) -> set[str]:
    (subparsers,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(subparsers.choices)


def test_the_verb_table_names_every_verb_the_modules_register() -> None:
    assert _verbs(main.build_parser()) == set(main.VERBS)


@pytest.mark.parametrize("verb", sorted(main.VERBS))
def test_a_verb_alone_builds_the_same_parser_for_it(verb: str) -> None:
    alone = _verbs(main.build_parser(verb))
    assert verb in alone
    assert alone <= {v for v, module in main.VERBS.items() if module == main.VERBS[verb]}


@pytest.mark.parametrize(
    ("argv", "verb"),
    [
        (["list", "-A"], "list"),
        (["-v", "get", "job"], "get"),
        (["--help"], None),
        (["--version", "list"], None),
        ([], None),
        (["lst"], "lst"),  # unknown: every verb is registered, and argparse names the choices
    ],
)
def test_the_verb_is_the_first_word_that_is_not_a_top_level_option(
    argv: list[str], verb: str | None
) -> None:
    assert main._verb(argv) == verb


def test_an_unknown_verb_gets_argparse_s_list_of_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main.main(["lst"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'lst'" in err
    assert "'list'" in err


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
