"""Columns as kubectl lays them out (kubetrain.cli.tables)."""

from __future__ import annotations

from kubetrain.cli import tables


def test_columns_are_aligned_with_three_spaces_and_no_trailing_space() -> None:
    text = tables.render(["name", "state"], [["a", "Running"], ["longer", None]])
    assert text == "NAME     STATE\na        Running\nlonger   -\n"


def test_a_cell_with_a_newline_stays_on_one_line() -> None:
    assert tables.render(["m"], [["two\nlines"]], indent="  ") == "  M\n  two lines\n"
