"""The Services and pods of each namespace this node has pods in, as the node watches them
for the pods' hosts files (:mod:`.hosts` writes those).

Owns: what one namespace's names are, and when they changed. Must not: watch (the agent
does) or write files.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any


class NamespaceView:
    """The Services and pods of one namespace this node has pods in, for their hosts files."""

    def __init__(self) -> None:
        self.services: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.task: asyncio.Task[None] | None = None

    def signature(self) -> tuple[Any, ...]:
        """What the hosts files depend on; a change here rewrites them."""
        services = sorted(
            (name, (s.get("spec") or {}).get("type")) for name, s in self.services.items()
        )
        pods = sorted(
            {
                ((p.get("spec") or {}).get("hostname"), (p.get("spec") or {}).get("subdomain"))
                for p in self.pods.values()
                if (p.get("spec") or {}).get("hostname") and (p.get("spec") or {}).get("subdomain")
            }
        )
        return (tuple(services), tuple(pods))


def names_of(plural: str, obj: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    """What one Service or pod adds to its namespace's hosts files."""
    if obj is None:
        return None
    spec = obj.get("spec") or {}
    if plural == "services":
        return ("service", str((obj.get("metadata") or {}).get("name") or ""), spec.get("type"))
    if spec.get("hostname") and spec.get("subdomain"):
        return ("pod", spec["hostname"], spec["subdomain"])
    return None
