"""A Pod and the objects it refers to, turned into the runtime's fully resolved specs.

What a container runtime gets from the kubelet, computed the kubelet's way
(``pkg/kubelet/kubelet_pods.go``): the environment (``envFrom`` with prefixes, ``env`` values
with ``$(VAR)`` expansion, ``valueFrom`` ConfigMap and Secret keys with ``optional``, the
downward API's ``fieldRef`` and ``resourceFieldRef``), the command and args expanded against
that environment (``third_party/forked/golang/expansion``), volumes and their mounts
(emptyDir, hostPath, PersistentVolumeClaim via its hostPath PersistentVolume, configMap,
secret, downwardAPI, projected with serviceAccountToken), the memory limit and the GPUs given
to it, and the ``KUBERNETES_SERVICE_*``/``KUBERNETES_PORT*`` variables of the API server.

At about 820 lines it is one concept, kept whole: the kubelet's resolution of a pod into what
its runtime runs, one function a field, each reading the same pod, sources and host.

Owns: those rules and the exact error messages the kubelet reports when a reference cannot be
resolved. Must not: do I/O (the agent fetches the objects named by :func:`needs` and passes
them in), choose GPUs (the agent assigns them), or know how the runtime runs anything.

Rules of our own, since every pod shares the node's network and filesystem:

- Images are not pulled, so a container must say its ``command``; without one it cannot be
  created (:class:`NoCommand`, the kubelet's ``CreateContainerError``) and waits with a
  message that says so — unless the node knows what the image's entrypoint does and has a
  program that does it (``Host.entrypoints``, by image name: the MPI launcher's
  ``kubectl-delivery``).
- The API server a pod's in-cluster configuration reaches is the node's own (``Host.api``):
  ``KUBERNETES_SERVICE_HOST``/``PORT`` name its real address, not the ``kubernetes``
  Service's cluster IP, which nothing routes on one machine.
- Where the node cannot show a volume at another path (no private mount namespace), the
  ServiceAccount admission's ``kube-api-access-*`` mount is left out
  (``Host.api_credentials`` false) rather than failing every pod; the agent says so in an
  event.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from kubetrain import api, gofmt
from kubetrain.errors import KubetrainError
from kubetrain.frameworks import hostimage
from kubetrain.local.node import runtime

GPU: Final = "nvidia.com/gpu"
DEFAULT_MODE: Final = 0o644  # the API server's defaultMode (420)
CREATE_CONFIG_ERROR: Final = "CreateContainerConfigError"
FAILED_MOUNT: Final = "FailedMount"
CREATE_CONTAINER_ERROR: Final = "CreateContainerError"
MAX_HOSTNAME: Final = 63
DEFAULT_TOKEN_SECONDS: Final = 3600  # the API's default for a serviceAccountToken projection
API_ACCESS_PREFIX: Final = "kube-api-access-"  # the ServiceAccount admission's volume
API_ACCESS_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_SUBSCRIPT = re.compile(r"^(metadata\.(?:labels|annotations))\['(.*)'\]$")

Obj = Mapping[str, Any]


class SpecError(KubetrainError):
    """A pod's spec cannot be turned into runtime specs yet. ``reason`` is what the kubelet
    reports: ``CreateContainerConfigError`` (a container's waiting reason; retried, since the
    object may appear) or ``FailedMount`` (an event; the pod stays ContainerCreating)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class NoCommand(SpecError):
    """A container without ``command``: nothing to run, since no image is pulled. The
    container cannot be created (``CreateContainerError``); the pod waits, as a kubelet's
    does for a container its runtime refuses to create."""

    def __init__(self, message: str) -> None:
        super().__init__(CREATE_CONTAINER_ERROR, message)


# -- $(VAR) expansion -----------------------------------------------------------------------


def mapping_for(*contexts: Mapping[str, str]) -> Callable[[str], str]:
    """kube's ``MappingFuncFor``: the first context that has the name wins; an unknown name
    stays as it was written, ``$(NAME)``."""

    def mapping(name: str) -> str:
        for context in contexts:
            if name in context:
                return context[name]
        return f"$({name})"

    return mapping


def expand(text: str, mapping: Callable[[str], str]) -> str:
    """kube's ``expansion.Expand``: ``$(NAME)`` is replaced, ``$$`` is a literal ``$``, and
    anything else (``$x``, an unclosed ``$(``) is left as written."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            read, is_var, advance = _read_variable(text, cursor + 1)
            out.append(mapping(read) if is_var else read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


def _read_variable(text: str, start: int) -> tuple[str, bool, int]:
    first = text[start]
    if first == "$":  # escaped operator
        return "$", False, 1
    if first == "(":
        end = text.find(")", start + 1)
        if end >= 0:
            return text[start + 1 : end], True, end - start + 1
        return "$(", False, 1  # incomplete reference
    return "$" + first, False, 1


# -- what the agent must fetch ----------------------------------------------------------------


@dataclass(frozen=True)
class TokenNeed:
    """One ``serviceAccountToken`` projection: the TokenRequest the kubelet makes for it,
    bound to the pod. ``audience`` "" asks for the API server's own audiences."""

    service_account: str
    audience: str
    expiration_seconds: int
    pod_name: str
    pod_uid: str


@dataclass(frozen=True)
class Needs:
    """Names of the objects in the pod's namespace its spec refers to, and the tokens its
    projected volumes ask for."""

    configmaps: frozenset[str] = frozenset()
    secrets: frozenset[str] = frozenset()
    claims: frozenset[str] = frozenset()
    tokens: frozenset[TokenNeed] = frozenset()


def token_need(pod: Obj, projection: Obj) -> TokenNeed:
    seconds = projection.get("expirationSeconds")
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        seconds = DEFAULT_TOKEN_SECONDS
    return TokenNeed(
        service_account=str(spec_of(pod).get("serviceAccountName") or "default"),
        audience=str(projection.get("audience") or ""),
        expiration_seconds=seconds,
        pod_name=str(meta_of(pod).get("name") or ""),
        pod_uid=str(meta_of(pod).get("uid") or ""),
    )


def needs(pod: Obj) -> Needs:
    configmaps: set[str] = set()
    secrets: set[str] = set()
    claims: set[str] = set()
    tokens: set[TokenNeed] = set()
    for c in all_containers(pod):
        for source in c.get("envFrom") or []:
            _add_ref(configmaps, source.get("configMapRef"))
            _add_ref(secrets, source.get("secretRef"))
        for env in c.get("env") or []:
            value_from = env.get("valueFrom") or {}
            _add_ref(configmaps, value_from.get("configMapKeyRef"))
            _add_ref(secrets, value_from.get("secretKeyRef"))
    for volume in spec_of(pod).get("volumes") or []:
        _add_ref(configmaps, volume.get("configMap"))
        _add_ref(secrets, volume.get("secret"), key="secretName")
        claim = volume.get("persistentVolumeClaim") or {}
        if claim.get("claimName"):
            claims.add(str(claim["claimName"]))
        for source in (volume.get("projected") or {}).get("sources") or []:
            _add_ref(configmaps, source.get("configMap"))
            _add_ref(secrets, source.get("secret"))
            if isinstance(source.get("serviceAccountToken"), Mapping):
                tokens.add(token_need(pod, source["serviceAccountToken"]))
    return Needs(frozenset(configmaps), frozenset(secrets), frozenset(claims), frozenset(tokens))


def _add_ref(names: set[str], ref: Any, key: str = "name") -> None:
    if isinstance(ref, Mapping) and ref.get(key):
        names.add(str(ref[key]))


@dataclass(frozen=True)
class Sources:
    """The fetched objects :func:`needs` named, by name; a name mapped to None (or absent)
    was not found. ``volumes`` are PersistentVolumes by name (the claims' ``volumeName``);
    ``tokens`` the ServiceAccount tokens asked for, and ``token_errors`` the API's answer
    where it issued none."""

    configmaps: Mapping[str, Obj | None] = field(default_factory=dict)
    secrets: Mapping[str, Obj | None] = field(default_factory=dict)
    claims: Mapping[str, Obj | None] = field(default_factory=dict)
    volumes: Mapping[str, Obj | None] = field(default_factory=dict)
    tokens: Mapping[TokenNeed, str] = field(default_factory=dict)  # the token issued
    token_errors: Mapping[TokenNeed, str] = field(default_factory=dict)  # why none was


@dataclass(frozen=True)
class Host:
    """What the node contributes: its name and address (every pod's IP: all share the host
    network), its allocatable resources (a container's limit where it sets none, as the
    downward API reports it), the environment an image would have given (``PATH``...; the
    pod's own ``env`` overrides it), the API server's address for the ``KUBERNETES_*``
    variables, whether the ServiceAccount mount can be given, and the programs that stand in
    for the entrypoints of images it knows."""

    name: str
    address: str
    allocatable: Mapping[str, Any] = field(default_factory=dict)
    base_env: tuple[tuple[str, str], ...] = ()
    api: tuple[str, int] | None = None  # the API server's host and port, as the node reaches it
    api_credentials: bool = True  # False: the kube-api-access mount cannot be shown here
    entrypoints: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # by image name
    containers: bool = False  # a container engine runs every image but the host image


# -- the pod ----------------------------------------------------------------------------------


def spec_of(pod: Obj) -> Obj:
    spec = pod.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def meta_of(pod: Obj) -> Obj:
    meta = pod.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def init_containers(pod: Obj) -> list[Obj]:
    return [c for c in spec_of(pod).get("initContainers") or [] if isinstance(c, Mapping)]


def app_containers(pod: Obj) -> list[Obj]:
    return [c for c in spec_of(pod).get("containers") or [] if isinstance(c, Mapping)]


def all_containers(pod: Obj) -> list[Obj]:
    return init_containers(pod) + app_containers(pod)


def hostname(pod: Obj) -> str:
    """``spec.hostname``, else the pod's name cut to a DNS label (the kubelet's
    ``GeneratePodHostNameAndDomain``)."""
    given = spec_of(pod).get("hostname")
    name = str(given or meta_of(pod).get("name") or "")
    return name[:MAX_HOSTNAME].rstrip("-.")


def gpu_limit(container: Obj) -> int:
    """Whole ``nvidia.com/gpu`` the container asks for (an extended resource: limits, or
    requests when only they are given)."""
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):
        amounts = resources.get(section) or {}
        if GPU in amounts:
            try:
                return max(0, math.ceil(api.parse_quantity(amounts[GPU])))
            except ValueError:
                return 0
    return 0


def memory_limit(container: Obj) -> int | None:
    """The memory limit in bytes (``Quantity.Value()``, rounded up), or None."""
    limits = (container.get("resources") or {}).get("limits") or {}
    if "memory" not in limits:
        return None
    try:
        return math.ceil(api.parse_quantity(limits["memory"]))
    except ValueError:
        return None


def _where(pod: Obj) -> str:
    meta = meta_of(pod)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


# -- the sandbox --------------------------------------------------------------------------------


def sandbox(pod: Obj, sources: Sources, host: Host, hosts: str) -> runtime.Sandbox:
    """The pod's sandbox: its name, hostname, /etc/hosts text and volumes. Raises
    :class:`SpecError` (``FailedMount``) naming the volume that cannot be set up."""
    meta = meta_of(pod)
    volumes = tuple(_volume(pod, v, sources, host) for v in spec_of(pod).get("volumes") or [])
    return runtime.Sandbox(
        uid=str(meta.get("uid") or ""),
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        hostname=hostname(pod),
        hosts=hosts,
        volumes=volumes,
        subdomain=str(spec_of(pod).get("subdomain") or ""),
        engine=any(in_engine(str(c.get("image") or ""), host) for c in all_containers(pod)),
    )


def _mount_failed(volume: str, problem: str) -> SpecError:
    return SpecError(FAILED_MOUNT, f'MountVolume.SetUp failed for volume "{volume}" : {problem}')


def _volume(pod: Obj, volume: Obj, sources: Sources, host: Host) -> runtime.Volume:
    name = str(volume.get("name") or "")
    if "emptyDir" in volume:
        return runtime.Volume(name, "empty")
    if isinstance(volume.get("hostPath"), Mapping):
        return runtime.Volume(name, "host", host_path=str(volume["hostPath"].get("path") or ""))
    if isinstance(volume.get("persistentVolumeClaim"), Mapping):
        return runtime.Volume(name, "host", host_path=_claim_path(volume, sources))
    files: list[runtime.File] = []
    if isinstance(volume.get("configMap"), Mapping):
        source = volume["configMap"]
        files += _object_files(name, "configmap", source, sources.configmaps, _mode(source))
    elif isinstance(volume.get("secret"), Mapping):
        source = {**volume["secret"], "name": volume["secret"].get("secretName")}
        files += _object_files(name, "secret", source, sources.secrets, _mode(source))
    elif isinstance(volume.get("downwardAPI"), Mapping):
        source = volume["downwardAPI"]
        files += _downward_files(pod, name, source.get("items") or [], _mode(source), host)
    elif isinstance(volume.get("projected"), Mapping):
        projected = volume["projected"]
        mode = _mode(projected)
        for part in projected.get("sources") or []:
            if isinstance(part.get("configMap"), Mapping):
                files += _object_files(
                    name, "configmap", part["configMap"], sources.configmaps, mode
                )
            elif isinstance(part.get("secret"), Mapping):
                files += _object_files(name, "secret", part["secret"], sources.secrets, mode)
            elif isinstance(part.get("downwardAPI"), Mapping):
                items = part["downwardAPI"].get("items") or []
                files += _downward_files(pod, name, items, mode, host)
            elif isinstance(part.get("serviceAccountToken"), Mapping):
                files.append(_token_file(pod, name, part["serviceAccountToken"], sources, mode))
            else:
                kinds = ", ".join(sorted(part)) or "an empty source"
                raise _mount_failed(
                    name,
                    f"projected source {kinds} is not supported on this node; accepted: "
                    "configMap, secret, downwardAPI, serviceAccountToken",
                )
    else:
        kinds = ", ".join(sorted(k for k in volume if k != "name")) or "no source"
        raise _mount_failed(
            name,
            f"volume type {kinds} is not supported on this node; accepted: emptyDir, hostPath, "
            "persistentVolumeClaim, configMap, secret, downwardAPI, projected",
        )
    return runtime.Volume(name, "files", files=tuple(files))


def _token_file(
    pod: Obj, volume: str, projection: Obj, sources: Sources, mode: int
) -> runtime.File:
    """The token the API issued for a ``serviceAccountToken`` projection, or the kubelet's
    ``failed to fetch token`` when it issued none."""
    need = token_need(pod, projection)
    token = sources.tokens.get(need)
    if token is None:
        problem = sources.token_errors.get(need) or "no token was requested"
        raise _mount_failed(volume, f"failed to fetch token: {problem}")
    return runtime.File(str(projection.get("path") or ""), token.encode(), mode)


def _mode(source: Obj) -> int:
    mode = source.get("defaultMode")
    return mode if isinstance(mode, int) and not isinstance(mode, bool) else DEFAULT_MODE


def _claim_path(volume: Obj, sources: Sources) -> str:
    name = str(volume.get("name") or "")
    claim_name = str(volume["persistentVolumeClaim"].get("claimName") or "")
    claim = sources.claims.get(claim_name)
    if claim is None:
        raise _mount_failed(name, f'persistentvolumeclaim "{claim_name}" not found')
    pv_name = str((claim.get("spec") or {}).get("volumeName") or "")
    if not pv_name:
        raise _mount_failed(name, f'persistentvolumeclaim "{claim_name}" is not bound')
    pv = sources.volumes.get(pv_name)
    if pv is None:
        raise _mount_failed(name, f'persistentvolume "{pv_name}" not found')
    pv_spec = pv.get("spec") or {}
    for kind in ("hostPath", "local"):
        path = (pv_spec.get(kind) or {}).get("path")
        if path:
            return str(path)
    raise _mount_failed(
        name,
        f'PersistentVolume {pv_name} (bound to claim "{claim_name}") has no path on this node; '
        "accepted: spec.hostPath.path or spec.local.path",
    )


def _object_files(
    volume: str,
    kind: str,  # "configmap" or "secret"
    source: Obj,
    objects: Mapping[str, Obj | None],
    default_mode: int,
) -> list[runtime.File]:
    name = str(source.get("name") or "")
    obj = objects.get(name)
    optional = bool(source.get("optional"))
    if obj is None:
        if optional:
            return []
        raise _mount_failed(volume, f'{kind} "{name}" not found')
    data = _object_data(obj, kind)
    items = source.get("items") or []
    if not items:
        return [runtime.File(key, value, default_mode) for key, value in sorted(data.items())]
    files = []
    for item in items:
        key = str(item.get("key") or "")
        if key not in data:
            if optional:
                continue
            what = "configmap" if kind == "configmap" else "secret"
            raise _mount_failed(volume, f"{what} references non-existent config key: {key}")
        mode = item.get("mode")
        mode = mode if isinstance(mode, int) and not isinstance(mode, bool) else default_mode
        files.append(runtime.File(str(item.get("path") or key), data[key], mode))
    return files


def _object_data(obj: Obj, kind: str) -> dict[str, bytes]:
    """A ConfigMap's ``data`` and ``binaryData``, or a Secret's ``data``, as bytes."""
    out: dict[str, bytes] = {}
    if kind == "configmap":
        for key, value in (obj.get("data") or {}).items():
            out[str(key)] = str(value).encode()
        for key, value in (obj.get("binaryData") or {}).items():
            out[str(key)] = _b64(value)
    else:
        for key, value in (obj.get("data") or {}).items():
            out[str(key)] = _b64(value)
        for key, value in (obj.get("stringData") or {}).items():
            out[str(key)] = str(value).encode()
    return out


def _b64(value: Any) -> bytes:
    try:
        return base64.b64decode(str(value or ""), validate=False)
    except (binascii.Error, ValueError):
        return b""


def _downward_files(
    pod: Obj, volume: str, items: Sequence[Obj], default_mode: int, host: Host
) -> list[runtime.File]:
    files = []
    for item in items:
        path = str(item.get("path") or "")
        mode = item.get("mode")
        mode = mode if isinstance(mode, int) and not isinstance(mode, bool) else default_mode
        try:
            if isinstance(item.get("fieldRef"), Mapping):
                value = _volume_field(pod, str(item["fieldRef"].get("fieldPath") or ""))
            elif isinstance(item.get("resourceFieldRef"), Mapping):
                ref = item["resourceFieldRef"]
                target = _container_named(pod, str(ref.get("containerName") or ""))
                value = resource_value(ref, target, host)
            else:
                raise SpecError(FAILED_MOUNT, "an item has neither fieldRef nor resourceFieldRef")
        except SpecError as exc:
            raise _mount_failed(volume, exc.message) from exc
        files.append(runtime.File(path, value.encode(), mode))
    return files


def _volume_field(pod: Obj, path: str) -> str:
    meta = meta_of(pod)
    if path == "metadata.labels":
        return format_map(meta.get("labels") or {})
    if path == "metadata.annotations":
        return format_map(meta.get("annotations") or {})
    return field_value(pod, path, Host("", ""))


def format_map(values: Mapping[str, Any]) -> str:
    """The kubelet's ``fieldpath.FormatMap``: ``key="value"`` lines sorted by key, the value
    quoted as Go's ``%q``, no newline at the end."""
    return "\n".join(f"{k}={gofmt.go_quote(str(values[k]))}" for k in sorted(values))


def _container_named(pod: Obj, name: str) -> Obj:
    for c in all_containers(pod):
        if c.get("name") == name:
            return c
    raise SpecError(CREATE_CONFIG_ERROR, f"container {name!r} not found in the pod")


# -- the downward API ---------------------------------------------------------------------------


def field_value(pod: Obj, path: str, host: Host) -> str:
    """A ``fieldRef``'s value (``podFieldSelectorRuntimeValue`` and
    ``fieldpath.ExtractFieldPathAsString``). The pod's IPs are the node's address."""
    meta = meta_of(pod)
    spec = spec_of(pod)
    match = _SUBSCRIPT.match(path)
    if match:
        which = "labels" if match[1] == "metadata.labels" else "annotations"
        return str((meta.get(which) or {}).get(match[2], ""))
    simple: dict[str, Any] = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName") or host.name,
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": host.address,
        "status.hostIPs": host.address,
        "status.podIP": host.address,
        "status.podIPs": host.address,
    }
    if path in simple:
        return str(simple[path] or "")
    raise SpecError(CREATE_CONFIG_ERROR, f"unsupported fieldPath: {path}")


def resource_value(ref: Obj, container: Obj, host: Host) -> str:
    """A ``resourceFieldRef``'s value: ``limits.*`` or ``requests.*`` divided by the divisor
    and rounded up; a limit the container does not set is the node's allocatable amount."""
    resource = str(ref.get("resource") or "")
    section, _, name = resource.partition(".")
    if section not in ("limits", "requests") or name not in ("cpu", "memory", "ephemeral-storage"):
        raise SpecError(CREATE_CONFIG_ERROR, f"unsupported container resource : {resource!r}")
    amounts = (container.get("resources") or {}).get(section) or {}
    raw = amounts.get(name)
    if raw is None and section == "limits":
        raw = host.allocatable.get(name)
    try:
        amount = api.parse_quantity(raw) if raw is not None else Fraction(0)
        divisor = api.parse_quantity(ref.get("divisor") or "1")
    except ValueError as exc:
        raise SpecError(CREATE_CONFIG_ERROR, f"invalid quantity in {resource}: {exc}") from exc
    if name == "cpu":
        over = math.ceil(amount * 1000)
        under = math.ceil(divisor * 1000)
    else:
        over = math.ceil(amount)
        under = math.ceil(divisor)
    if under <= 0:
        raise SpecError(CREATE_CONFIG_ERROR, f"invalid divisor for {resource}: must be positive")
    return str(math.ceil(over / under))


# -- containers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Environment:
    """A container's environment, and the ``envFrom`` keys skipped as invalid names (the
    kubelet reports them in an event)."""

    env: tuple[tuple[str, str], ...]
    skipped: tuple[str, ...] = ()


def api_service_env(api: tuple[str, int] | None) -> tuple[tuple[str, str], ...]:
    """What the kubelet derives from the ``kubernetes`` Service for every pod, whatever
    ``enableServiceLinks`` says (``getServiceEnvVarMap``: the master service), pointing at the
    API server's own address: ``KUBERNETES_SERVICE_HOST``/``_PORT``/``_PORT_HTTPS`` and the
    Docker link variables ``KUBERNETES_PORT*``."""
    if api is None:
        return ()
    host, port = api
    joined = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    url = f"tcp://{joined}"
    link = f"KUBERNETES_PORT_{port}_TCP"
    return (
        ("KUBERNETES_SERVICE_HOST", host),
        ("KUBERNETES_SERVICE_PORT", str(port)),
        ("KUBERNETES_SERVICE_PORT_HTTPS", str(port)),
        ("KUBERNETES_PORT", url),
        (link, url),
        (f"{link}_PROTO", "tcp"),
        (f"{link}_PORT", str(port)),
        (f"{link}_ADDR", host),
    )


def environment(pod: Obj, container: Obj, sources: Sources, host: Host) -> Environment:
    """The kubelet's ``makeEnvironmentVariables``: ``envFrom`` first, then ``env`` in order,
    each value expanded against what is defined before it and the service variables, which
    come last where the pod does not set them. Of the services, only the API server's
    (:func:`api_service_env`); other Service links are not made."""
    namespace = str(meta_of(pod).get("namespace") or "")
    service = dict(api_service_env(host.api))
    env: dict[str, str] = {}
    skipped: list[str] = []
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = source.get(key)
            if not isinstance(ref, Mapping):
                continue
            name = str(ref.get("name") or "")
            objects = sources.configmaps if kind == "ConfigMap" else sources.secrets
            obj = objects.get(name)
            if obj is None:
                if ref.get("optional"):
                    continue
                raise SpecError(CREATE_CONFIG_ERROR, f'{kind.lower()} "{name}" not found')
            data = (
                {k: str(v) for k, v in (obj.get("data") or {}).items()}
                if kind == "ConfigMap"
                else {k: _b64(v).decode(errors="replace") for k, v in _secret_items(obj)}
            )
            for k in sorted(data):
                full = prefix + k
                if not _ENV_NAME.fullmatch(full):
                    skipped.append(full)
                    continue
                env[full] = data[k]
    for item in container.get("env") or []:
        name = str(item.get("name") or "")
        value = item.get("value")
        if value:
            env[name] = expand(str(value), mapping_for(env, service))
            continue
        value_from = item.get("valueFrom")
        if not isinstance(value_from, Mapping):
            env[name] = ""
            continue
        resolved = _value_from(pod, container, value_from, sources, host, namespace)
        if resolved is not None:
            env[name] = resolved
    for name, value in service.items():
        env.setdefault(name, value)
    return Environment(tuple(env.items()), tuple(skipped))


def _secret_items(obj: Obj) -> Iterable[tuple[str, Any]]:
    return (obj.get("data") or {}).items()


def _value_from(
    pod: Obj, container: Obj, value_from: Obj, sources: Sources, host: Host, namespace: str
) -> str | None:
    if isinstance(value_from.get("fieldRef"), Mapping):
        return field_value(pod, str(value_from["fieldRef"].get("fieldPath") or ""), host)
    if isinstance(value_from.get("resourceFieldRef"), Mapping):
        ref = value_from["resourceFieldRef"]
        named = str(ref.get("containerName") or "")
        target = _container_named(pod, named) if named else container
        return resource_value(ref, target, host)
    for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
        ref = value_from.get(key)
        if not isinstance(ref, Mapping):
            continue
        name = str(ref.get("name") or "")
        wanted = str(ref.get("key") or "")
        optional = bool(ref.get("optional"))
        obj = (sources.configmaps if kind == "ConfigMap" else sources.secrets).get(name)
        if obj is None:
            if optional:
                return None
            raise SpecError(CREATE_CONFIG_ERROR, f'{kind.lower()} "{name}" not found')
        data = obj.get("data") or {}
        if wanted not in data:
            if optional:
                return None
            raise SpecError(
                CREATE_CONFIG_ERROR, f"couldn't find key {wanted} in {kind} {namespace}/{name}"
            )
        return (
            str(data[wanted])
            if kind == "ConfigMap"
            else _b64(data[wanted]).decode(errors="replace")
        )
    return ""


def no_command_message(pod: Obj, field_path: str) -> str:
    return (
        f"Pod {_where(pod)}: {field_path}.command: required on this node: images are not "
        "pulled locally, so a local pod runs its command on the host and the image's "
        "entrypoint is unknown; accepted: a command (and args) that exists on the host, "
        "e.g. [python3, train.py]"
    )


def container_spec(
    pod: Obj,
    container: Obj,
    sources: Sources,
    host: Host,
    *,
    init: bool = False,
    gpus: Sequence[str] = (),
) -> tuple[runtime.ContainerSpec, Environment]:
    """The runtime spec of one container, and its environment (for the skipped keys).
    Raises :class:`NoCommand` or :class:`SpecError` (``CreateContainerConfigError``)."""
    name = str(container.get("name") or "")
    image = str(container.get("image") or "")
    engine = in_engine(image, host)  # the image's own files, entrypoint and environment
    command = [str(a) for a in container.get("command") or []]
    given = bool(command)
    if not command and not engine:
        command = list(host.entrypoints.get(image_name(image), ()))
    if not command and not engine:
        section = "initContainers" if init else "containers"
        index = next(
            (
                i
                for i, c in enumerate(spec_of(pod).get(section) or [])
                if isinstance(c, Mapping) and c.get("name") == name
            ),
            0,
        )
        raise NoCommand(no_command_message(pod, f"spec.{section}[{index}]"))
    environ = environment(pod, container, sources, host)
    values = dict(environ.env)
    mapping = mapping_for(values)
    argv = tuple(expand(a, mapping) for a in [*command, *(container.get("args") or [])])
    final = {} if engine else dict(host.base_env)  # an image brings its own PATH, HOME...
    final.setdefault("HOSTNAME", hostname(pod))
    final.update(values)
    mounts = tuple(
        _mount(m, values)
        for m in container.get("volumeMounts") or []
        if host.api_credentials or not is_api_access_mount(m)
    )
    spec = runtime.ContainerSpec(
        name=name,
        argv=argv,
        env=tuple(final.items()),
        working_dir=str(container.get("workingDir") or ""),  # "": a fresh one, the node's
        mounts=mounts,
        memory_limit=memory_limit(container),
        gpus=tuple(gpus),
        init=init,
        image=image if engine else "",
        image_entrypoint=engine and not given,
        pull_policy=str(container.get("imagePullPolicy") or ""),
        cpu_limit=cpu_limit(container),
        user=run_as(pod, container) if engine else "",
    )
    return spec, environ


def run_as(pod: Obj, container: Obj) -> str:
    """``runAsUser[:runAsGroup]`` of the container's securityContext over the pod's, as a
    container engine's ``User`` takes it; "" where neither sets a user (the image's own)."""
    found: dict[str, Any] = {}
    for context in (spec_of(pod).get("securityContext"), container.get("securityContext")):
        if isinstance(context, Mapping):
            found.update({k: context[k] for k in ("runAsUser", "runAsGroup") if k in context})
    user, group = found.get("runAsUser"), found.get("runAsGroup")
    if not isinstance(user, int) or isinstance(user, bool):
        return ""
    return (
        f"{user}:{group}" if isinstance(group, int) and not isinstance(group, bool) else str(user)
    )


def cpu_limit(container: Obj) -> float | None:
    """The CPU limit in cores, or None."""
    limits = (container.get("resources") or {}).get("limits") or {}
    if "cpu" not in limits:
        return None
    try:
        cores = float(api.parse_quantity(limits["cpu"]))
    except ValueError:
        return None
    return cores if cores > 0 else None


def in_engine(image: str, host: Host) -> bool:
    """Whether the node's container engine runs this image: with one, every image but those
    it runs as host processes (the host image, helper images it stands in for, the images of
    ``Host.entrypoints``)."""
    return (
        host.containers
        and not hostimage.runs_on_host(image)
        and image_name(image) not in host.entrypoints
    )


def image_name(image: str) -> str:
    """An image reference's last path component without tag or digest:
    ``ghcr.io/kubeflow/training-v1/kubectl-delivery:latest`` → ``kubectl-delivery``."""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return name.split(":", 1)[0]


def is_api_access_mount(mount: Obj) -> bool:
    """The mount the ServiceAccount admission adds: its volume at the in-cluster path."""
    return str(mount.get("name") or "").startswith(API_ACCESS_PREFIX) and (
        str(mount.get("mountPath") or "").rstrip("/") == API_ACCESS_PATH
    )


def _mount(mount: Obj, env: Mapping[str, str]) -> runtime.Mount:
    sub_path = str(mount.get("subPath") or "")
    if not sub_path and mount.get("subPathExpr"):
        sub_path = expand(str(mount["subPathExpr"]), mapping_for(env))
    return runtime.Mount(
        volume=str(mount.get("name") or ""),
        mount_path=str(mount.get("mountPath") or ""),
        sub_path=sub_path,
        read_only=bool(mount.get("readOnly")),
    )
