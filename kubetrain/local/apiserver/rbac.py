"""``rbac.authorization.k8s.io/v1``: Roles, ClusterRoles, RoleBindings and ClusterRoleBindings
as stored objects, with kube's defaults and validation (``pkg/apis/rbac/v1/defaults.go``,
``pkg/apis/rbac/validation/validation.go``).

They are served so that what a controller or a manifest creates on a cluster can be created
here too: the MPIJob launcher's Role and RoleBinding, an operator's ClusterRole. Nothing is
enforced: the local API server has one user with one bearer token (see
:mod:`serviceaccounts`), and no authorizer reads these objects. Nor does a controller
aggregate ClusterRoles (``aggregationRule`` is stored as given), and no default ClusterRoles
(``cluster-admin``, ``view``...) are bootstrapped.

Must not: decide access. Pure strategies over the registry's objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubetrain import gofmt
from kubetrain.local.apiserver import errors, resources, strategies

GROUP: Final = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT: Final = "ServiceAccount"
USER: Final = "User"
KIND_GROUP: Final = "Group"

R = resources.Resource
Obj = strategies.Obj
Cause = strategies.Cause


def _urls_invalid(path: str, urls: Any, detail: str) -> Cause:
    return errors.cause("Invalid value", path, f"Invalid value: {gofmt.go_strings(urls)}: {detail}")


def _rules_causes(rules: Any, namespaced: bool) -> list[Cause]:
    """kube's ``validatePolicyRule`` for each rule."""
    if rules is None:
        return []
    if not isinstance(rules, list):
        return [strategies.invalid("rules", rules, "must be a list")]
    causes: list[Cause] = []
    for i, rule in enumerate(rules):
        path = f"rules[{i}]"
        if not isinstance(rule, Mapping):
            causes.append(strategies.invalid(path, rule, "must be an object"))
            continue
        if not rule.get("verbs"):
            causes.append(
                strategies.required(f"{path}.verbs", "verbs must contain at least one value")
            )
        urls = rule.get("nonResourceURLs")
        if urls:
            if namespaced:
                causes.append(
                    _urls_invalid(
                        f"{path}.nonResourceURLs",
                        urls,
                        "namespaced rules cannot apply to non-resource URLs",
                    )
                )
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                causes.append(
                    _urls_invalid(
                        f"{path}.nonResourceURLs",
                        urls,
                        "rules cannot apply to both regular resources and non-resource URLs",
                    )
                )
            continue
        if not rule.get("apiGroups"):
            causes.append(
                strategies.required(
                    f"{path}.apiGroups", "resource rules must supply at least one api group"
                )
            )
        if not rule.get("resources"):
            causes.append(
                strategies.required(
                    f"{path}.resources", "resource rules must supply at least one resource"
                )
            )
        if rule.get("resourceNames") and len(rule.get("resources") or []) > 1:
            causes.append(
                strategies.required(
                    f"{path}.resourceNames", "resource names cannot apply to multiple resources"
                )
            )
    return causes


class RoleStrategy(strategies.Strategy):
    """Roles and ClusterRoles: names are path segments; rules are checked."""

    name_rule = staticmethod(strategies.path_segment)

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = super().validate(r, obj, old, reg)
        return causes + _rules_causes(obj.get("rules"), r.namespaced)


def default_binding(obj: Obj) -> None:
    """``SetDefaults_RoleBinding`` and ``SetDefaults_Subject``."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    for subject in obj.get("subjects") or []:
        kind = subject.get("kind") if isinstance(subject, dict) else None
        if kind in (USER, KIND_GROUP) and not subject.get("apiGroup"):
            subject["apiGroup"] = GROUP


def role_ref_text(ref: Mapping[str, Any]) -> str:
    """A RoleRef as Go's ``%#v`` prints it in kube's "cannot change roleRef" message."""
    return (
        f'rbac.RoleRef{{APIGroup:"{ref.get("apiGroup") or ""}", Kind:"{ref.get("kind") or ""}", '
        f'Name:"{ref.get("name") or ""}"}}'
    )


def _subject_causes(subject: Any, path: str, namespaced: bool) -> list[Cause]:
    """kube's ``validateRoleBindingSubject``."""
    if not isinstance(subject, Mapping):
        return [strategies.invalid(path, subject, "must be an object")]
    causes: list[Cause] = []
    name = str(subject.get("name") or "")
    group = str(subject.get("apiGroup") or "")
    kind = subject.get("kind")
    if not name:
        causes.append(strategies.required(f"{path}.name"))
    if kind == SERVICE_ACCOUNT:
        if name:
            causes += [
                strategies.invalid(f"{path}.name", name, p)
                for p in strategies.dns1123_subdomain(name)
            ]
        if group:
            causes.append(
                errors.field_error(
                    "Unsupported value", f"{path}.apiGroup", 'supported values: ""', group
                )
            )
        if not namespaced and not subject.get("namespace"):
            causes.append(strategies.required(f"{path}.namespace"))
    elif kind in (USER, KIND_GROUP):
        if not name:
            what = "user" if kind == USER else "group"
            causes.append(strategies.invalid(f"{path}.name", name, f"{what} name cannot be empty"))
        if group != GROUP:
            causes.append(
                errors.field_error(
                    "Unsupported value", f"{path}.apiGroup", f'supported values: "{GROUP}"', group
                )
            )
    else:
        causes.append(
            errors.field_error(
                "Unsupported value",
                f"{path}.kind",
                'supported values: "ServiceAccount", "User", "Group"',
                kind if kind is not None else "",
            )
        )
    return causes


class BindingStrategy(strategies.Strategy):
    """RoleBindings and ClusterRoleBindings: defaults, then kube's validation; ``roleRef`` is
    immutable."""

    name_rule = staticmethod(strategies.path_segment)

    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        default_binding(obj)

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        default_binding(new)

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = super().validate(r, obj, old, reg)
        ref = obj.get("roleRef")
        ref = ref if isinstance(ref, Mapping) else {}
        group = ref.get("apiGroup") or ""
        if group != GROUP:
            causes.append(
                errors.field_error(
                    "Unsupported value", "roleRef.apiGroup", f'supported values: "{GROUP}"', group
                )
            )
        kinds = ("Role", "ClusterRole") if r.namespaced else ("ClusterRole",)
        if ref.get("kind") not in kinds:
            causes.append(
                errors.field_error(
                    "Unsupported value",
                    "roleRef.kind",
                    "supported values: " + ", ".join(f'"{k}"' for k in kinds),
                    ref.get("kind") or "",
                )
            )
        name = str(ref.get("name") or "")
        if not name:
            causes.append(strategies.required("roleRef.name"))
        else:
            causes += [
                strategies.invalid("roleRef.name", name, p) for p in strategies.path_segment(name)
            ]
        subjects = obj.get("subjects")
        if subjects is not None and not isinstance(subjects, list):
            causes.append(strategies.invalid("subjects", subjects, "must be a list"))
        else:
            for i, subject in enumerate(subjects or []):
                causes += _subject_causes(subject, f"subjects[{i}]", r.namespaced)
        if old is not None:
            before = old.get("roleRef") if isinstance(old.get("roleRef"), Mapping) else {}
            if dict(before) != dict(ref):
                causes.append(
                    errors.cause(
                        "Invalid value",
                        "roleRef",
                        f"Invalid value: {role_ref_text(ref)}: cannot change roleRef",
                    )
                )
        return causes


ROLE: Final = RoleStrategy()
BINDING: Final = BindingStrategy()
STRATEGIES: Final[Mapping[str, strategies.Strategy]] = {
    f"roles.{GROUP}": ROLE,
    f"clusterroles.{GROUP}": ROLE,
    f"rolebindings.{GROUP}": BINDING,
    f"clusterrolebindings.{GROUP}": BINDING,
}
"""The strategies by store key, for the registry's table."""
