"""The operator image imports nothing it lacks: a child Python, with only the packages an
install without extras brings, imports the operator's modules. The Dockerfile as written is
tested in tests/unit/deploy/test_dockerfile.py."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata


def requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[( ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def installed_without_extras() -> set[str]:
    """The distributions ``pip install .`` brings: kubetrain's requirements without extras,
    and theirs, transitively."""
    found: set[str] = set()
    todo = ["kubetrain"]
    while todo:
        name = todo.pop()
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for requirement in requires:
            wanted = requirement_name(requirement)
            if "extra ==" not in requirement and wanted not in found:
                found.add(wanted)
                todo.append(wanted)
    return found


# Top-level modules the operator imported, less namespace packages (no ``__file__``): an
# optional import such as kubernetes' ``import google.auth`` leaves an empty ``google`` behind
# where another package (protobuf) provides the namespace, and fails harmlessly without it.
IMPORTS = (
    "import sys; from kubetrain.cli import main; main.build_parser().parse_args(['operator']); "
    "print(' '.join(sorted({name.split('.')[0] for name, module in list(sys.modules.items()) "
    "if '.' in name or getattr(module, '__file__', None) or name in sys.builtin_module_names})))"
)


def test_the_operator_imports_nothing_the_image_lacks() -> None:
    """The image installs no extras: ``kubetrain operator`` must import only the standard
    library and what the package requires (not torch, scikit-learn, pytest, ...)."""
    distributions = installed_without_extras()
    assert {"aiohttp", "kubernetes", "pydantic", "cryptography"} <= distributions
    provided = {
        module
        for module, owners in metadata.packages_distributions().items()
        if {owner.lower().replace("_", "-") for owner in owners} & distributions
    }
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS], capture_output=True, text=True, check=True, timeout=60
    )
    imported = set(done.stdout.split())
    assert "kubetrain" in imported
    missing = sorted(
        module
        for module in imported - provided - set(sys.stdlib_module_names)
        if module not in ("kubetrain", "cython_runtime") and not module.startswith("_")
    )
    assert missing == []
