"""The JSONPath subset of CRD printer columns (``client-go/util/jsonpath``): fields (dotted,
with escaped dots, or quoted in brackets), indexes, slices and wildcards, inside ``{...}`` or
after ``$``. Filters and recursive descent are not supported (a ValueError, so the column's
cell is empty).

It keeps client-go's rules where JSONPath dialects differ: a negative bound counts from the
end, and an index or slice out of range finds no value rather than an error or a clipped
slice. Pure: no I/O.

Hand-written because no Python library speaks this dialect: jsonpath-ng (the common choice)
was tried against client-go's cases and refuses the ``{...}`` form, a path without ``$``
(``.a[*].b``) and an escaped dot (``.a\\.b``), and clips an out-of-range slice (``[1:10]``
of three items gives two) where client-go finds nothing; kubectl's templates (``range``/``end``)
are its own dialect again, and no library reads them either.
"""

from __future__ import annotations

import re
from typing import Any

_Step = tuple[str, Any]


def _parse_jsonpath(expr: str) -> list[_Step]:
    """Parse the JSONPath subset printer columns use (``client-go/util/jsonpath``):
    ``.a.b``, ``.a\\.b`` (escaped dot), ``['a.b']``, ``[0]``, ``[-1]``, ``[1:3]``,
    ``[-1:]``, ``[::2]``, ``[*]`` and ``.*``, optionally inside ``{...}`` and after ``$``."""
    text = expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[_Step] = []
    i = 0
    while i < len(text):
        if text[i] == ".":
            i += 1
            name = []
            while i < len(text) and text[i] not in ".[":
                if text[i] == "\\" and i + 1 < len(text):
                    i += 1
                name.append(text[i])
                i += 1
            field = "".join(name)
            if not field:
                if i >= len(text):
                    break
                raise ValueError(f"unsupported JSONPath {expr!r}")
            steps.append(("all", None) if field == "*" else ("field", field))
        elif text[i] == "[":
            end = text.find("]", i)
            if end < 0:
                raise ValueError(f"unclosed [ in JSONPath {expr!r}")
            steps.append(_parse_bracket(text[i + 1 : end].strip(), expr))
            i = end + 1
        else:
            raise ValueError(f"unsupported JSONPath {expr!r}")
    return steps


def _parse_bracket(inner: str, expr: str) -> _Step:
    if inner == "*":
        return ("all", None)
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return ("field", inner[1:-1])
    if re.fullmatch(r"-?\d+", inner):
        return ("index", int(inner))
    parts = inner.split(":")
    if 2 <= len(parts) <= 3 and all(re.fullmatch(r"\s*(-?\d+)?\s*", p) for p in parts):
        bounds = [int(p) if p.strip() else None for p in parts]
        return ("slice", [*bounds, None][:3])
    raise ValueError(f"unsupported JSONPath {expr!r}")


def _slice(items: list[Any], start: int | None, stop: int | None, step: int | None) -> list[Any]:
    """``evalArray``: negative bounds count from the end; out of range is an error."""
    size = len(items)
    first = 0 if start is None else start + size if start < 0 else start
    last = size if stop is None else stop + size if stop < 0 else stop
    if last == first:
        return []
    if first >= size or first < 0 or last > size or last < 0 or first > last:
        raise IndexError("array index out of bounds")
    if step is not None and step <= 0:
        raise ValueError("step must be > 0")
    return items[first : last : step or 1]


def jsonpath(obj: Any, expr: str) -> list[Any]:
    """Every value ``expr`` selects in ``obj``, in order, as kube's JSONPath with missing
    keys allowed. A missing key selects nothing; so does an index out of range or a step
    through a non-list (kube's errors, which a printer column shows as an empty cell).
    Raises ValueError for syntax outside the supported subset (see ``_parse_jsonpath``).
    """
    values = [obj]
    for kind, arg in _parse_jsonpath(expr):
        found: list[Any] = []
        for value in values:
            if value is None:
                continue
            if kind == "field":
                if isinstance(value, dict) and arg in value:
                    found.append(value[arg])
            elif kind == "all":
                if isinstance(value, dict):
                    found.extend(value.values())
                elif isinstance(value, list):
                    found.extend(value)
            else:
                if not isinstance(value, list):
                    return []
                try:
                    if kind == "index":
                        found.extend(_slice(value, arg, arg + 1 if arg != -1 else None, None))
                    else:
                        found.extend(_slice(value, *arg))
                except (IndexError, ValueError):
                    return []
        values = found
    return values
