"""What the two webhook configurations hold: one webhook per kind, its path and its rule.

Every kind kubetrain judges is validated on create and update
(``ValidatingWebhookConfiguration`` ``validator.kubetrain.kubeflow.org``); the
``trainer.kubeflow.org`` kinds, which kubetrain defaults at admission, are first defaulted
(``MutatingWebhookConfiguration`` ``defaulter.kubetrain.kubeflow.org``). Paths are upstream's
(``/validate-kubeflow-org-v1-pytorchjob``, ``/mutate-trainer-kubeflow-org-v1alpha1-trainjob``)
and ``failurePolicy: Fail``, as upstream: while the operator is down, a job is refused rather
than stored unjudged.

The same bodies are written out in ``deploy/operator/webhook_configurations.yaml`` (with a
Service as the client) and built here with a URL (out of the cluster, ``--webhook-url``); a
unit test keeps the two in step.

Owns: the table and the bodies. Must not: talk to the API server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import api, kube

VALIDATING: Final = "validator.kubetrain.kubeflow.org"
MUTATING: Final = "defaulter.kubetrain.kubeflow.org"
VALIDATING_CONFIGURATIONS: Final = kube.Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    namespaced=False,
    kind="ValidatingWebhookConfiguration",
)
MUTATING_CONFIGURATIONS: Final = kube.Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    namespaced=False,
    kind="MutatingWebhookConfiguration",
)
TIMEOUT_SECONDS: Final = 10  # upstream's default; kube-apiserver allows 1-30
SERVICE_PORT: Final = 443


@dataclass(frozen=True)
class Hook:
    """One webhook: the kind it judges, whether it defaults (mutating) or validates."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    mutating: bool

    @property
    def path(self) -> str:
        """``/<validate|mutate>-<group with dashes>-<version>-<kind lowercased>``."""
        verb = "mutate" if self.mutating else "validate"
        return f"/{verb}-{self.group.replace('.', '-')}-{self.version}-{self.kind.lower()}"

    @property
    def name(self) -> str:
        """``validate.pytorchjob.kubeflow.org``: fully qualified, as kube-apiserver wants."""
        verb = "mutate" if self.mutating else "validate"
        return f"{verb}.{self.kind.lower()}.{self.group}"

    @property
    def configuration(self) -> str:
        return MUTATING if self.mutating else VALIDATING

    def rule(self) -> dict[str, Any]:
        return {
            "apiGroups": [self.group],
            "apiVersions": [self.version],
            "operations": ["CREATE", "UPDATE"],
            "resources": [self.plural],
            "scope": "Namespaced" if self.namespaced else "Cluster",
        }


# The version each group's webhooks are called with: the storage version. kube-apiserver
# converts a request for another served version to it first (matchPolicy: Equivalent).
VERSIONS: Final = {"kubeflow.org": "v1", "trainer.kubeflow.org": "v1alpha1"}


def _hooks() -> tuple[Hook, ...]:
    found = []
    for (group, kind), model in api.KINDS.items():
        version = VERSIONS[group]
        plural = str(model.PLURAL)  # type: ignore[attr-defined]
        namespaced = bool(getattr(model, "NAMESPACED", True))
        if group == "trainer.kubeflow.org":
            found.append(Hook(group, version, kind, plural, namespaced, mutating=True))
        found.append(Hook(group, version, kind, plural, namespaced, mutating=False))
    return tuple(found)


HOOKS: Final = _hooks()


def by_path() -> dict[str, Hook]:
    return {hook.path: hook for hook in HOOKS}


def client_config(
    hook: Hook, *, url: str = "", service: tuple[str, str] | None = None, ca_bundle: str = ""
) -> dict[str, Any]:
    """Where kube-apiserver sends ``hook``'s reviews: ``url`` + path, or the Service
    (namespace, name) on port 443 at the path; ``ca_bundle`` (base64 PEM) is the CA it
    trusts for that."""
    config: dict[str, Any]
    if url:
        config = {"url": url.rstrip("/") + hook.path}
    elif service is not None:
        namespace, name = service
        config = {
            "service": {
                "name": name,
                "namespace": namespace,
                "path": hook.path,
                "port": SERVICE_PORT,
            }
        }
    else:
        raise ValueError("a webhook's client is a URL or a Service")
    if ca_bundle:
        config["caBundle"] = ca_bundle
    return config


def webhooks(mutating: bool, **client: Any) -> list[dict[str, Any]]:
    """The ``webhooks`` of one configuration, every client as :func:`client_config` says."""
    found = []
    for hook in HOOKS:
        if hook.mutating != mutating:
            continue
        webhook: dict[str, Any] = {
            "name": hook.name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": client_config(hook, **client),
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "rules": [hook.rule()],
            "sideEffects": "None",
            "timeoutSeconds": TIMEOUT_SECONDS,
        }
        if mutating:
            webhook["reinvocationPolicy"] = "Never"
        found.append(webhook)
    return found


def configuration(
    mutating: bool, labels: Mapping[str, str] | None = None, **client: Any
) -> dict[str, Any]:
    """A whole configuration object (see :func:`client_config` for the client)."""
    resource = MUTATING_CONFIGURATIONS if mutating else VALIDATING_CONFIGURATIONS
    metadata: dict[str, Any] = {"name": MUTATING if mutating else VALIDATING}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": metadata,
        "webhooks": webhooks(mutating, **client),
    }


def resource_of(name: str) -> kube.Resource:
    return MUTATING_CONFIGURATIONS if name == MUTATING else VALIDATING_CONFIGURATIONS


NAMES: Final[Sequence[str]] = (VALIDATING, MUTATING)
