"""How a command's failures reach the user: one line on stderr and an exit status.

Owns :class:`UserError` (a mistake or a state the user can act on; its message says what to
do) and :func:`run`, which runs a command's coroutine and turns every error kubetrain knows
how to describe (user errors, API errors, kubeconfig and control-plane errors) into one line.
Anything else is a bug and goes on to ``main``, which prints it as an internal error. ``-v``
adds the traceback in both cases.

Must not: decide what a command prints on success, or retry anything.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import traceback
from collections.abc import Callable, Coroutine
from typing import Any

from kubetrain import kube
from kubetrain.errors import KubetrainError

EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130


class UserError(KubetrainError):
    """A mistake the user can fix, or a state they can act on. ``code`` is the exit status."""

    def __init__(self, message: str, *, code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.code = code


class Problems(UserError):
    """Several problems, each a whole line of its own (every bad document of a file)."""

    def __init__(self, lines: list[str], *, code: int = EXIT_FAILURE) -> None:
        super().__init__("; ".join(lines), code=code)
        self.lines = lines


def describe(exc: BaseException) -> str:
    """The one line for an error kubetrain knows, without the ``kubetrain:`` prefix."""
    if isinstance(exc, UserError):
        return str(exc)
    if isinstance(exc, kube.Invalid):
        return "; ".join(invalid_lines(exc))
    if isinstance(exc, kube.Unavailable):
        return (
            f"cannot reach the API server: {exc.message}; is it running? "
            "(`kubetrain status` tells for the local control plane)"
        )
    if isinstance(exc, kube.Unauthorized):
        return f"the API server refused the credentials: {exc.message}"
    if isinstance(exc, kube.Forbidden):
        return f"not allowed: {exc.message}"
    if isinstance(exc, kube.ApiError):
        return exc.message or str(exc)
    return str(exc) or type(exc).__name__


def invalid_lines(exc: kube.Invalid) -> list[str]:
    """A rejected object, one line per cause: ``<Kind>/<name>: <field>: <message>``, as the
    server words them (a server without causes gives its one message)."""
    details = exc.details
    subject = f"{details.get('kind') or 'object'}/{details.get('name') or '<no name>'}"
    lines = []
    for cause in exc.causes:
        field = cause.get("field")
        message = cause.get("message") or cause.get("reason") or "invalid"
        lines.append(f"{subject}: {field}: {message}" if field else f"{subject}: {message}")
    return lines or [exc.message]


def run(args: argparse.Namespace, command: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run ``command()`` on a fresh event loop; its result is the exit status."""
    try:
        return asyncio.run(command())
    except Problems as exc:
        _traceback(args)
        for line in exc.lines:
            print(line, file=sys.stderr)
        return exc.code
    except UserError as exc:
        _traceback(args)
        print(f"kubetrain: {exc}", file=sys.stderr)
        return exc.code
    except kube.Invalid as exc:
        _traceback(args)
        for line in invalid_lines(exc):
            print(line, file=sys.stderr)
        return EXIT_FAILURE
    except KubetrainError as exc:  # API, kubeconfig and control-plane errors: all describable
        _traceback(args)
        print(f"kubetrain: {describe(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except Exception as exc:
        cause = first_leaf(exc)
        if isinstance(cause, BrokenPipeError):  # `kubetrain logs -f x | head`: a normal end
            _quiet_stdout()
            return 0
        if cause is exc or not isinstance(cause, KubetrainError):
            raise
        _traceback(args)
        if isinstance(cause, Problems):
            for line in cause.lines:
                print(line, file=sys.stderr)
            return cause.code
        print(f"kubetrain: {describe(cause)}", file=sys.stderr)
        return cause.code if isinstance(cause, UserError) else EXIT_FAILURE


def first_leaf(exc: BaseException) -> BaseException:
    """The first error inside (nested) exception groups, as a TaskGroup raises them; the
    error itself when it is no group."""
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush into the closed pipe does
    not print an error of its own."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (captured output in tests)
        pass


def _traceback(args: argparse.Namespace) -> None:
    if getattr(args, "verbose", False):
        traceback.print_exc()
