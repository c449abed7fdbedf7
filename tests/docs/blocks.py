"""The fenced blocks of a markdown page, the docs-test markers before them, and the commands in
its shell blocks. Pure: text in, values out; running the commands is :mod:`tests.docs.runner`'s.

Shell blocks are fenced ``sh``, ``bash``, ``shell`` or ``console``. In a ``console`` block only
lines that start with the prompt ``$ `` are commands (continuation lines may start with
``> ``); everything else is the output shown. A command spans lines that end with a backslash,
and the bodies of its here-documents (``<<'EOF'`` ... ``EOF``). Blank lines and lines that
start with ``#`` between commands are not commands.

A marker is an HTML comment (invisible when the page is rendered) on a line of its own before
a fenced block, with only blank lines or other markers between it and the block's fence:

- ``<!-- not run by the docs test: REASON -->``: no command of the block runs;
- ``<!-- not run by the docs test: `PREFIX`: REASON -->``: the block's commands that start with
  PREFIX (followed by a space or nothing) do not run;
- ``<!-- the docs test runs `PREFIX` as `REPLACEMENT`: REASON -->``: the commands that start
  with PREFIX run as REPLACEMENT instead;
- ``<!-- the docs test expects `PREFIX` to exit N -->``: a failure shown on purpose;
- ``<!-- the docs test saves this block as `FILE` -->``: the block's text is written to FILE
  (relative to the repository root) where the page reaches it, for a page that says "save
  this as FILE" before its commands use FILE.

A marker that names a PREFIX must match a command of its block, and a comment that mentions
the docs test but matches none of these forms is an error, so a marker cannot silently stop
doing what it says.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Final

SHELL_LANGUAGES: Final = ("sh", "bash", "shell", "console")
PROMPT: Final = "$ "
CONTINUATION_PROMPT: Final = "> "

SKIP: Final = "skip"
REPLACE: Final = "replace"
EXIT: Final = "exit"
SAVE: Final = "save"

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*?)\s*$")
_COMMENT = re.compile(r"^\s*<!--(?P<body>.*?)-->\s*$")
_MARKERS: Final = (
    (SKIP, re.compile(r"not run by the docs test:\s*`(?P<prefix>[^`]+)`:\s*(?P<value>\S.*)")),
    (SKIP, re.compile(r"not run by the docs test:\s*(?P<value>[^`\s].*)")),
    (
        REPLACE,
        re.compile(
            r"the docs test runs `(?P<prefix>[^`]+)` as `(?P<value>[^`]+)`:\s*(?P<reason>\S.*)"
        ),
    ),
    (EXIT, re.compile(r"the docs test expects `(?P<prefix>[^`]+)` to exit (?P<value>\d+)")),
    (SAVE, re.compile(r"the docs test saves this block as `(?P<value>[^`]+)`")),
)
_MENTION = re.compile(r"docs test", re.IGNORECASE)
# A here-document's delimiter: <<EOF, <<'EOF', <<"EOF", <<-EOF; not a here-string (<<<).
_HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


class MarkdownError(ValueError):
    """A page the docs test cannot read as it stands; the message names the file and line."""


@dataclass(frozen=True)
class Marker:
    kind: str  # SKIP, REPLACE, EXIT or SAVE
    value: str  # the reason, the replacement, the exit code or the file name
    line: int
    prefix: str | None = None  # None: the whole block
    reason: str = ""  # a replacement's reason


@dataclass(frozen=True)
class Block:
    path: str
    line: int  # of the opening fence, counted from 1
    language: str
    text: str
    markers: tuple[Marker, ...] = ()

    @property
    def is_shell(self) -> bool:
        return self.language in SHELL_LANGUAGES

    @property
    def saved_as(self) -> str | None:
        return next((m.value for m in self.markers if m.kind == SAVE), None)

    def where(self, offset: int = 0) -> str:
        """``path:line`` of the block's line ``offset`` (0: its first line inside the fence)."""
        return f"{self.path}:{self.line + 1 + offset}"


@dataclass(frozen=True)
class Command:
    """One command of a shell block, and what the docs test does with it."""

    text: str  # as the page shows it (continuation lines and here-documents included)
    line: int  # of its first line in the file
    block: Block
    run_as: str  # what runs: the text, or a marker's replacement
    expected_exit: int = 0
    skipped: str | None = None  # why it does not run; None: it runs
    replaced: str | None = None  # why it runs as something else

    @property
    def where(self) -> str:
        return f"{self.block.path}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0]


def _marker(body: str, line: int, path: str) -> Marker | None:
    body = " ".join(body.split())
    for kind, pattern in _MARKERS:
        found = pattern.fullmatch(body)
        if found:
            groups = found.groupdict()
            return Marker(
                kind=kind,
                value=groups["value"].strip(),
                line=line,
                prefix=groups.get("prefix"),
                reason=(groups.get("reason") or "").strip(),
            )
    if _MENTION.search(body):
        raise MarkdownError(
            f"{path}:{line}: a comment about the docs test in no known form: {body}"
        )
    return None


def blocks(text: str, path: str) -> list[Block]:
    """Every fenced block of the page, in order, each with the markers before it."""
    lines = text.splitlines()
    found: list[Block] = []
    pending: list[Marker] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence is None:
            comment = _COMMENT.match(line)
            marker = _marker(comment["body"], index + 1, path) if comment else None
            if marker is not None:
                pending.append(marker)
            elif line.strip() and pending:
                raise MarkdownError(
                    f"{path}:{pending[0].line}: a docs-test marker must stand right before a "
                    f"fenced block; line {index + 1} comes between"
                )
            index += 1
            continue
        opening, language = fence["fence"], (fence["info"].split() or [""])[0].lower()
        start = index + 1  # the fence's line, counted from 1
        body: list[str] = []
        index += 1
        while index < len(lines):
            closing = _FENCE.match(lines[index])
            if (
                closing
                and closing["fence"][0] == opening[0]
                and len(closing["fence"]) >= len(opening)
                and not closing["info"]
            ):
                break
            body.append(lines[index])
            index += 1
        else:
            raise MarkdownError(f"{path}:{start}: the fenced block is not closed")
        found.append(Block(path, start, language, "\n".join(body), tuple(pending)))
        pending = []
        index += 1
    if pending:
        raise MarkdownError(f"{path}:{pending[0].line}: a docs-test marker with no block after it")
    return found


def _split(lines: list[str], console: bool) -> list[tuple[int, str]]:
    """(offset of its first line, text) of each command in a shell block's lines."""
    commands: list[tuple[int, str]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if console:
            if not line.startswith(PROMPT):
                index += 1  # output
                continue
            line = line[len(PROMPT) :]
        if not line.strip() or line.lstrip().startswith("#"):
            index += 1
            continue
        start, parts, delimiters = index, [line], _HEREDOC.findall(line)
        index += 1
        while parts[-1].endswith("\\") and index < len(lines):
            following = lines[index]
            if console and following.startswith(CONTINUATION_PROMPT):
                following = following[len(CONTINUATION_PROMPT) :]
            parts.append(following)
            delimiters += _HEREDOC.findall(following)
            index += 1
        for _quote, delimiter in delimiters:
            while index < len(lines):
                parts.append(lines[index])
                index += 1
                if parts[-1].strip() == delimiter:
                    break
            else:
                raise MarkdownError(
                    f"line {start + 1} of the block: here-document {delimiter} is not closed"
                )
        commands.append((start, "\n".join(parts)))
    return commands


def commands(block: Block) -> list[Command]:
    """The block's commands with what the markers say about each; raises
    :class:`MarkdownError` for a marker that names no command of the block."""
    if not block.is_shell:
        return []
    try:
        split = _split(block.text.splitlines(), console=block.language == "console")
    except MarkdownError as exc:
        raise MarkdownError(f"{block.where()}: {exc}") from None
    whole = next((m for m in block.markers if m.kind == SKIP and m.prefix is None), None)
    used: set[Marker] = set()
    result: list[Command] = []
    for offset, text in split:
        command = Command(text=text, line=block.line + 1 + offset, block=block, run_as=text)
        if whole is not None:
            command = _with(command, whole)
        for marker in block.markers:
            if marker.prefix is not None and starts_with(text, marker.prefix):
                used.add(marker)
                command = _with(command, marker)
        result.append(command)
    unused = [m for m in block.markers if m.prefix is not None and m not in used]
    if unused:
        raise MarkdownError(
            f"{block.path}:{unused[0].line}: the marker names `{unused[0].prefix}`, "
            f"which no command of the block below starts with"
        )
    return result


def starts_with(command: str, prefix: str) -> bool:
    """Whether ``command`` is ``prefix`` followed by nothing or by whitespace: ``make run``
    names ``make run  # ...``, and ``kubectl apply -k deploy/`` does not name
    ``kubectl apply -k deploy/crds``."""
    command = command.lstrip()
    rest = command[len(prefix) :]
    return command.startswith(prefix) and (not rest or rest[0].isspace())


def _with(command: Command, marker: Marker) -> Command:
    if marker.kind == SKIP:
        return dataclasses.replace(command, skipped=marker.value)
    if marker.kind == REPLACE:
        return dataclasses.replace(command, run_as=marker.value, replaced=marker.reason)
    if marker.kind == EXIT:
        return dataclasses.replace(command, expected_exit=int(marker.value))
    return command
