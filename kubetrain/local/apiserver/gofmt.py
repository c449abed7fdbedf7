"""Values printed as Go's fmt prints them: strings quoted as ``strconv.Quote`` (``%q``) does,
decoded JSON as ``%v`` does, and the Go type kube decodes a JSON value into (``%T``).

kube-apiserver builds its messages with Go's fmt, and users and tests match those messages
word for word, so every module that prints a value in a message uses these functions.
Pure: no I/O.
"""

from __future__ import annotations

import math
from typing import Any

GO_MAP = "map[string]interface {}"  # the Go type of a decoded JSON object, as kube names it


def go_quote(text: str) -> str:
    """``strconv.Quote``: double quotes, Go escapes, printable Unicode kept as is."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_v(value: Any) -> str:
    """A decoded JSON value as Go's ``%v`` prints it: ``<nil>``, ``map[a:1 b:x]``, ``[1 2]``."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_v(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_v(item) for item in value) + "]"
    return str(value)


def go_type(value: Any) -> str:
    """The Go type a decoded JSON value has in kube (integers decode as int64)."""
    if value is None:
        return "<nil>"
    for python_type, name in (
        (bool, "bool"),
        (int, "int64"),
        (float, "float64"),
        (str, "string"),
        (dict, GO_MAP),
        (list, "[]interface {}"),
    ):
        if isinstance(value, python_type):
            return name
    return type(value).__name__
