"""What the operator's source says it touches, read with ``ast`` (its code is imported only to
look up module-level names): every call of a :class:`kubetrain.kube.Client` method, with the
resource argument and subresource, and every ``kube.Resource(...)`` written out.

Used by ``test_rbac.py`` to hold the RBAC to the code. Must not: run the operator.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kubetrain import kube
from tests.unit.deploy.manifests import ROOT

SOURCE: Final = ROOT / "kubetrain" / "operator"
# client-go's pieces in kubetrain.kube that the operator runs on: their calls are its calls
MACHINERY: Final = tuple(ROOT / "kubetrain" / "kube" / f for f in ("informer.py", "record.py"))
CLIENT_METHODS: Final = frozenset(
    name for name, _ in inspect.getmembers(kube.Client) if not name.startswith("_")
)


@dataclass(frozen=True)
class Call:
    """``<something>.client.<method>(<target>, ..., subresource=...)`` in ``module``."""

    module: str
    line: int
    method: str
    target: str  # the source text of the resource argument; "" without one
    subresource: str | None

    def __str__(self) -> str:
        return f"{self.module}:{self.line} client.{self.method}({self.target})"


@dataclass(frozen=True)
class Named:
    """A ``Resource(group, version, plural, ...)`` written in ``scope`` (a module, or a
    function in it); group and plural are None where they are computed at run time."""

    scope: str
    group: str | None
    plural: str | None


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _files(root: Path) -> Iterator[tuple[str, str]]:
    """Every module below ``root``; for the operator's source, with :data:`MACHINERY`."""
    paths = sorted(root.rglob("*.py"))
    if root == SOURCE:
        paths.extend(MACHINERY)
    for path in paths:
        yield module_name(path), path.read_text(encoding="utf-8")


def calls_in(module: str, source: str) -> Iterator[Call]:
    """The Client calls in one module's source: a method of :class:`kube.Client` called on
    a name ending in ``client`` (``self.client``, ``client``, ``mgr.client``)."""
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in CLIENT_METHODS:
            continue
        if ast.unparse(node.func.value).split(".")[-1] != "client":
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        argument = node.args[0] if node.args else keywords.get("resource")
        subresource = keywords.get("subresource")
        if subresource is not None and not isinstance(subresource, ast.Constant):
            raise ValueError(f"{module}:{node.lineno}: a subresource that is not a literal")
        yield Call(
            module,
            node.lineno,
            node.func.attr,
            ast.unparse(argument) if argument is not None else "",
            subresource.value if isinstance(subresource, ast.Constant) else None,
        )


def client_calls(root: Path = SOURCE) -> list[Call]:
    return [call for module, source in _files(root) for call in calls_in(module, source)]


def value_of(module: str, expression: str) -> Any:
    """What a module-level name (``LEASES``, ``kinds.PODS``) of ``module`` holds; None when
    the expression starts from anything else (``self``, a local variable)."""
    first, *rest = expression.split(".")
    if not first.isidentifier():
        return None
    value: Any = vars(importlib.import_module(module)).get(first)
    for attribute in rest:
        value = getattr(value, attribute, None)
    return value


class _ResourceFinder(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.scope = module
        self.found: list[Named] = []

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self.scope = self.scope, f"{self.module}.{node.name}"
        self.generic_visit(node)
        self.scope = outer

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Call(self, node: ast.Call) -> None:
        if ast.unparse(node.func).split(".")[-1] == "Resource" and len(node.args) >= 3:
            group, plural = (self._static(node.args[0]), self._static(node.args[2]))
            self.found.append(
                Named(
                    self.scope,
                    group if isinstance(group, str) else None,
                    plural if isinstance(plural, str) else None,
                )
            )
        self.generic_visit(node)

    def _static(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            return value_of(self.module, ast.unparse(node))
        return None


def resources_in(module: str, source: str) -> list[Named]:
    finder = _ResourceFinder(module)
    finder.visit(ast.parse(source))
    return finder.found


def resources_named(root: Path = SOURCE) -> list[Named]:
    return [named for module, source in _files(root) for named in resources_in(module, source)]
