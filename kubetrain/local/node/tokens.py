"""What pods on this node need to reach the API server: the tokens of their
``serviceAccountToken`` projections (:class:`Tokens`, as the kubelet's token manager keeps
them), the API server's address for their ``KUBERNETES_SERVICE_*`` variables, and whether
the ServiceAccount mount can be made here at all.

Owns: the token cache. Must not: write tokens to disk (a pod's worker does, with its other
volume files).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from kubetrain import kube, timefmt
from kubetrain.local.node import podspec

SERVICE_ACCOUNTS: Final = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
# The kubelet's token manager asks for a new token once 80% of the old one's life is over.
TOKEN_REFRESH: Final = 0.8
NO_CREDENTIALS: Final = "ServiceAccountTokenNotMounted"


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Tokens:
    """The tokens of the pods' ``serviceAccountToken`` projections, as the kubelet's token
    manager keeps them: requested from ``serviceaccounts/<name>/token`` bound to the pod, with
    the audience and lifetime the projection asks for, and asked for again once
    :data:`TOKEN_REFRESH` of their life is over (a pod's worker fetches its sources every
    ``resync`` seconds, so the file is rewritten in time). Forgotten with the pod."""

    def __init__(self, client: kube.Client, clock: Callable[[], datetime] = _utcnow) -> None:
        self.client = client
        self._now = clock
        self._held: dict[podspec.TokenNeed, tuple[str, datetime]] = {}  # token, refresh after

    async def get(self, namespace: str, need: podspec.TokenNeed) -> str:
        """The token for ``need``; raises :class:`kube.ApiError` when the API issues none."""
        held = self._held.get(need)
        if held is not None and self._now() < held[1]:
            return held[0]
        spec: dict[str, Any] = {
            "expirationSeconds": need.expiration_seconds,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": need.pod_name,
                "uid": need.pod_uid,
            },
        }
        if need.audience:
            spec["audiences"] = [need.audience]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        asked = self._now()
        answer = await self.client.create(
            SERVICE_ACCOUNTS,
            body,
            namespace=namespace,
            name=need.service_account,
            subresource="token",
        )
        status = answer.get("status") or {}
        token = str(status.get("token") or "")
        expires = _parse_time(status.get("expirationTimestamp")) or (
            asked + timedelta(seconds=need.expiration_seconds)
        )
        self._held[need] = (token, asked + (expires - asked) * TOKEN_REFRESH)
        return token

    def forget(self, uid: str) -> None:
        for need in [n for n in self._held if n.pod_uid == uid]:
            del self._held[need]


def _parse_time(text: Any) -> datetime | None:
    return timefmt.parse(text)


def api_address(url: str) -> tuple[str, int] | None:
    """The host and port of the API server's URL (``https://127.0.0.1:6443``), for the pods'
    ``KUBERNETES_SERVICE_*``: on this node they share the host network, so the address the
    node reaches the API server at is the one its pods reach it at."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def credentials_mountable(isolation: str) -> str:
    """Why pods on this node cannot get the ServiceAccount mount at
    ``/var/run/secrets/kubernetes.io/serviceaccount``, or "" when they can: it needs a private
    mount namespace, where the mount point is made without touching the host (on the host, that
    directory would make in-cluster detectors take the machine for a pod)."""
    if isolation != "namespace":
        return "this node runs pods without a private mount namespace"
    return ""


def api_access_mounts(pod: Mapping[str, Any]) -> bool:
    """Whether a container of ``pod`` mounts the ServiceAccount's API access volume."""
    return any(
        podspec.is_api_access_mount(m)
        for c in podspec.all_containers(pod)
        for m in c.get("volumeMounts") or []
        if isinstance(m, Mapping)
    )
