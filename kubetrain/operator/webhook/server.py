"""The admission webhook as the manager runs it: an HTTPS site with one route per webhook
path, its certificate from the Secret, its CA where kube-apiserver reads it.

Its life, as upstream's webhook server and cert-controller:

1. the certificate is made or read (:mod:`.certs`), retried with back-off while that fails
   (a missing namespace, cert-manager not done yet), each failure logged;
2. the CA is written into the configurations (:mod:`.cabundle`) or, out of the cluster, the
   configurations are registered (:mod:`.registration`); a failure is logged and tried again
   at the next check, since kube-apiserver may call the webhook with the CA it holds already;
3. the site starts and :attr:`Webhook.ready` is set: /readyz passes and the controllers start;
4. every ``refresh`` seconds the certificate is checked again (renewed, or re-read from
   cert-manager's Secret) and the CA re-written where someone changed it; a new certificate
   is served to new connections at once.

On a clean stop, an operator out of the cluster unregisters what it registered.

Reviews look up runtimes and PriorityClasses with a GET each (never from a cache, which may
not have seen a runtime created a moment before the job that names it), bounded well inside
the webhook's timeout.

Owns: the HTTP side and that lifecycle. Must not: judge objects (:mod:`.admission` does).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, Final

from aiohttp import web

from kubetrain import _aio, kube, timefmt
from kubetrain.operator.runtime import server
from kubetrain.operator.webhook import admission, cabundle, certs, configurations, registration
from kubetrain.operator.webhook import settings as settings_

log = logging.getLogger(__name__)

TRAINING_RUNTIMES: Final = kube.Resource(
    "trainer.kubeflow.org", "v1alpha1", "trainingruntimes", kind="TrainingRuntime"
)
CLUSTER_TRAINING_RUNTIMES: Final = kube.Resource(
    "trainer.kubeflow.org",
    "v1alpha1",
    "clustertrainingruntimes",
    namespaced=False,
    kind="ClusterTrainingRuntime",
)
PRIORITY_CLASSES: Final = kube.Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass"
)
LOOKUP_TIMEOUT: Final = 4.0  # seconds per GET: two fit in the webhook's 10 s
MAX_BODY: Final = 16 * 1024**2  # an AdmissionReview holds the object and the old one
RETRY_FIRST: Final = 1.0  # seconds before the first certificate retry, doubled up to
RETRY_MAX: Final = 30.0
UNREGISTER_TIMEOUT: Final = 10.0


class Webhook:
    """The webhook, a :class:`~kubetrain.operator.runtime.manager.Runnable`."""

    name = "webhook"

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
        self.ready = asyncio.Event()
        self.keeper = certs.Keeper(client, settings, clock=self.clock)
        self.injector = cabundle.Injector(client)
        self.registrar = registration.Registrar(client, settings.url) if settings.url else None
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.endpoint = server.Endpoint(
            "admission webhook",
            settings.address,
            routes(self.lookups(), self.now),
            ssl_context=self.context,
            client_max_size=MAX_BODY,
        )
        self.bundle: certs.Bundle | None = None

    @property
    def port(self) -> int | None:
        return self.endpoint.port

    def now(self) -> str:
        return timefmt.seconds(self.clock())

    async def run(self) -> None:
        try:
            bundle = await self._first_certificate()
            self._serve_with(bundle)
            try:
                await self._publish(bundle)
            except kube.ApiError as exc:  # served all the same; the next check tries again
                log.warning("webhook configurations not updated: %s", exc)
            await self.endpoint.start()
            self.ready.set()
            while True:
                await asyncio.sleep(self.settings.refresh)
                await self.check()
        finally:
            await self.endpoint.stop()
            if self.registrar is not None and self.ready.is_set():
                try:
                    async with _aio.timeout(UNREGISTER_TIMEOUT):
                        await self.registrar.unregister()
                except (kube.ApiError, TimeoutError) as exc:
                    log.warning("webhook configurations left registered: %s", exc)

    async def check(self) -> None:
        """Check the certificate and the CA's place once; failures are logged, and the next
        check tries again."""
        try:
            bundle = await self.keeper.ensure()
        except (kube.ApiError, certs.NotReady) as exc:
            log.warning("webhook certificate in %s not checked: %s", self.keeper.where, exc)
            return
        if bundle != self.bundle:
            self._serve_with(bundle)
            log.info("webhook serves a new certificate")
        try:
            await self._publish(bundle)
        except kube.ApiError as exc:
            log.warning("webhook configurations not updated: %s", exc)

    async def _first_certificate(self) -> certs.Bundle:
        delay = RETRY_FIRST
        while True:
            try:
                return await self.keeper.ensure()
            except kube.NotFound as exc:
                log.warning(
                    "webhook certificate: %s (does namespace %s exist?); retrying in %.0fs",
                    exc,
                    self.settings.namespace,
                    delay,
                )
            except (kube.ApiError, certs.NotReady) as exc:
                log.warning("webhook certificate: %s; retrying in %.0fs", exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)

    async def _publish(self, bundle: certs.Bundle) -> None:
        if self.registrar is not None:
            await self.registrar.register(bundle.ca_bundle)
        elif self.keeper.manages:
            await self.injector.inject(bundle.ca_bundle)

    def _serve_with(self, bundle: certs.Bundle) -> None:
        """Load ``bundle`` into the site's TLS context (new connections get it). The PEM
        goes through a private temporary directory: ssl reads certificates from files only."""
        with tempfile.TemporaryDirectory(prefix="kubetrain-webhook-") as directory:
            cert = os.path.join(directory, "tls.crt")
            key = os.path.join(directory, "tls.key")
            for path, data in ((cert, bundle.serving.cert), (key, bundle.serving.key)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            self.context.load_cert_chain(cert, key)
        self.bundle = bundle

    def lookups(self) -> admission.Lookups:
        client = self.client

        async def runtime(kind: str, namespace: str | None, name: str) -> Mapping[str, Any] | None:
            try:
                if namespace is None:
                    return await client.get(CLUSTER_TRAINING_RUNTIMES, name, timeout=LOOKUP_TIMEOUT)
                return await client.get(
                    TRAINING_RUNTIMES, name, namespace=namespace, timeout=LOOKUP_TIMEOUT
                )
            except kube.NotFound:
                return None

        async def priority_class(name: str) -> bool:
            try:
                await client.get(PRIORITY_CLASSES, name, timeout=LOOKUP_TIMEOUT)
            except kube.NotFound:
                return False
            return True

        return admission.Lookups(runtime=runtime, priority_class=priority_class)


def routes(lookups: admission.Lookups, now: Callable[[], str]) -> list[web.RouteDef]:
    """A POST route per webhook path of :data:`configurations.HOOKS`."""

    def handler(hook: configurations.Hook) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.Response:
            try:
                review = await request.json()
            except ValueError:
                return web.Response(status=400, text="the body is not JSON\n")
            try:
                answer = await admission.answer(hook, review, lookups, now())
            except admission.BadReview as exc:
                return web.Response(status=400, text=f"{exc}\n")
            except kube.ApiError as exc:
                log.warning("%s: a lookup failed: %s", hook.path, exc)
                answer = _lookup_failed(review, exc)
            return web.Response(
                body=json.dumps(answer, separators=(",", ":")).encode(),
                content_type="application/json",
            )

        return handle

    return [web.post(hook.path, handler(hook)) for hook in configurations.HOOKS]


def _lookup_failed(review: dict[str, Any], exc: kube.ApiError) -> dict[str, Any]:
    """A refusal for a review that could not be judged: kube-apiserver shows the message."""
    message = f"kubetrain could not judge the object: {exc}"
    status = {"status": "Failure", "message": message, "reason": "InternalError", "code": 500}
    return {
        "apiVersion": admission.API_VERSION,
        "kind": "AdmissionReview",
        "response": {
            "uid": review["request"]["uid"],
            "allowed": False,
            "status": {"kind": "Status", "apiVersion": "v1", "metadata": {}, **status},
        },
    }
