"""Out of the cluster (``--webhook-url``): the operator registers the webhook configurations
itself, with ``clientConfig.url`` and its own CA, so that kube-apiserver on the same machine
(a test's, a developer's) calls it there.

A configuration that is missing is created, labelled ``app.kubernetes.io/managed-by:
kubetrain-operator``; one that exists has its webhooks set to the operator's, its metadata left
as it is. On a clean stop, the configurations that carry that label and still point at this
operator's URL are deleted (compare-and-delete on uid and resourceVersion); nothing else is
removed. A killed operator leaves them in place: kube-apiserver then refuses kubetrain's kinds
(``failurePolicy: Fail``) until the operator is back, with the same CA, from its Secret.

Owns: those writes. Must not: run in the cluster (the Deployment's configurations come from
``deploy/``; :mod:`.cabundle` keeps their CA), or make certificates.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubetrain import kube
from kubetrain.operator.webhook import configurations

log = logging.getLogger(__name__)

MANAGED_BY: Final = "app.kubernetes.io/managed-by"
LABELS: Final = {MANAGED_BY: "kubetrain-operator"}
TARGETS: Final = (
    (configurations.VALIDATING_CONFIGURATIONS, False),
    (configurations.MUTATING_CONFIGURATIONS, True),
)


class Registrar:
    def __init__(self, client: kube.Client, url: str) -> None:
        self.client = client
        self.url = url.rstrip("/")

    async def register(self, ca_bundle: str) -> list[str]:
        """Create or update both configurations to call ``url`` trusting ``ca_bundle``; the
        names of those written."""
        written = []
        for resource, mutating in TARGETS:
            desired = configurations.configuration(
                mutating, labels=LABELS, url=self.url, ca_bundle=ca_bundle
            )
            name = desired["metadata"]["name"]
            try:
                found = await self.client.get(resource, name)
            except kube.NotFound:
                try:
                    await self.client.create(resource, desired)
                except kube.AlreadyExists:
                    continue  # written by another at the same time: judged at the next check
                log.info("%s %s registered for %s", resource.kind, name, self.url)
                written.append(name)
                continue
            if _covers(found.get("webhooks") or [], desired["webhooks"]):
                continue
            if (found["metadata"].get("labels") or {}).get(MANAGED_BY) != LABELS[MANAGED_BY]:
                log.warning(
                    "%s %s was not created by an operator out of the cluster; its webhooks now "
                    "call %s, and it is left in place when the operator stops",
                    resource.kind,
                    name,
                    self.url,
                )
            try:
                await self.client.replace(resource, {**found, "webhooks": desired["webhooks"]})
            except kube.Conflict:
                continue  # changed meanwhile: judged again at the next check
            log.info("%s %s now calls %s", resource.kind, name, self.url)
            written.append(name)
        return written

    async def unregister(self) -> list[str]:
        """Delete the configurations this operator's kind created for this URL; the names
        of those deleted."""
        deleted = []
        for resource, mutating in TARGETS:
            name = configurations.MUTATING if mutating else configurations.VALIDATING
            try:
                found = await self.client.get(resource, name)
            except kube.NotFound:
                continue
            meta = found["metadata"]
            if (meta.get("labels") or {}).get(MANAGED_BY) != LABELS[MANAGED_BY]:
                continue
            if not self._calls_here(found.get("webhooks") or []):
                continue
            preconditions = {"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}
            try:
                await self.client.delete(resource, name, preconditions=preconditions)
            except (kube.NotFound, kube.Conflict):
                continue  # gone, or changed by someone else: theirs now
            log.info("%s %s unregistered", resource.kind, name)
            deleted.append(name)
        return deleted

    def _calls_here(self, webhooks: Sequence[Mapping[str, Any]]) -> bool:
        urls = [str((w.get("clientConfig") or {}).get("url") or "") for w in webhooks]
        return bool(urls) and all(u.startswith(self.url + "/") for u in urls)


def _covers(found: Sequence[Mapping[str, Any]], desired: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the stored webhooks are the desired ones: the same names in the same order,
    each with every field the operator sets (the server adds its defaults to the rest)."""
    if [w.get("name") for w in found] != [w["name"] for w in desired]:
        return False
    return all(
        all(have.get(key) == value for key, value in want.items())
        for have, want in zip(found, desired, strict=True)
    )
