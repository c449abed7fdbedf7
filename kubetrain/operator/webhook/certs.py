"""The webhook's certificate, kept in a Secret: made once, renewed before it expires, and the
same after a restart (upstream's cert-controller, with the Secret read through the API rather
than mounted, so a renewal is served at once instead of after the kubelet's next sync).

The Secret holds ``ca.crt``, ``ca.key``, ``tls.crt`` and ``tls.key`` (type
``kubernetes.io/tls``, the keys cert-manager writes too). Managed (``internal``), a missing,
broken or nearly expired CA is replaced together with the serving certificate; a serving
certificate that is nearly expired, not signed by the CA or not naming the webhook's hosts is
replaced alone, under the same CA, so the ``caBundle`` kube-apiserver holds stays valid.
Writes are compare-and-swap: when replicas race, one wins and the others read its result.
Unmanaged (``none``), the Secret is only read.

Owns: reading, judging and writing that Secret. Must not: serve, or touch the webhook
configurations (:mod:`.cabundle` and :mod:`.registration` do).
"""

from __future__ import annotations

import base64
import datetime
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import kube, pki
from kubetrain.errors import KubetrainError
from kubetrain.operator.webhook import settings as settings_

log = logging.getLogger(__name__)

SECRETS: Final = kube.Resource("", "v1", "secrets", kind="Secret")
CA_CERT: Final = "ca.crt"
CA_KEY: Final = "ca.key"
TLS_CERT: Final = "tls.crt"
TLS_KEY: Final = "tls.key"
LABELS: Final = {"app.kubernetes.io/name": "kubetrain", "app.kubernetes.io/component": "webhook"}
ATTEMPTS: Final = 5  # compare-and-swap tries before giving up until the next check


class NotReady(KubetrainError):
    """There is no certificate to serve with yet; the message says what is missing."""


@dataclass(frozen=True)
class Bundle:
    """What the webhook serves with, and the CA kube-apiserver must trust for it (its key is
    empty where the certificate is not managed here)."""

    ca: pki.Pair
    serving: pki.Pair

    @property
    def ca_bundle(self) -> str:
        """The CA as a configuration's ``caBundle`` wants it: base64 of the PEM."""
        return base64.b64encode(self.ca.cert).decode()


class Keeper:
    """Keeps the webhook's certificate in the Secret ``name`` of ``namespace``."""

    def __init__(
        self,
        client: kube.Client,
        settings: settings_.Settings,
        *,
        clock: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.clock = clock or (lambda: datetime.datetime.now(datetime.timezone.utc))
        self.names, self.ips = settings.serving_names()

    @property
    def manages(self) -> bool:
        return self.settings.cert_management == settings_.INTERNAL

    @property
    def where(self) -> str:
        return f"Secret {self.settings.namespace}/{self.settings.secret_name}"

    async def ensure(self) -> Bundle:
        """The bundle to serve with now: made or renewed first when managed. Raises
        :class:`NotReady` when unmanaged and the Secret holds none yet, and the client's
        errors (a missing namespace, a lost race repeated :data:`ATTEMPTS` times)."""
        for _ in range(ATTEMPTS):
            secret = await self._get()
            current = read(secret)
            if not self.manages:
                if current is None:
                    raise NotReady(
                        f"{self.where} holds no {TLS_CERT}, {TLS_KEY} and {CA_CERT} yet "
                        "(--cert-management=none: cert-manager issues them)"
                    )
                return current
            why = self.renewal(current)
            if why is None:
                assert current is not None
                return current
            made = self.renewed(current if why.keeps_ca else None)
            try:
                await self._write(secret, made)
            except (kube.Conflict, kube.AlreadyExists):
                continue  # another replica wrote first: judge what it wrote
            log.info("webhook certificate in %s %s: %s", self.where, why.action, why.reason)
            return made
        raise kube.Conflict(
            f"{self.where} kept changing while its certificate was renewed",
            code=409,
            reason="Conflict",
        )

    def renewal(self, current: Bundle | None) -> Renewal | None:
        """Why ``current`` must be replaced, or None when it serves as it is."""
        now = self.clock()
        validity = self.settings.validity
        if current is None:
            return Renewal("made", "there was no certificate", keeps_ca=False)
        try:
            ca = pki.facts(current.ca.cert)
            serving = pki.facts(current.serving.cert)
        except ValueError:
            return Renewal("replaced", "it could not be read", keeps_ca=False)
        if not ca.is_ca or not pki.matches(current.ca):
            return Renewal("replaced", "its CA could not sign", keeps_ca=False)
        if ca.not_after - now < validity.renew_ca_before:
            return Renewal("replaced", f"the CA expires {ca.not_after:%Y-%m-%d}", keeps_ca=False)
        if not pki.signed_by(current.serving.cert, current.ca.cert):
            return Renewal("renewed", "it was not signed by the CA", keeps_ca=True)
        if not pki.matches(current.serving):
            return Renewal("renewed", "its key did not match it", keeps_ca=True)
        missing = (set(self.names) - serving.names) | (set(self.ips) - serving.ips)
        if missing:
            return Renewal("renewed", f"it did not name {', '.join(sorted(missing))}", True)
        if serving.not_after - now < validity.renew_serving_before:
            return Renewal("renewed", f"it expires {serving.not_after:%Y-%m-%d}", keeps_ca=True)
        return None

    def renewed(self, current: Bundle | None) -> Bundle:
        """A new serving certificate, under ``current``'s CA when given, else a new CA."""
        now = self.clock()
        validity = self.settings.validity
        if current is not None:
            ca = current.ca
        else:
            ca = pki.new_ca(f"{self.settings.service_name}-webhook-ca", now, validity.ca)
        serving = pki.issue_serving(
            ca,
            f"{self.settings.service_name}-webhook",
            now,
            validity.serving,
            names=self.names,
            ips=self.ips,
        )
        return Bundle(ca, serving)

    async def _get(self) -> dict[str, Any] | None:
        try:
            return await self.client.get(
                SECRETS, self.settings.secret_name, namespace=self.settings.namespace
            )
        except kube.NotFound:
            return None

    async def _write(self, secret: dict[str, Any] | None, made: Bundle) -> None:
        data = encode(made)
        if secret is None:
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": self.settings.secret_name,
                    "namespace": self.settings.namespace,
                    "labels": dict(LABELS),
                },
                "type": "kubernetes.io/tls",
                "data": data,
            }
            await self.client.create(SECRETS, body, namespace=self.settings.namespace)
            return
        body = dict(secret)
        body["data"] = {**(secret.get("data") or {}), **data}
        await self.client.replace(SECRETS, body, namespace=self.settings.namespace)


@dataclass(frozen=True)
class Renewal:
    action: str  # made, replaced, renewed
    reason: str
    keeps_ca: bool


def read(secret: Mapping[str, Any] | None) -> Bundle | None:
    """The bundle in ``secret``, or None when a key is missing or empty. ``ca.key`` is needed
    only to renew, so an unmanaged Secret (cert-manager's) does without it."""
    data = (secret or {}).get("data") or {}
    try:
        found = {
            k: base64.b64decode(data.get(k) or "") for k in (CA_CERT, CA_KEY, TLS_CERT, TLS_KEY)
        }
    except ValueError:
        return None
    if not (found[CA_CERT] and found[TLS_CERT] and found[TLS_KEY]):
        return None
    return Bundle(
        pki.Pair(found[CA_CERT], found[CA_KEY]), pki.Pair(found[TLS_CERT], found[TLS_KEY])
    )


def encode(bundle: Bundle) -> dict[str, str]:
    """The Secret's ``data`` for ``bundle``."""
    values = {
        CA_CERT: bundle.ca.cert,
        CA_KEY: bundle.ca.key,
        TLS_CERT: bundle.serving.cert,
        TLS_KEY: bundle.serving.key,
    }
    return {k: base64.b64encode(v).decode() for k, v in values.items()}
