"""Service account credentials for pods: the ServiceAccount admission plugin's token volume, and
the ``serviceaccounts/<name>/token`` subresource (TokenRequest) that fills it.

**Admission** (kube's ``plugin/pkg/admission/serviceaccount``): a pod created with
``automountServiceAccountToken`` not false (the pod's word first, then its ServiceAccount's)
gets the projected volume ``kube-api-access-<5 random>`` — a ``serviceAccountToken`` (path
``token``, ``expirationSeconds`` 3607), the ``ca.crt`` of the ``kube-root-ca.crt`` ConfigMap
and the pod's namespace from the downward API, ``defaultMode`` 420 — mounted read-only at
``/var/run/secrets/kubernetes.io/serviceaccount`` in every init and app container that has no
mount there yet. A volume already named ``kube-api-access-*`` is reused. This is what lets a
process in a pod reach the API with in-cluster configuration, as ``kubectl`` run by an MPI
launcher does.

**TokenRequest** (kube's ``pkg/registry/core/serviceaccount/storage/token.go``): checks the
request (``metadata`` must match the URL; ``spec.expirationSeconds``, 3600 when unset, between
10 minutes and 2^32 seconds), the ServiceAccount, and the object the token is bound to (a Pod
running as that ServiceAccount, a Secret or a Node, with a matching uid when one is given);
fills the default audiences; answers 201 with ``status.token`` and ``expirationTimestamp``.

The token itself is not what a kube-apiserver issues. kube-apiserver signs a JWT per request,
naming the ServiceAccount and the bound object, valid for the audiences and lifetime asked and
invalid once the bound pod is gone; its authorizer then limits the pod to what RBAC grants that
account. The local API server is a control plane for one user on one machine: it has one bearer
token and no authorizer (see :mod:`rbac`), so the honest answer to "a credential for this
account" is that token, with the expiry the request asked for reported as asked. A pod on the
local node can therefore do anything its user can — which is true of any process that user
runs on the machine anyway.

Pure apart from reading the store through the registry it is given; the server routes the
subresource here because it holds the token.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from kubetrain import timefmt
from kubetrain.local.apiserver import errors, namespaces, store, strategies

VOLUME_PREFIX: Final = "kube-api-access-"
MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
# kube's serviceaccount.WarnOnlyBoundTokenExpirationSeconds: an hour and 7 seconds, so that a
# token of the admission's volume can be told apart from one a user asked for.
VOLUME_TOKEN_SECONDS: Final = 3607
DEFAULT_TOKEN_SECONDS: Final = 3600  # SetDefaults_TokenRequestSpec
MIN_TOKEN_SECONDS: Final = 10 * 60
MAX_TOKEN_SECONDS: Final = 1 << 32
# kube-apiserver's --api-audiences default to its --service-account-issuer; kubeadm and kind
# issue for this one.
DEFAULT_AUDIENCES: Final = ("https://kubernetes.default.svc.cluster.local",)
DEFAULT_MODE: Final = 420  # 0644, set explicitly as kube does (kubernetes#104464)
GROUP: Final = "authentication.k8s.io"
API_VERSION: Final = f"{GROUP}/v1"
KIND: Final = "TokenRequest"
# kube's utilrand alphabet (no vowels, no confusable digits), as generateName uses
_SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"

Obj = dict[str, Any]


# -- admission -------------------------------------------------------------------------------


def should_automount(account: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """The pod's ``automountServiceAccountToken`` wins, then the ServiceAccount's; else yes."""
    for source in (spec, account):
        given = source.get("automountServiceAccountToken")
        if isinstance(given, bool):
            return given
    return True


def token_volume(name: str) -> Obj:
    """The projected volume the admission adds, exactly as kube's ``TokenVolumeSource``."""
    return {
        "name": name,
        "projected": {
            "defaultMode": DEFAULT_MODE,
            "sources": [
                {
                    "serviceAccountToken": {
                        "expirationSeconds": VOLUME_TOKEN_SECONDS,
                        "path": "token",
                    }
                },
                {
                    "configMap": {
                        "name": namespaces.ROOT_CA_CONFIGMAP,
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
        },
    }


def mount_token(spec: Obj, suffix: str | None = None) -> None:
    """kube's ``mountServiceAccountToken``: mount the token volume into every container without
    a mount at :data:`MOUNT_PATH`, and add the volume when some container took it. ``suffix``
    names a new volume (5 random characters when None)."""
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        volumes = []
    existing = next(
        (
            str(v["name"])
            for v in volumes
            if isinstance(v, Mapping) and str(v.get("name") or "").startswith(VOLUME_PREFIX)
        ),
        None,
    )
    name = existing or VOLUME_PREFIX + (suffix if suffix is not None else random_suffix())
    mount = {"name": name, "readOnly": True, "mountPath": MOUNT_PATH}
    needed = False
    for field_name in ("initContainers", "containers"):
        for container in spec.get(field_name) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts")
            if not isinstance(mounts, list):
                mounts = []
            if any(isinstance(m, Mapping) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, dict(mount)]
            needed = True
    if needed and existing is None:
        spec["volumes"] = [*volumes, token_volume(name)]


def random_suffix(n: int = 5) -> str:
    return "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(n))


def admit_pod(reg: Any, namespace: str, spec: Obj) -> None:
    """The ServiceAccount admission's mutation for a pod being created. A missing account is
    left for the pod strategy's admission to refuse."""
    name = str(spec.get("serviceAccountName") or "")
    account = reg.store.get(store.Key("serviceaccounts", namespace, name))
    if account is not None and should_automount(account.obj, spec):
        mount_token(spec)


# -- TokenRequest ----------------------------------------------------------------------------


def _invalid(name: str, causes: list[strategies.Cause]) -> errors.ApiError:
    return errors.invalid(GROUP, KIND, name, causes)


def _seconds_causes(seconds: Any) -> list[strategies.Cause]:
    path = "spec.expirationSeconds"
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        return [strategies.invalid(path, seconds, "must be an integer")]
    if seconds < MIN_TOKEN_SECONDS:
        return [
            strategies.invalid(path, seconds, "may not specify a duration less than 10 minutes")
        ]
    if seconds > MAX_TOKEN_SECONDS:
        return [
            strategies.invalid(path, seconds, "may not specify a duration larger than 2^32 seconds")
        ]
    return []


def _bound_uid(reg: Any, namespace: str, account: str, ref: Mapping[str, Any]) -> str:
    """The uid of the object a token is to be bound to; raises kube's errors for the others."""
    api_version = str(ref.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    if "/" not in api_version:
        group, version = "", api_version
    kind = str(ref.get("kind") or "")
    name = str(ref.get("name") or "")
    keys = {
        "Pod": ("pods", namespace),
        "Secret": ("secrets", namespace),
        "Node": ("nodes", ""),
    }
    if group or kind not in keys:
        raise errors.bad_request(
            f"cannot bind token to object of type {group}/{version}, Kind={kind}"
        )
    plural, where = keys[kind]
    item = reg.store.get(store.Key(plural, where, name))
    if item is None:
        raise errors.not_found("", plural, name)
    if kind == "Pod" and (item.obj.get("spec") or {}).get("serviceAccountName") != account:
        raise errors.bad_request(
            f'cannot bind token for serviceaccount "{account}" to pod running with different '
            "serviceaccount name."
        )
    uid = str((item.obj.get("metadata") or {}).get("uid") or "")
    wanted = str(ref.get("uid") or "")
    if wanted and wanted != uid:
        raise errors.conflict(
            "",
            kind,
            name,
            f"the UID in the bound object reference ({wanted}) does not match the UID in "
            "record. The object might have been deleted and then recreated",
        )
    return uid


def request_token(
    reg: Any, namespace: str, name: str, body: Any, *, token: str, now: datetime
) -> Obj:
    """POST ``serviceaccounts/<name>/token``: the TokenRequest answered (status 201)."""
    if not isinstance(body, Mapping):
        raise errors.bad_request(
            "the object provided is unrecognized (must be of type TokenRequest)"
        )
    kind = body.get("kind")
    if kind not in (None, "", KIND):
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {KIND}, not {kind})"
        )
    request = copy.deepcopy(dict(body))
    meta = request.get("metadata") if isinstance(request.get("metadata"), dict) else {}
    if meta.get("name") and meta["name"] != name:
        raise _invalid(
            name,
            [
                strategies.invalid(
                    "metadata.name",
                    meta["name"],
                    "must match the service account name if specified",
                )
            ],
        )
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise _invalid(
            name,
            [
                strategies.invalid(
                    "metadata.namespace",
                    meta["namespace"],
                    "must match the service account namespace if specified",
                )
            ],
        )
    if reg.store.get(store.Key("serviceaccounts", namespace, name)) is None:
        raise errors.not_found("", "serviceaccounts", name)
    spec = request.get("spec") if isinstance(request.get("spec"), dict) else {}
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = DEFAULT_TOKEN_SECONDS
    causes = _seconds_causes(seconds)
    if causes:
        raise _invalid("", causes)
    audiences = spec.get("audiences")
    if not isinstance(audiences, list) or not audiences:
        audiences = list(DEFAULT_AUDIENCES)
    ref = spec.get("boundObjectRef")
    if isinstance(ref, Mapping):
        _bound_uid(reg, namespace, name, ref)
    else:
        ref = None
    created = now.astimezone(timezone.utc)
    expires = created + timedelta(seconds=seconds)
    return {
        "kind": KIND,
        "apiVersion": API_VERSION,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": _stamp(created),
        },
        "spec": {
            "audiences": [str(a) for a in audiences],
            "expirationSeconds": seconds,
            "boundObjectRef": dict(ref) if ref is not None else None,
        },
        "status": {"token": token, "expirationTimestamp": _stamp(expires)},
    }


def _stamp(when: datetime) -> str:
    return timefmt.seconds(when)
