"""``kubetrain validate -f FILE``: check manifests offline and print them defaulted.

Reads YAML (several documents per file) or JSON (an object, or a ``List`` of them), judges
every object with :func:`kubetrain.api.review` exactly as admission would, and either prints
the defaulted objects or every problem of every object, one ``<Kind>/<name>: <field>:
<message>`` line each. TrainJobs are checked against the runtimes given in the same
invocation, since offline there is no API server to look them up in. Objects of other API
groups (a PersistentVolumeClaim or Secret beside a job, as ``kubetrain run -f`` takes them)
are passed on as given, with a note: the API server checks those.

This module owns reading files and printing; judging objects belongs to ``kubetrain.api``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

import yaml

from kubetrain import api

SUFFIXES = (".yaml", ".yml", ".json")
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
JUDGED_GROUPS = ("kubeflow.org", "trainer.kubeflow.org")  # whose kinds kubetrain.api knows
# apiVersion as Kubernetes spells it: ``v1``, or a DNS subdomain group, ``/``, a version label
_API_VERSION = re.compile(
    r"(?:(?P<group>[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?"
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
)
NOT_AN_OBJECT = "must be an object with apiVersion and kind"
MAX_DEPTH = 100  # far beyond any real manifest, well within what printing can serialise
# Bytes per input. The API server takes at most 3 MiB per request, so no larger manifest of
# one object can be applied; the limit keeps the YAML parser (pure Python: seconds per MiB)
# from running for minutes, and its memory from growing with the input.
MAX_INPUT = 4 * 1024 * 1024
# Values per object: more than an input of MAX_INPUT bytes can spell out. Only YAML aliases
# (one node referred to many times, a "billion laughs") get past it, and copying those would
# take the memory and time of every repetition.
MAX_VALUES = 2_000_000


class _Loader(yaml.SafeLoader):
    """YAML as Kubernetes reads it: a timestamp stays the string the user wrote."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class ReadError(Exception):
    """A file that cannot be read or parsed; the message is the whole line to print."""


class NotJSON(Exception):
    """A document that is no Kubernetes object: not a mapping, or not expressible as JSON."""


@dataclass(frozen=True)
class Document:
    """One object from the input, with where it came from for messages about its shape."""

    source: str
    number: int  # 1-based position of the document in its file
    raw: Any


@dataclass(frozen=True)
class Verdict:
    """The review of one object, and a note when a runtime it needs was not given."""

    review: api.Review
    note: str | None = None  # why some checks were skipped
    unchecked: dict[str, Any] | None = None  # an object of another group, printed as given

    def printed(self) -> dict[str, Any]:
        if self.unchecked is not None:
            return self.unchecked
        assert self.review.obj is not None
        return self.review.obj.to_dict()


FILES_HELP = "a YAML or JSON file, a directory of them, or - for stdin (repeatable)"


def add_files_argument(parser: argparse.ArgumentParser, help: str = FILES_HELP) -> None:
    """The ``-f``/``--filename`` option of every verb that reads manifests through
    :func:`load`, spelled once so that they all read files alike."""
    parser.add_argument(
        "-f", "--filename", action="append", required=True, metavar="FILE", help=help
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check manifests and print them defaulted",
        description="Check job manifests as admission would, and print them defaulted.",
    )
    add_files_argument(parser)
    parser.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json", "name"),
        default="yaml",
        help="how to print the defaulted objects (default: yaml)",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print nothing when every object is valid"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit 0 with the defaulted objects on stdout, or 1 with every problem on stderr.

    All or nothing, like applying the files would be: one bad object fails the whole run.
    """
    documents, problems = load(args.filename)
    objects = []
    for document in documents:
        try:
            objects.append(_object(document.raw))
        except NotJSON as exc:
            problems.append(f"{document.source}: document {document.number}: {exc}")
    if not documents and not problems:
        problems.append("no objects found in " + ", ".join(map(_label, args.filename)))
    verdicts = review_all(objects)
    ok = not problems and all(v.review.ok for v in verdicts)
    if not (ok and args.quiet):
        for verdict in verdicts:
            if verdict.note:
                print(f"note: {verdict.note}", file=sys.stderr)
            for warning in verdict.review.warnings:
                print(f"Warning: {verdict.review.subject}: {warning}", file=sys.stderr)
    if not ok:
        for line in problems + [m for v in verdicts for m in v.review.messages()]:
            print(line, file=sys.stderr)
        return 1
    if not args.quiet:
        sys.stdout.write(render([v.printed() for v in verdicts], args.output))
    return 0


# --- reading ------------------------------------------------------------------------------


def load(names: list[str]) -> tuple[list[Document], list[str]]:
    """Every document in the named inputs, and a line for each input that could not be read."""
    documents: list[Document] = []
    problems: list[str] = []
    for name in names:
        try:
            paths = _paths(name)
        except ReadError as exc:
            problems.append(str(exc))
            continue
        for path in paths:
            try:
                found, problem = _parse(_label(path), _read(path))
            except ReadError as exc:
                problems.append(str(exc))
                continue
            documents += found
            problems += [problem] if problem else []
    return documents, problems


def _label(name: str) -> str:
    return "<stdin>" if name == "-" else name


def _paths(name: str) -> list[str]:
    """``name`` itself, or a directory's manifest files in name order (not recursive)."""
    if name == "-" or not os.path.isdir(name):
        return [name]
    try:
        entries = sorted(os.listdir(name))
    except OSError as exc:
        raise ReadError(f"{name}: {exc.strerror}") from exc
    paths = [os.path.join(name, entry) for entry in entries if entry.endswith(SUFFIXES)]
    return [path for path in paths if os.path.isfile(path)]


def _read(path: str) -> str:
    try:
        if path == "-":
            stdin = sys.stdin
            if hasattr(stdin, "buffer"):
                data = stdin.buffer.read(MAX_INPUT + 1)
            else:
                data = stdin.read(MAX_INPUT + 1).encode()
        else:
            with open(path, "rb") as f:
                data = f.read(MAX_INPUT + 1)
    except OSError as exc:
        raise ReadError(f"{_label(path)}: {exc.strerror}") from exc
    if len(data) > MAX_INPUT:
        raise ReadError(
            f"{_label(path)}: larger than {MAX_INPUT // (1024 * 1024)} MiB; the API server "
            "takes at most 3 MiB per object: split the file"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadError(f"{_label(path)}: not UTF-8 text (byte {exc.start + 1})") from exc


def _parse(source: str, text: str) -> tuple[list[Document], str | None]:
    """The documents in ``text`` (``List`` objects expanded), and the syntax error, if any.

    Documents before a syntax error are kept, so their own problems are reported too.
    """
    if source.endswith(".json") or text.lstrip().startswith(("{", "[")):
        try:
            return _expand(source, [json.loads(text)]), None
        except RecursionError:
            return [], f"{source}: nested too deeply"
        except json.JSONDecodeError as exc:
            if source.endswith(".json"):
                return [], f"{source}: line {exc.lineno}, column {exc.colno}: {exc.msg}"
            # not JSON after all: YAML flow style, or a mistake YAML can locate as well
    documents: list[Any] = []
    try:
        documents.extend(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        return _expand(source, documents), f"{source}: {_yaml_problem(exc)}"
    except RecursionError:
        return _expand(source, documents), f"{source}: nested too deeply"
    return _expand(source, documents), None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """``line L, column C: <problem>`` (1-based), plus where the broken construct began."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return str(exc)
    mark, problem = exc.problem_mark, exc.problem or "invalid YAML"
    text = f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    start = exc.context_mark
    if exc.context and start is not None and (start.line, start.column) != (mark.line, mark.column):
        text += f" ({exc.context} at line {start.line + 1}, column {start.column + 1})"
    return text


def _expand(source: str, documents: list[Any]) -> list[Document]:
    found = []
    for number, raw in enumerate(documents, start=1):
        if raw is None:
            continue  # an empty document, e.g. after a trailing ---
        if _is_list(raw):
            found += [Document(source, number, item) for item in raw["items"]]
        else:
            found.append(Document(source, number, raw))
    return found


def to_object(raw: Any) -> dict[str, Any]:
    """A document as a Kubernetes object (see :func:`_object`), for commands that send it."""
    return _object(raw)


def _object(raw: Any) -> dict[str, Any]:
    """A fresh JSON-shaped copy of ``raw``, or :class:`NotJSON` saying where it is not one.

    Kubernetes objects are JSON; YAML can say more (recursive aliases, ``!!binary``, ``!!set``,
    ``.nan``), and those would otherwise fail deep inside validation or printing. Copying also
    undoes YAML anchors, so defaulting one place never changes another.
    """
    if not isinstance(raw, dict):
        raise NotJSON(NOT_AN_OBJECT)
    return _plain(raw, "", set(), [MAX_VALUES])


def _plain(value: Any, path: str, open_ids: set[int], budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:  # only aliases get here: the input limit allows fewer values
        raise NotJSON(f"{path}: more than {MAX_VALUES} values (YAML aliases repeated)")
    if isinstance(value, str | bool | int) or value is None:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if not isinstance(value, dict | list):
        raise NotJSON(f"{path or '<root>'}: {_yaml_name(value)} has no JSON form")
    if id(value) in open_ids:
        raise NotJSON(f"{path or '<root>'}: contains itself (a recursive YAML alias)")
    if len(open_ids) >= MAX_DEPTH:
        raise NotJSON(f"{path}: nested more than {MAX_DEPTH} levels deep")
    open_ids.add(id(value))
    if isinstance(value, dict):
        copied: Any = {
            key: _plain(item, f"{path}.{key}" if path else str(key), open_ids, budget)
            for key, item in value.items()
        }
    else:
        copied = [_plain(item, f"{path}[{i}]", open_ids, budget) for i, item in enumerate(value)]
    open_ids.discard(id(value))
    return copied


def _yaml_name(value: Any) -> str:
    """How the user wrote a value that JSON cannot hold: ``.nan``, ``!!binary``, ``!!set``."""
    if isinstance(value, float):
        return ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
    tags = {bytes: "!!binary", set: "!!set", datetime.date: "!!timestamp"}
    return next((f"a {t} value" for k, t in tags.items() if isinstance(value, k)), "this value")


def _is_list(raw: Any) -> bool:
    """A ``List`` (or ``<Kind>List``), as ``kubectl get -o yaml`` prints several objects."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    return isinstance(kind, str) and kind.endswith("List") and isinstance(raw.get("items"), list)


# --- judging ------------------------------------------------------------------------------


def review_all(raws: list[dict[str, Any]]) -> list[Verdict]:
    """Review every object; TrainJobs see the runtimes among ``raws`` (defaulted if valid)."""
    runtimes: dict[tuple[str, str | None, str], api.Runtime | None] = {}
    verdicts: dict[int, Verdict] = {}
    for i, raw in enumerate(raws):
        if raw.get("kind") in RUNTIME_KINDS:
            verdicts[i] = Verdict(api.review(raw))
            key = _runtime_key(raw)
            if key is not None:
                runtimes[key] = verdicts[i].review.obj or api.parse(raw)[0]  # type: ignore[assignment]

    def find_runtime(kind: str, namespace: str | None, name: str) -> api.Runtime | None:
        return runtimes.get((kind, namespace if kind == "TrainingRuntime" else None, name))

    for i, raw in enumerate(raws):
        if i in verdicts:
            continue
        if not judged(raw):
            subject = api.subject(raw)
            note = (
                f"{subject}: not a kubetrain kind; passed on unchecked (the API server checks it)"
            )
            verdicts[i] = Verdict(api.Review(subject, None), note, unchecked=raw)
            continue
        ref = _runtime_ref(raw)
        if ref is None or runtimes.get(ref) is not None:
            verdicts[i] = Verdict(api.review(raw, find_runtime=find_runtime))
            continue
        if ref in runtimes:  # given but unreadable: its own errors say why; skip, quietly
            verdicts[i] = Verdict(api.review(raw))
            continue
        kind, _, name = ref
        note = (
            f"{api.subject(raw)}: runtime {kind}/{name} is not in the given files; "
            "checks that need it were skipped"
        )
        verdicts[i] = Verdict(api.review(raw), note)
    return [verdicts[i] for i in range(len(raws))]


def judged(raw: dict[str, Any]) -> bool:
    """Whether this command judges ``raw``: an object of a kubeflow group, or one whose
    apiVersion or kind is missing or malformed (review says what is wrong). Well-formed
    objects of other groups are passed on to the API server unchecked."""
    version, kind = raw.get("apiVersion"), raw.get("kind")
    if not isinstance(version, str) or not isinstance(kind, str) or not kind.strip():
        return True
    found = _API_VERSION.fullmatch(version)
    return found is None or (found.group("group") or "") in JUDGED_GROUPS


def _namespace(raw: dict[str, Any]) -> str:
    meta = raw.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return namespace if isinstance(namespace, str) and namespace else "default"


def _runtime_key(raw: dict[str, Any]) -> tuple[str, str | None, str] | None:
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return None
    kind = raw["kind"]
    return kind, _namespace(raw) if kind == "TrainingRuntime" else None, name


def _runtime_ref(raw: dict[str, Any]) -> tuple[str, str | None, str] | None:
    """The runtime a TrainJob names, as a lookup key; None if it names none we could supply."""
    obj, _ = api.parse(raw)
    if not isinstance(obj, api.TrainJob) or obj.spec is None or obj.spec.runtime_ref is None:
        return None
    ref = obj.spec.runtime_ref
    kind = ref.kind or "ClusterTrainingRuntime"
    if not ref.name or kind not in RUNTIME_KINDS:
        return None
    return kind, _namespace(raw) if kind == "TrainingRuntime" else None, ref.name


# --- printing -----------------------------------------------------------------------------


def render(wire: list[dict[str, Any]], output: str) -> str:
    """The objects as YAML documents, JSON (a List when several), or names."""
    if output == "name":
        return "".join(f"{_resource(d)}/{_name(d)}\n" for d in wire)
    if output == "json":
        body = wire[0] if len(wire) == 1 else {"apiVersion": "v1", "kind": "List", "items": wire}
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump_all(wire, sort_keys=False, allow_unicode=True)


def _resource(obj: dict[str, Any]) -> str:
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    kind = str(obj.get("kind", "")).lower()
    return f"{kind}.{group}" if group else kind  # kubectl's -o name: core kinds bare


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or meta.get("generateName") or "")
