"""A Python function turned into the script a job runs: the self-containment check and the
script itself.

A job runs the function's source alone, on other processes (and, on a cluster, other
machines), as ``python3 -c SCRIPT``: nothing of the caller's module, notebook or closure
comes along. So before anything is submitted the function is checked, and every reason it
would fail is given at once:

- it is a plain ``def`` function whose source can be read (not a lambda, a method, a builtin,
  a coroutine function, or something typed at the interactive prompt);
- every name it uses is a builtin or defined inside it (imports included): no variables of
  an enclosing function, no module globals, no modules imported outside it. Default values,
  annotations and decorators count too, since the script evaluates them when it defines the
  function;
- ``func_args`` fit its signature and each value is a Python literal (str, numbers, bool,
  None, and lists, tuples, dicts and sets of them), since the values are written into the
  script with ``repr``.

The script is the dedented source followed by the call, ``train(**{'lr': 0.1})`` (Kubeflow
Trainer's convention; kubeflow-training v1's is one positional dict, ``train({'lr': 0.1})``).

Must not: do I/O (reading a function's source is the one file access, through ``inspect``) or
know about jobs.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import symtable
import textwrap
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kubetrain.sdk._errors import InvalidTrainer

CallStyle = Literal["kwargs", "positional"]
ACCEPTED_VALUES = "str, int, float, bool, None, and lists, tuples, dicts and sets of these"
_BUILTINS = frozenset(dir(builtins))
_MAX_SHOWN = 60  # characters of a rejected value shown in a message


@dataclass(frozen=True)
class Prepared:
    """A checked function: its name, its dedented source, and the script that calls it."""

    name: str
    source: str
    script: str


def prepare(
    func: Callable[..., Any],
    args: Mapping[str, Any] | None = None,
    *,
    where: str = "CustomTrainer",
    style: CallStyle = "kwargs",
) -> Prepared:
    """Check ``func`` and ``args`` and build the script; :class:`InvalidTrainer` says every
    problem found. ``where`` names the caller's fields in messages (``CustomTrainer.func``)."""
    function = _function(func, where)
    source = _source(function, where)
    problems = unresolved_names(function, source)
    if problems:
        listed = "; ".join(problems)
        raise InvalidTrainer(
            f"{where}.func: {function.__name__} is not self-contained: {listed}. It runs alone "
            "on every node, so it must import what it uses inside its body and take its data "
            "from func_args"
        )
    literal = _arguments(function, args, where, style)
    if style == "kwargs":
        call = f"{function.__name__}(**{literal})" if literal else f"{function.__name__}()"
    else:
        call = f"{function.__name__}({literal})" if literal else f"{function.__name__}()"
    return Prepared(function.__name__, source, f"{source.rstrip()}\n\n\n{call}\n")


def _function(func: Any, where: str) -> types.FunctionType:
    if isinstance(func, types.MethodType):
        raise InvalidTrainer(
            f"{where}.func: {func.__qualname__} is a bound method; accepted: a function "
            "defined with def at the top level of a module or notebook cell"
        )
    if not isinstance(func, types.FunctionType):
        raise InvalidTrainer(
            f"{where}.func: {type(func).__name__} {func!r:.{_MAX_SHOWN}} is not a Python "
            "function; accepted: a function defined with def"
        )
    if func.__name__ == "<lambda>":
        raise InvalidTrainer(
            f"{where}.func: a lambda cannot be shipped; accepted: a function defined with def"
        )
    if inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func):
        raise InvalidTrainer(
            f"{where}.func: {func.__name__} is async; accepted: a plain def function (run an "
            "event loop inside it if it needs one)"
        )
    return func


def _source(func: types.FunctionType, where: str) -> str:
    try:
        raw = inspect.getsource(func)
    except (OSError, TypeError) as exc:
        raise InvalidTrainer(
            f"{where}.func: the source of {func.__name__} cannot be read ({exc}); define it in "
            "a file or a notebook cell (functions typed at the interactive prompt keep none)"
        ) from exc
    source = textwrap.dedent(raw)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise InvalidTrainer(
            f"{where}.func: the source of {func.__name__} does not parse on its own "
            f"({exc.msg}, line {exc.lineno}); define it with def on lines of its own"
        ) from exc
    first = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(first, ast.FunctionDef) or first.name != func.__name__:
        raise InvalidTrainer(
            f"{where}.func: the source read for {func.__name__} is not that one function "
            "definition; define it with def on lines of its own"
        )
    return source


def unresolved_names(func: types.FunctionType, source: str) -> list[str]:
    """Why each name the script would look up outside the function fails there, one entry per
    name, in order of name; empty when the function is self-contained."""
    top = symtable.symtable(source, f"<{func.__name__}>", "exec")
    needed: set[str] = set()
    defined: set[str] = set()
    _collect(top, needed, defined)
    missing = sorted(needed - defined - _BUILTINS)
    return [_explain(func, name) for name in missing]


def _collect(table: symtable.SymbolTable, needed: set[str], defined: set[str]) -> None:
    module_scope = table.get_type() == "module"
    for symbol in table.get_symbols():
        name = symbol.get_name()
        binds = symbol.is_assigned() or symbol.is_imported()
        if module_scope:
            if binds:
                defined.add(name)
            elif symbol.is_referenced():
                needed.add(name)
            continue
        if symbol.is_declared_global() and binds:
            defined.add(name)  # ``global x; x = ...`` creates it in the script's module
        elif symbol.is_global() and symbol.is_referenced():
            needed.add(name)
    for child in table.get_children():
        _collect(child, needed, defined)


def _explain(func: types.FunctionType, name: str) -> str:
    if name in func.__code__.co_freevars:
        return f"{name} is a variable of the function it is defined in (pass it in func_args)"
    if name not in func.__globals__:
        return f"{name} is not defined"
    value = func.__globals__[name]
    if isinstance(value, types.ModuleType):
        return f"{name} is a module imported outside it (import it inside the function)"
    if isinstance(value, type | types.FunctionType | types.BuiltinFunctionType):
        kind = "class" if isinstance(value, type) else "function"
        module = getattr(value, "__module__", None)
        if module and module not in ("__main__", func.__module__):
            return f"{name} is a {kind} imported outside it (import it inside the function)"
        return f"{name} is a {kind} defined outside it (define it inside the function)"
    return f"{name} is a global variable (pass it in func_args)"


def _arguments(
    func: types.FunctionType, args: Mapping[str, Any] | None, where: str, style: CallStyle
) -> str:
    """The arguments as a literal, "" when there are none; every value checked."""
    if args is None:
        if style == "kwargs":
            _bind(func, {}, where)
        return ""
    if not isinstance(args, Mapping):
        raise InvalidTrainer(
            f"{where}.func_args: a {type(args).__name__}; accepted: a dict of argument names "
            "to values"
        )
    bad_keys = [k for k in args if not isinstance(k, str) or not k.isidentifier()]
    if bad_keys:
        raise InvalidTrainer(
            f"{where}.func_args: keys {bad_keys!r} are not argument names; accepted: identifiers"
        )
    if style == "kwargs":
        _bind(func, args, where)
    problems = []
    for key, value in args.items():
        text = repr(value)
        try:
            ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            shown = text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "..."
            problems.append(f"[{key!r}]: {type(value).__name__} {shown} is not a Python literal")
    if problems:
        raise InvalidTrainer(
            f"{where}.func_args{'; '.join(problems)}; accepted: {ACCEPTED_VALUES} (the values "
            "are written into the script)"
        )
    return repr(dict(args))


def _bind(func: types.FunctionType, args: Mapping[str, Any], where: str) -> None:
    try:
        inspect.signature(func).bind(**args)
    except TypeError as exc:
        raise InvalidTrainer(
            f"{where}.func_args: {exc} for {func.__name__}{inspect.signature(func)}"
        ) from exc
