"""How the docs test reads a page: fenced blocks, the commands of shell blocks, and markers.
Pure: markdown text in, values out."""

from __future__ import annotations

import pytest

from tests.docs import blocks

FENCE = "```"


def page(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def commands_of(text: str) -> list[blocks.Command]:
    return [c for b in blocks.blocks(text, "p.md") for c in blocks.commands(b)]


SPLITS = [
    (
        "one command a line; blank lines and comments are not commands",
        page(f"{FENCE}sh", "a --x   # note", "", "# a comment", "b", FENCE),
        ["a --x   # note", "b"],
    ),
    (
        "a backslash continues a command on the next line",
        page(f"{FENCE}bash", "kubectl patch x \\", "  -p '{}'", "c", FENCE),
        ["kubectl patch x \\\n  -p '{}'", "c"],
    ),
    (
        "a here-document's body belongs to its command, blank and # lines too",
        page(f"{FENCE}sh", "cat > f <<'EOF'", "# not a comment", "", "x", "EOF", "d", FENCE),
        ["cat > f <<'EOF'\n# not a comment\n\nx\nEOF", "d"],
    ),
    (
        "an unquoted delimiter and <<- are here-documents too",
        page(
            f"{FENCE}shell", "run -f - <<EOF", "a: $PWD", "EOF", "x <<-END", "\tb", "\tEND", FENCE
        ),
        ["run -f - <<EOF\na: $PWD\nEOF", "x <<-END\n\tb\n\tEND"],
    ),
    (
        "a here-string is no here-document",
        page(f"{FENCE}sh", "cat <<< word", "e", FENCE),
        ["cat <<< word", "e"],
    ),
    (
        "a console block's commands follow the prompt; the rest is output",
        page(
            f"{FENCE}console", "$ kubetrain list", "KIND  NAME", "$ echo a \\", "> b", "a b", FENCE
        ),
        ["kubetrain list", "echo a \\\nb"],
    ),
    (
        "blocks of other languages have no commands",
        page(f"{FENCE}text", "$ not a command", FENCE, f"{FENCE}yaml", "a: 1", FENCE),
        [],
    ),
]


@pytest.mark.parametrize(("sentence", "text", "expected"), SPLITS, ids=[s[0] for s in SPLITS])
def test_commands_are_split_as_a_shell_reads_them(
    sentence: str, text: str, expected: list[str]
) -> None:
    assert [c.text for c in commands_of(text)] == expected, sentence


def test_a_command_knows_its_line_in_the_file() -> None:
    text = page("# Title", "", f"{FENCE}sh", "a", "", "b \\", "  c", FENCE)
    assert [(c.line, c.where) for c in commands_of(text)] == [(4, "p.md:4"), (6, "p.md:6")]


MARKERS = [
    (
        "a marker without a command skips the whole block",
        "<!-- not run by the docs test: it needs a cluster -->",
        [("it needs a cluster", "a", 0), ("it needs a cluster", "b --x", 0)],
    ),
    (
        "a marker naming a command skips only that command",
        "<!-- not run by the docs test: `b`: it is the suite itself -->",
        [(None, "a", 0), ("it is the suite itself", "b --x", 0)],
    ),
    (
        "a replacement runs instead of the command",
        "<!-- the docs test runs `b` as `b --y`: it must not install -->",
        [(None, "a", 0), (None, "b --y", 0)],
    ),
    (
        "an expected exit code is what the command must exit with",
        "<!-- the docs test expects `a` to exit 1 -->",
        [(None, "a", 1), (None, "b --x", 0)],
    ),
]


@pytest.mark.parametrize(("sentence", "marker", "expected"), MARKERS, ids=[m[0] for m in MARKERS])
def test_markers_say_what_runs(
    sentence: str, marker: str, expected: list[tuple[str | None, str, int]]
) -> None:
    text = page(marker, "", f"{FENCE}sh", "a", "b --x", FENCE)
    found = [(c.skipped, c.run_as, c.expected_exit) for c in commands_of(text)]
    assert found == expected, sentence


def test_a_replacement_keeps_its_reason_and_the_command_as_shown() -> None:
    text = page(
        "<!-- the docs test runs `make run` as `make -o x run`: why -->",
        f"{FENCE}sh",
        "make run",
        FENCE,
    )
    (command,) = commands_of(text)
    assert (command.text, command.run_as, command.replaced) == ("make run", "make -o x run", "why")


def test_a_command_prefix_ends_at_a_word() -> None:
    text = page(
        "<!-- not run by the docs test: `kubectl apply -k deploy/`: cluster only -->",
        f"{FENCE}sh",
        "kubectl apply -k deploy/crds",
        "kubectl apply -k deploy/      # and the operator",
        FENCE,
    )
    assert [c.skipped for c in commands_of(text)] == [None, "cluster only"]


def test_a_block_can_be_saved_as_a_file() -> None:
    text = page(
        "<!-- the docs test saves this block as `x.yaml` -->", f"{FENCE}yaml", "a: 1", FENCE
    )
    (block,) = blocks.blocks(text, "p.md")
    assert (block.saved_as, block.text, block.line) == ("x.yaml", "a: 1", 2)


BROKEN = [
    (
        "a marker naming no command of its block",
        page("<!-- not run by the docs test: `c`: why -->", f"{FENCE}sh", "a", FENCE),
        "p.md:1: the marker names `c`, which no command of the block below starts with",
    ),
    (
        "a comment about the docs test in no known form",
        page("<!-- the docs test skips this -->", f"{FENCE}sh", "a", FENCE),
        "p.md:1: a comment about the docs test in no known form",
    ),
    (
        "a marker with text between it and its block",
        page("<!-- not run by the docs test: why -->", "Some text.", f"{FENCE}sh", "a", FENCE),
        "p.md:1: a docs-test marker must stand right before a fenced block; line 2 comes between",
    ),
    (
        "a marker with no block after it",
        page("<!-- not run by the docs test: why -->"),
        "p.md:1: a docs-test marker with no block after it",
    ),
    (
        "a fenced block that is not closed",
        page("text", f"{FENCE}sh", "a"),
        "p.md:2: the fenced block is not closed",
    ),
    (
        "a here-document that is not closed",
        page(f"{FENCE}sh", "cat <<EOF", "x", FENCE),
        "p.md:2: line 1 of the block: here-document EOF is not closed",
    ),
]


@pytest.mark.parametrize(("sentence", "text", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_page_the_test_cannot_read_as_it_stands_is_an_error(
    sentence: str, text: str, message: str
) -> None:
    with pytest.raises(blocks.MarkdownError) as raised:
        commands_of(text)
    assert str(raised.value).startswith(message), sentence


def test_an_ordinary_comment_is_no_marker() -> None:
    text = page("<!-- a note for editors -->", "Text.", f"{FENCE}sh", "a", FENCE)
    assert [c.skipped for c in commands_of(text)] == [None]
