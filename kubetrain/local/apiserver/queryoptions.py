"""What a request asks for besides its body: write, list and watch options, the
resourceVersion a client names, and a delete's propagation policy and preconditions.

kube's ``metav1.CreateOptions``/``UpdateOptions``/``PatchOptions``, ``ListOptions`` and
``DeleteOptions``, as the registry takes them: the server decodes the query into these, and
the registry reads them. The checks here are the ones kube's option validation makes, in its
words.

What it must not do: read HTTP (the server fills these in) or the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.local.apiserver import errors, store


@dataclass
class Options:
    """What a write request asked for besides its body."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = ""  # Strict | Warn | Ignore; "" is kube's default, Warn
    force: bool = False
    user_agent: str = ""
    warnings: list[str] = field(default_factory=list)
    applied: bool = False  # the object came from an apply, which recorded managedFields

    def manager(self, default: str = "unknown") -> str:
        """The field manager: as given, else from the user agent, as kube derives it."""
        if self.field_manager:
            return self.field_manager
        agent = self.user_agent.split("/", 1)[0].strip()
        return agent[:128] if agent else default


@dataclass
class ListOptions:
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


@dataclass
class WatchOptions:
    label_selector: str = ""
    field_selector: str = ""
    resource_version: str = ""
    allow_bookmarks: bool = False
    send_initial_events: bool | None = None


def parse_rv(text: str) -> int:
    """A resourceVersion as kube writes them here: a non-negative decimal integer."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0 or str(value) != text.strip():
        raise errors.bad_request(
            f'invalid resource version "{text}": resource version is not well formed'
        )
    return value


def propagation(options: Mapping[str, Any]) -> str:
    """A delete's propagation policy: as given, from the older ``orphanDependents``, or ""
    (the resource's default)."""
    policy = options.get("propagationPolicy")
    if policy in ("Foreground", "Background", "Orphan"):
        return policy
    if policy is not None:
        raise errors.invalid(
            "",
            "DeleteOptions",
            "",
            [
                errors.field_error(
                    "Unsupported value",
                    "propagationPolicy",
                    'supported values: "Foreground", "Background", "Orphan", "nil"',
                    policy,
                )
            ],
        )
    orphan = options.get("orphanDependents")
    if orphan is True:
        return "Orphan"
    if orphan is False:
        return "Background"
    return ""


def deletion_finalizers(policy: str, finalizers: list[str]) -> list[str]:
    """The object's finalizers once a delete with propagation ``policy`` marks it: the
    policy's own (``foregroundDeletion``, ``orphan``) added or removed, as kube's store does
    for the garbage collector. ``finalizers`` is not edited."""
    finalizers = list(finalizers)
    if policy == "Foreground" and "foregroundDeletion" not in finalizers:
        finalizers.append("foregroundDeletion")
        if "orphan" in finalizers:
            finalizers.remove("orphan")
    elif policy == "Orphan" and "orphan" not in finalizers:
        finalizers.append("orphan")
        if "foregroundDeletion" in finalizers:
            finalizers.remove("foregroundDeletion")
    elif policy == "Background":
        finalizers = [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
    return finalizers


def check_preconditions(
    group: str, plural: str, name: str, current: store.Item, options: Mapping[str, Any]
) -> None:
    """A 409 when a delete's ``preconditions`` (uid, resourceVersion) do not match the object."""
    pre = options.get("preconditions") or {}
    if not isinstance(pre, Mapping):
        return
    meta = current.obj.get("metadata") or {}
    uid = pre.get("uid")
    if uid and uid != meta.get("uid"):
        raise errors.conflict(
            group,
            plural,
            name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            f"{meta.get('uid')}",
        )
    rv = pre.get("resourceVersion")
    if rv and str(rv) != meta.get("resourceVersion"):
        raise errors.conflict(
            group,
            plural,
            name,
            f"Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in "
            f"object meta: {meta.get('resourceVersion')}",
        )
