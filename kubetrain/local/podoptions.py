"""The options of the pod subresources a node serves, read from a request's query as
kube-apiserver reads them (``PodLogOptions``, ``PodExecOptions``, ``PodPortForwardOptions``),
and written back as the node's query (the kubelet's names).

Owns: parsing, validation with kube's messages, and the node's query. Must not: find pods or
talk to nodes (:mod:`.nodeproxy` does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kubetrain import timefmt
from kubetrain.local import errors


def flag(query: Mapping[str, str], name: str) -> bool:
    """A boolean query parameter read as kube reads one: absent, ``0`` or ``false`` is false,
    anything else (even an empty value) true (``runtime.Convert_Slice_string_To_bool``)."""
    if name not in query:
        return False
    value = query[name]
    return value != "0" and value.lower() != "false"


def _integer(query: Mapping[str, str], name: str) -> int | None:
    if name not in query:
        return None
    text = query[name]
    try:
        return int(text)
    except ValueError:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


def _time(query: Mapping[str, str], name: str) -> datetime | None:
    """An RFC 3339 time (metav1.Time's query form), in UTC."""
    if name not in query:
        return None
    text = query[name]
    when = timefmt.parse(text, strict=True)
    if when is None:
        raise errors.bad_request(
            f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": not an RFC 3339 time'
        )
    return when


@dataclass(frozen=True)
class LogOptions:
    """``PodLogOptions`` as the query gives them."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    since_time: datetime | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None

    def node_query(self) -> list[tuple[str, str]]:
        """The node's query, sorted by name as Go's ``url.Values.Encode`` writes it."""
        pairs = [
            ("follow", "true" if self.follow else None),
            ("limitBytes", _str(self.limit_bytes)),
            ("previous", "true" if self.previous else None),
            ("sinceSeconds", _str(self.since_seconds)),
            ("sinceTime", self.since_time and timefmt.seconds(self.since_time)),
            ("tailLines", _str(self.tail_lines)),
            ("timestamps", "true" if self.timestamps else None),
        ]
        return [(k, v) for k, v in pairs if v is not None]


def _str(value: int | None) -> str | None:
    return None if value is None else str(value)


def log_options(query: Mapping[str, str], pod: str) -> LogOptions:
    """Parse and validate a log request's query (kube's ``ValidatePodLogOptions``: a 422 that
    names every bad field)."""
    options = LogOptions(
        container=query.get("container", ""),
        follow=flag(query, "follow"),
        previous=flag(query, "previous"),
        timestamps=flag(query, "timestamps"),
        since_seconds=_integer(query, "sinceSeconds"),
        since_time=_time(query, "sinceTime"),
        tail_lines=_integer(query, "tailLines"),
        limit_bytes=_integer(query, "limitBytes"),
    )
    causes = _log_option_causes(options)
    if causes:
        raise errors.invalid("", "PodLogOptions", pod, causes)
    return options


def _log_option_causes(o: LogOptions) -> list[dict[str, str]]:
    causes = []
    if o.tail_lines is not None and o.tail_lines < 0:
        causes.append(
            errors.field_error(
                "Invalid value", "tailLines", "must be greater than or equal to 0", o.tail_lines
            )
        )
    if o.limit_bytes is not None and o.limit_bytes < 1:
        causes.append(
            errors.field_error(
                "Invalid value", "limitBytes", "must be greater than 0", o.limit_bytes
            )
        )
    if o.since_seconds is not None and o.since_time is not None:
        causes.append(
            errors.field_error(
                "Forbidden", "", "at most one of `sinceTime` or `sinceSeconds` may be specified"
            )
        )
    elif o.since_seconds is not None and o.since_seconds < 1:
        causes.append(
            errors.field_error(
                "Invalid value", "sinceSeconds", "must be greater than 0", o.since_seconds
            )
        )
    return causes


@dataclass(frozen=True)
class ExecOptions:
    """``PodExecOptions`` as the query gives them."""

    command: tuple[str, ...] = ()
    container: str = ""
    stdin: bool = False
    stdout: bool = False
    stderr: bool = False
    tty: bool = False

    def node_query(self) -> list[tuple[str, str]]:
        """The kubelet's exec query (kube's ``streamParams``: ``input``, ``output``, ``error``
        and ``tty`` as ``1`` when on), sorted by name as Go writes it."""
        pairs = [("command", c) for c in self.command]
        for name, on in NODE_EXEC_FLAGS:
            if getattr(self, on):
                pairs.append((name, "1"))
        return pairs


# The kubelet's names for the exec streams in its query, and the option each sets.
NODE_EXEC_FLAGS: Final = (
    ("error", "stderr"),
    ("input", "stdin"),
    ("output", "stdout"),
    ("tty", "tty"),
)


def node_exec_options(query: Any) -> ExecOptions:
    """What the node reads from :meth:`ExecOptions.node_query`: each stream on when its name
    is ``1`` (the kubelet's ``getExecOptions``); ``query`` is a multi-dict."""
    flags = {option: query.get(name) == "1" for name, option in NODE_EXEC_FLAGS}
    return ExecOptions(command=tuple(query.getall("command", [])), **flags)


def exec_options(query: Any) -> ExecOptions:
    """``command`` may repeat; ``query`` is a multi-dict (``getall``)."""
    return ExecOptions(
        command=tuple(query.getall("command", [])),
        container=query.get("container", ""),
        stdin=flag(query, "stdin"),
        stdout=flag(query, "stdout"),
        stderr=flag(query, "stderr"),
        tty=flag(query, "tty"),
    )


def port_forward_ports(query: Any) -> list[int]:
    """``PodPortForwardOptions.ports`` (repeatable; each 1-65535); ``query`` is a multi-dict."""
    ports = []
    for text in query.getall("ports", []):
        try:
            port = int(text)
        except ValueError:
            raise errors.bad_request(
                f'strconv.ParseInt: parsing "{text}": invalid syntax'
            ) from None
        if not 0 < port <= 65535:
            raise errors.bad_request(f"ports: port {port} must be between 1 and 65535")
        ports.append(port)
    return ports
