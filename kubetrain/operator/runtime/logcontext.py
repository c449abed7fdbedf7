"""The log context of the reconcile in progress: controller, namespace, name, reconcile ID.

The worker loop binds these fields around each reconcile in a ``contextvars`` variable, so
every log line written during it, by the reconciler or by anything it calls (and any task it
starts, which copies the context), can carry them without passing a logger around.
:class:`Filter`, attached to the process's log handler (the operator's entry point does),
copies them onto each record as attributes, for a JSON formatter to write out.

Owns: that variable and the filter. Must not: configure logging handlers or formats (the
entry point does) or hold anything but short identifying strings (never Secret data or env).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import types
from collections.abc import Iterator, Mapping
from typing import Final

FIELDS: Final = ("controller", "namespace", "name", "reconcile_id")

_EMPTY: Final[Mapping[str, str]] = types.MappingProxyType({})
_context: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "kubetrain_operator_log_context", default=_EMPTY
)


def current() -> Mapping[str, str]:
    """The fields bound now (empty outside a reconcile)."""
    return _context.get()


@contextlib.contextmanager
def bound(**fields: str) -> Iterator[None]:
    """Add ``fields`` to the log context for the duration of the block."""
    token = _context.set({**_context.get(), **fields})
    try:
        yield
    finally:
        _context.reset(token)


class Filter(logging.Filter):
    """Puts the bound fields on every record: all of them as the mapping ``record.context``
    (what a JSON formatter writes out), and each as an attribute too (``record.controller``,
    ``record.reconcile_id``; ``""`` when unbound, so a format string may name them) except
    where a LogRecord attribute has the name already (``name`` is the logger's)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = _context.get()
        if not hasattr(record, "context"):
            record.context = dict(context)
        for name in (*FIELDS, *context):
            if not hasattr(record, name):
                setattr(record, name, context.get(name, ""))
        return True
