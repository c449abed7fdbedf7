"""Values printed as Go prints them: the one home of kube's wording of values in messages.

kube-apiserver, the Trainer webhook and the training operator build their messages with Go's
``fmt`` and ``encoding/json``, and users and tests match those messages word for word, so every
module that prints a value in a message (the API server's causes, tables and patches, the
admission checks in :mod:`kubetrain.api`, the node's env files) prints it through here:

- :func:`go_quote`: ``%q`` of a string (``strconv.Quote``);
- :func:`go_float`: ``%v`` of a float64 (shortest digits, ``e`` form from ``1e+06``);
- :func:`go_v`: ``%v`` of a decoded JSON value: ``<nil>``, ``map[a:1 b:x]``, ``[1 2]``;
- :func:`go_sharp`: ``%#v`` of one: ``map[string]interface {}{"a":1}``; :func:`go_strings`:
  ``%#v`` of a ``[]string``;
- :func:`go_value`: a bad value of a decoded JSON object as ``field.Error`` prints it (``%q``
  for a string, ``%v`` for a number or boolean, ``null``, ``%#v`` for the rest). Checks of
  typed objects (the built-in kinds, the webhooks) print lists and objects their own way, as
  their modules say: Go's ``%#v`` of a typed struct shows its type and pointer addresses;
- :func:`go_json`: ``encoding/json``'s compact output, map keys sorted, HTML escaped;
- :func:`go_type`: ``%T`` of a decoded JSON value.

Hand-written on purpose: no Python library reproduces Go's ``fmt`` verbs (PyPI's package index
was searched for a port of Go's fmt and has none; the ``%v`` of a map is Go's own syntax, and a
float64's ``%v`` differs from Python's ``repr`` in where it switches to ``e`` form and how it
writes the exponent); ``json.dumps`` is close to ``encoding/json`` but neither escapes ``<``,
``>``, ``&`` nor writes floats the same way.

Pure: imports only the standard library, so every layer may use it.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
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


def _digits(value: float) -> tuple[bool, str, int]:
    """Shortest round-trip decimal digits of ``value`` and the decimal point position."""
    _, digits, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    text = "".join(map(str, digits))
    return value < 0, text, len(text) + int(exponent)


def _e_form(digits: str, exp: int, *, two_digit_exponent: bool) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    width = 2 if two_digit_exponent else 1
    return f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):0{width}d}"


def _f_form(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def go_float(value: float) -> str:
    """A float64 as Go's ``%v`` prints it: shortest digits, ``e`` form from 1e+06."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    negative, digits, point = _digits(value)
    exp = point - 1
    if exp < -4 or exp >= 6:
        text = _e_form(digits, exp, two_digit_exponent=True)
    else:
        text = _f_form(digits, point)
    return "-" + text if negative else text


def _json_float(value: float) -> str:
    """A float64 as ``encoding/json`` writes it."""
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    negative, digits, point = _digits(value)
    if 1e-6 <= abs(value) < 1e21:
        text = _f_form(digits, point)
    else:
        text = _e_form(digits, point - 1, two_digit_exponent=False)
    return "-" + text if negative else text


def go_json(value: Any) -> str:
    """Compact JSON as ``encoding/json`` marshals it: sorted keys, HTML characters escaped."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
            text = text.replace(ch, esc)
        return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if isinstance(value, dict):
        items = (f"{go_json(str(k))}:{go_json(value[k])}" for k in sorted(value))
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    return go_json(str(value))


def go_v(value: Any) -> str:
    """A decoded JSON value as Go's ``%v`` prints it: ``<nil>``, ``map[a:1 b:x]``, ``[1 2]``
    (map keys sorted, as fmt sorts them; strings bare)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_v(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_v(item) for item in value) + "]"
    return str(value)


def go_sharp(value: Any) -> str:
    """Go's ``%#v`` of a decoded JSON value (``map[string]interface {}{"a":1}``)."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict):
        items = ", ".join(f"{go_quote(str(k))}:{go_sharp(value[k])}" for k in sorted(value))
        return GO_MAP + "{" + items + "}"
    if isinstance(value, list | tuple):
        return "[]interface {}{" + ", ".join(go_sharp(v) for v in value) + "}"
    return go_quote(str(value))


def go_strings(values: Any) -> str:
    """A ``[]string`` as ``%#v`` prints it (``[]string{"/a", "/b"}``); one value counts as a
    list of one."""
    items = values if isinstance(values, list) else [values]
    return "[]string{" + ", ".join(go_quote(str(v)) for v in items) + "}"


def go_value(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: ``"text"``, ``3``, ``true``, ``null``, and
    ``%#v`` (:func:`go_sharp`) for lists and objects: ``%#v`` but for ``null``."""
    return "null" if value is None else go_sharp(value)


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
