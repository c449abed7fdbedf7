"""The CA written into the ``caBundle`` of the webhook configurations that ``deploy/``
installs, so kube-apiserver trusts the certificate the webhook serves (upstream's
cert-controller does the same to ``validator.training-operator.kubeflow.org``).

Only ``caBundle`` is changed, on every webhook of the two configurations, and only when it
differs, with a compare-and-swap PUT: everything else stays as the manifests say. A
configuration that does not exist yet is reported once and looked for again at each check.

Owns: that field. Must not: create or delete configurations (out of the cluster,
:mod:`.registration` registers its own), or make certificates.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from kubetrain import kube
from kubetrain.operator.webhook import configurations

log = logging.getLogger(__name__)

TARGETS: Final = (
    (configurations.VALIDATING_CONFIGURATIONS, configurations.VALIDATING),
    (configurations.MUTATING_CONFIGURATIONS, configurations.MUTATING),
)


class Injector:
    def __init__(self, client: kube.Client) -> None:
        self.client = client
        self._missing: set[str] = set()  # reported already

    async def inject(self, ca_bundle: str) -> list[str]:
        """Write ``ca_bundle`` (base64 PEM) where it differs; the configurations written."""
        written = []
        for resource, name in TARGETS:
            try:
                found = await self.client.get(resource, name)
            except kube.NotFound:
                if name not in self._missing:
                    self._missing.add(name)
                    log.warning(
                        "%s %s does not exist, so kube-apiserver calls no kubetrain webhook "
                        "for it (kubectl apply -k deploy/ installs it); looking again at each "
                        "check",
                        resource.kind,
                        name,
                    )
                continue
            self._missing.discard(name)
            if not _set(found, ca_bundle):
                continue
            try:
                await self.client.replace(resource, found)
            except kube.Conflict:
                log.info("%s %s changed while its caBundle was written", resource.kind, name)
                continue  # written at the next check, from what it is then
            log.info("caBundle of %s %s written", resource.kind, name)
            written.append(name)
        return written


def _set(configuration: dict[str, Any], ca_bundle: str) -> bool:
    """Set ``caBundle`` on every webhook; whether anything changed."""
    changed = False
    for webhook in configuration.get("webhooks") or []:
        config = webhook.setdefault("clientConfig", {})
        if config.get("caBundle") != ca_bundle:
            config["caBundle"] = ca_bundle
            changed = True
    return changed
