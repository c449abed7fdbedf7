"""Columns as kubectl prints them: upper-case headers, left-aligned cells, three spaces between
columns, no trailing spaces, and ``<none>``-free empty cells shown as ``-``.

Owns: laying out rows. Must not: decide what goes in a cell (the commands do) or print.
"""

from __future__ import annotations

from collections.abc import Sequence

GAP = "   "
EMPTY = "-"


def render(headers: Sequence[str], rows: Sequence[Sequence[object]], *, indent: str = "") -> str:
    """The table as text, one line per row after the header line, each ending in a newline."""
    cells = [[str(h).upper() for h in headers]]
    cells += [[_cell(value) for value in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [value.ljust(widths[i]) for i, value in enumerate(row)]
        lines.append(indent + GAP.join(padded).rstrip())
    return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    if value is None or value == "":
        return EMPTY
    return " ".join(str(value).split())  # one line per row, whatever the value holds
