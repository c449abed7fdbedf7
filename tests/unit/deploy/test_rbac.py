"""The operator's RBAC is least privilege.

Its three roles (the ClusterRole; in the operator's namespace, the Role granting the
leader-election Lease and the Role granting the webhook's certificate Secret) grant exactly the
rows of :data:`GRANTS`, each with its reason. The code needs exactly those rows, as found from
the code itself:

- informers (list, watch): the stores of a manager built by ``kubetrain operator`` from the
  Deployment's args, under every gang scheduler;
- API calls: every ``client.<method>(resource, ...)`` in ``kubetrain/operator``, read from the
  source. A resource held in a variable is looked up in :data:`DYNAMIC`, and the plan scenarios
  below check the v1 reconciler's entries against what the plan really produces. The calls of
  :data:`OUT_OF_CLUSTER` modules are made only with ``--webhook-url``, under the user's own
  kubeconfig, which the Deployment never passes (checked);
- what RBAC itself asks for: creating the MPI launcher's Role needs every permission it grants
  (Kubernetes' escalation check), and a child whose ownerReference sets
  ``blockOwnerDeletion`` needs ``update`` on its owner's ``finalizers``.

A new call, informer or resource without its grant fails here, and so does a grant that the
code no longer needs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, cast

import pytest

from kubetrain import frameworks, kube
from kubetrain.cli import main
from kubetrain.cli import operator as operator_cli
from kubetrain.kube import record
from kubetrain.operator import process
from kubetrain.operator.jobs import children, companions, gang, plan
from kubetrain.operator.jobs import settings as job_settings
from kubetrain.operator.runtime import leader
from kubetrain.operator.trainjob import kinds, snapshot
from kubetrain.operator.trainjob import setup as trainjob_setup
from kubetrain.operator.webhook import configurations, settings
from tests.builders import mpijob, pytorchjob
from tests.unit.deploy import operator_source
from tests.unit.deploy.manifests import OPERATOR, load
from tests.unit.operator.jobs.world import World, at

CLUSTER: Final = "ClusterRole"
LEASE: Final = "Role"  # kubetrain-operator-leader-election, in the operator's namespace
WEBHOOK: Final = "Role (webhook)"  # kubetrain-operator-webhook, in the operator's namespace

V1: Final = "kubeflow.org"
TRAINER: Final = kinds.TRAINER_GROUP
RBAC: Final = "rbac.authorization.k8s.io"
ADMISSION: Final = "admissionregistration.k8s.io"
WEBHOOK_CONFIGURATIONS: Final = (
    "validatingwebhookconfigurations",
    "mutatingwebhookconfigurations",
)
VOLCANO: Final = gang.VOLCANO_POD_GROUPS.group
COSCHEDULING: Final = gang.COSCHEDULING_POD_GROUPS.group

V1_JOBS: Final = tuple(sorted(f.job_class.PLURAL for f in frameworks.FRAMEWORKS))
V1_RESOURCES: Final = tuple(children.job_resource(f.job_class) for f in frameworks.FRAMEWORKS)
POD_GROUPS: Final = (gang.VOLCANO_POD_GROUPS, gang.COSCHEDULING_POD_GROUPS)


def sub(plurals: Iterable[str], subresource: str) -> tuple[str, ...]:
    return tuple(f"{plural}/{subresource}" for plural in plurals)


@dataclass(frozen=True)
class Row:
    role: str
    groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str


# What the operator may do, and why. One row per reason; a row grants every combination.
GRANTS: Final = (
    Row(CLUSTER, (V1,), V1_JOBS, ("list", "watch"), "each v1 controller caches its kind's jobs"),
    Row(CLUSTER, (V1,), V1_JOBS, ("delete",), "a job is deleted ttlSecondsAfterFinished after"),
    Row(CLUSTER, (V1,), sub(V1_JOBS, "status"), ("update",), "status: compare-and-swap PUT"),
    Row(
        CLUSTER,
        (V1,),
        sub(V1_JOBS, "finalizers"),
        ("update",),
        "children set blockOwnerDeletion, which needs update on the owner's finalizers",
    ),
    Row(
        CLUSTER,
        (TRAINER,),
        ("trainjobs", "trainingruntimes", "clustertrainingruntimes"),
        ("list", "watch"),
        "the TrainJob controller caches jobs and the runtimes they name",
    ),
    Row(
        CLUSTER,
        (TRAINER,),
        ("trainingruntimes", "clustertrainingruntimes"),
        ("get",),
        "the webhook reads the runtime a TrainJob names, fresh, at each review",
    ),
    Row(CLUSTER, (TRAINER,), ("trainjobs/status",), ("patch",), "TrainJob status: merge patch"),
    Row(
        CLUSTER,
        (TRAINER,),
        ("trainjobs/finalizers",),
        ("update",),
        "children set blockOwnerDeletion, which needs update on the owner's finalizers",
    ),
    Row(CLUSTER, ("",), ("pods",), ("list", "watch"), "every controller caches its pods"),
    Row(
        CLUSTER,
        ("",),
        ("pods",),
        ("create", "delete"),
        "one pod per replica index; failed, surplus and cleaned-up pods are deleted",
    ),
    Row(
        CLUSTER,
        ("",),
        ("pods",),
        ("get",),
        "never called: the MPI launcher's Role grants it, and only a holder may create that",
    ),
    Row(
        CLUSTER,
        ("",),
        ("pods/exec",),
        ("create",),
        "never called: the MPI launcher's Role grants it, and only a holder may create that",
    ),
    Row(
        CLUSTER,
        ("",),
        ("services",),
        ("list", "watch"),
        "Services are cached: expectations, host ports, restart counts",
    ),
    Row(CLUSTER, ("",), ("services",), ("create", "delete"), "a headless Service per index"),
    Row(
        CLUSTER,
        ("",),
        ("services",),
        ("patch",),
        "restart counts and host ports are recorded on the Service",
    ),
    Row(
        CLUSTER,
        ("",),
        ("configmaps",),
        ("list", "watch"),
        "the MPIJob hostfile and the TrainJob runtime snapshot are read from the cache",
    ),
    Row(
        CLUSTER,
        ("",),
        ("configmaps",),
        ("create", "patch"),
        "the hostfile and MPI TrainJob configuration are created, then kept up to date",
    ),
    Row(
        CLUSTER,
        ("",),
        ("configmaps",),
        ("get",),
        "a runtime snapshot that exists already (409) is read back",
    ),
    Row(
        CLUSTER,
        ("",),
        ("secrets",),
        ("list", "watch"),
        "an MPI TrainJob's SSH Secret is looked up in the cache before a key pair is made",
    ),
    Row(CLUSTER, ("",), ("secrets",), ("create",), "an MPI TrainJob's SSH key pair"),
    Row(
        CLUSTER,
        ("",),
        ("persistentvolumeclaims",),
        ("create",),
        "a TrainJob's volumeClaimPolicies claims (the initializers' shared volume)",
    ),
    Row(
        CLUSTER,
        ("",),
        ("serviceaccounts",),
        ("create", "get"),
        "the MPIJob launcher's ServiceAccount; read back on 409 to check its owner",
    ),
    Row(
        CLUSTER,
        (RBAC,),
        ("roles", "rolebindings"),
        ("create", "get"),
        "the MPIJob launcher's Role and RoleBinding; read back on 409 to check the owner",
    ),
    Row(
        CLUSTER,
        ("",),
        ("events",),
        ("create", "patch"),
        "the event recorder; a repeated event has its count patched",
    ),
    Row(
        CLUSTER,
        ("scheduling.k8s.io",),
        ("priorityclasses",),
        ("get",),
        "PriorityClass values order replica types for a PodGroup's minResources; the webhook "
        "checks that a Volcano runtime's PriorityClass exists",
    ),
    Row(
        CLUSTER,
        ("autoscaling",),
        ("horizontalpodautoscalers",),
        ("list", "watch", "create", "patch", "delete"),
        "an elastic PyTorchJob's autoscaler: kept in step, deleted while suspended",
    ),
    Row(
        CLUSTER,
        (VOLCANO, COSCHEDULING),
        ("podgroups",),
        ("list", "watch", "create", "patch", "delete"),
        "gang scheduling: a PodGroup per job, kept in step, deleted on finish and suspend",
    ),
    Row(
        CLUSTER,
        (ADMISSION,),
        WEBHOOK_CONFIGURATIONS,
        ("get", "update"),
        "the webhook writes its CA into the caBundle of its two configurations, by name",
    ),
    Row(
        LEASE,
        (leader.LEASES.group,),
        (leader.LEASES.plural,),
        ("get", "create", "update"),
        "leader election on one Lease, in the operator's own namespace only",
    ),
    Row(
        WEBHOOK,
        ("",),
        ("secrets",),
        ("get", "create", "update"),
        "the webhook's CA and certificate: one Secret in the operator's namespace, renewed",
    ),
)

Grant = tuple[str, str, str, str]  # role, apiGroup, resource[/subresource], verb


def expand(rows: Iterable[Row]) -> set[Grant]:
    return {
        (row.role, group, resource, verb)
        for row in rows
        for group in row.groups
        for resource in row.resources
        for verb in row.verbs
    }


def table() -> set[Grant]:
    return expand(GRANTS)


def role_grants(role: str, rules: list[dict[str, Any]]) -> set[Grant]:
    """The grants of ``rules``; a rule limited by ``resourceNames`` counts as granting its
    verbs (test_the_lease_role_names_the_lease_the_operator_uses checks the names)."""
    granted = set()
    for rule in rules:
        assert set(rule) - {"resourceNames"} == {"apiGroups", "resources", "verbs"}, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    granted.add((role, group, resource, verb))
    return granted


def granted() -> set[Grant]:
    """What the three roles in ``deploy/operator`` grant."""
    cluster = load(OPERATOR / "cluster_role.yaml")
    lease = load(OPERATOR / "leader_election_role.yaml")
    webhook = load(OPERATOR / "webhook_role.yaml")
    return (
        role_grants(CLUSTER, cluster["rules"])
        | role_grants(LEASE, lease["rules"])
        | role_grants(WEBHOOK, webhook["rules"])
    )


CERTS: Final = "kubetrain.operator.webhook.certs"


def role_for(group: str, resource: str, module: str = "") -> str:
    """The objects the operator keeps in its own namespace: the Lease, and the Secret of the
    webhook's certificate (the Secrets calls of :data:`CERTS`)."""
    lease = (group, resource.split("/")[0]) == (leader.LEASES.group, leader.LEASES.plural)
    if lease:
        return LEASE
    if module == CERTS and (group, resource) == ("", "secrets"):
        return WEBHOOK
    return CLUSTER


def grants(
    resource: kube.Resource,
    verbs: Iterable[str],
    subresource: str | None = None,
    module: str = "",
) -> set[Grant]:
    name = f"{resource.plural}/{subresource}" if subresource else resource.plural
    return {(role_for(resource.group, name, module), resource.group, name, verb) for verb in verbs}


def difference(left: set[Grant], right: set[Grant]) -> list[str]:
    return sorted(
        f"{role} {group or 'core'} {resource} {verb}"
        for role, group, resource, verb in left - right
    )


# -- the roles are the table ------------------------------------------------------------------


def test_the_roles_grant_exactly_the_table() -> None:
    assert difference(granted(), table()) == [], "granted but not in GRANTS"
    assert difference(table(), granted()) == [], "in GRANTS but not granted"


def test_no_wildcards_and_no_non_resource_urls() -> None:
    for _role, group, resource, verb in granted():
        assert "*" not in (group, resource, verb)


def test_only_the_webhook_configurations_are_limited_to_names_cluster_wide() -> None:
    """Each configuration's rule names that configuration only: a rule naming both for both
    resources would grant a configuration of one kind under the other's name."""
    cluster = load(OPERATOR / "cluster_role.yaml")
    named = {
        (tuple(rule["resources"]), tuple(rule["resourceNames"]))
        for rule in cluster["rules"]
        if "resourceNames" in rule
    }
    assert named == {
        (("validatingwebhookconfigurations",), (configurations.VALIDATING,)),
        (("mutatingwebhookconfigurations",), (configurations.MUTATING,)),
    }


def test_the_webhook_role_names_the_secret_the_operator_uses() -> None:
    role = load(OPERATOR / "webhook_role.yaml")
    by_verb = {
        verb: rule.get("resourceNames")
        for rule in role["rules"]
        for verb in rule["verbs"]
        if rule["resources"] == ["secrets"]
    }
    assert by_verb == {
        "create": None,  # RBAC cannot limit a create by name
        "get": [settings.SECRET_NAME],
        "update": [settings.SECRET_NAME],
    }


def test_every_row_has_a_reason_and_adds_something() -> None:
    for position, row in enumerate(GRANTS):
        assert row.why.strip()
        others = expand(GRANTS[:position] + GRANTS[position + 1 :])
        assert expand([row]) - others, f"row {position} ({row.why}) repeats other rows"


# -- informers --------------------------------------------------------------------------------


def deployment_args() -> list[str]:
    deployment = load(OPERATOR / "deployment.yaml")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


VARIANTS = [
    ("as deployed", []),
    ("with Volcano", ["--gang-scheduler-name=volcano"]),
    ("with scheduler-plugins", ["--gang-scheduler-name=scheduler-plugins-scheduler"]),
]


def informed(extra: list[str], *, watch_pod_groups: bool = False) -> set[Grant]:
    args = main.build_parser().parse_args([*deployment_args(), *extra])
    options = operator_cli.options(args, {"POD_NAMESPACE": "kubeflow"})
    if watch_pod_groups:
        settings = trainjob_setup.Settings(watch_pod_groups=True)
        options = dataclasses.replace(options, trainjob=settings)
    mgr = process.build(cast(kube.Client, object()), options)
    found = set()
    for name in mgr.unsynced():  # before it runs, every store the manager would fill
        plural, _, group = name.partition(".")
        found |= {(role_for(group, plural), group, plural, verb) for verb in ("list", "watch")}
    return found


def informers() -> set[Grant]:
    found = informed([], watch_pod_groups=True)
    for _, extra in VARIANTS:
        found |= informed(extra)
    return found


@pytest.mark.parametrize(("label", "extra"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_every_informer_can_list_and_watch(label: str, extra: list[str]) -> None:
    found = informed(extra)
    assert found, "no informers found"
    assert difference(found, table()) == []


def test_a_gang_scheduler_adds_its_pod_group_informer() -> None:
    plain = informed([])
    volcano = informed(["--gang-scheduler-name=volcano"])
    assert difference(volcano, plain) == [
        f"{CLUSTER} {VOLCANO} podgroups list",
        f"{CLUSTER} {VOLCANO} podgroups watch",
    ]


# -- API calls in the source ------------------------------------------------------------------

JOBS: Final = "kubetrain.operator.jobs.reconciler"
TRAINJOB: Final = "kubetrain.operator.trainjob.reconciler"
INFORMER: Final = "kubetrain.kube.informer"
CABUNDLE: Final = "kubetrain.operator.webhook.cabundle"
# Modules whose calls need no RBAC in the cluster, and why.
OUT_OF_CLUSTER: Final = {
    "kubetrain.operator.webhook.registration": (
        "registers the webhook configurations only with --webhook-url, out of the cluster, "
        "under the user's own kubeconfig"
    ),
}

# The RBAC verbs each Client method needs.
CLIENT_VERBS: Final = {
    "get": ("get",),
    "list": ("list",),
    "list_all": ("list",),
    "watch": ("list", "watch"),
    "create": ("create",),
    "replace": ("update",),
    "patch": ("patch",),
    "apply": ("patch", "create"),  # server-side apply creates a missing object: checked as create
    "delete": ("delete",),
    "delete_collection": ("deletecollection",),
}
RAW_METHODS: Final = ("request", "stream", "websocket")  # a raw path: no resource to read here
NO_RESOURCE: Final = (
    "discover",  # /api and /apis, readable by every authenticated user (system:discovery)
    "close",
    "from_kubeconfig",
)

INFORMERS: Final = "the stores of the manager (test_every_informer_can_list_and_watch)"
ENSURED: Final = (children.SERVICE_ACCOUNTS, children.ROLES, children.ROLE_BINDINGS)
PLAN_CREATES: Final = (
    children.PODS,
    children.SERVICES,
    children.CONFIGMAPS,
    companions.HORIZONTAL_POD_AUTOSCALERS,
    *POD_GROUPS,
)
PLAN_DELETES: Final = (
    children.PODS,
    children.SERVICES,
    companions.HORIZONTAL_POD_AUTOSCALERS,
    *POD_GROUPS,
)
PLAN_PATCHES: Final = (children.CONFIGMAPS, companions.HORIZONTAL_POD_AUTOSCALERS, *POD_GROUPS)

# Calls whose resource is a variable: (module, method, argument) → what it can hold, and why.
DYNAMIC: Final[dict[tuple[str, str, str], tuple[tuple[kube.Resource, ...] | str, str]]] = {
    (JOBS, "replace", "self.resource"): (V1_RESOURCES, "the job's /status"),
    (JOBS, "delete", "self.resource"): (V1_RESOURCES, "a job past its TTL"),
    (JOBS, "create", "create.resource"): (PLAN_CREATES, "plan.Create"),
    (JOBS, "delete", "delete.resource"): (PLAN_DELETES, "plan.Delete"),
    (JOBS, "patch", "delete.before.resource"): ((children.SERVICES,), "restart recorded first"),
    (JOBS, "patch", "patch.resource"): (PLAN_PATCHES, "plan.Patch"),
    (JOBS, "create", "companion.resource"): (ENSURED, "companions created once"),
    (JOBS, "get", "companion.resource"): (ENSURED, "read back on 409 to check the owner"),
    (TRAINJOB, "create", "resource"): (
        (
            kinds.SECRETS,
            kinds.CONFIGMAPS,
            kinds.SERVICES,
            kinds.PERSISTENT_VOLUME_CLAIMS,
            *POD_GROUPS,
        ),
        "_create: the SSH Secret, ConfigMaps, the Service, claims, the PodGroup",
    ),
    (TRAINJOB, "apply", "resource"): (POD_GROUPS, "a suspended job's PodGroup"),
    (INFORMER, "watch", "self.resource"): (INFORMERS, "every informer"),
    (CABUNDLE, "get", "resource"): (
        (configurations.VALIDATING_CONFIGURATIONS, configurations.MUTATING_CONFIGURATIONS),
        "the two webhook configurations, read for their caBundle",
    ),
    (CABUNDLE, "replace", "resource"): (
        (configurations.VALIDATING_CONFIGURATIONS, configurations.MUTATING_CONFIGURATIONS),
        "the two webhook configurations, their caBundle written",
    ),
}


def resolve(call: operator_source.Call) -> tuple[kube.Resource, ...] | str | None:
    """The resources ``call`` can address: its DYNAMIC entry, or the module-level Resource
    its argument names; None if neither."""
    declared = DYNAMIC.get((call.module, call.method, call.target))
    if declared is not None:
        return declared[0]
    value = operator_source.value_of(call.module, call.target)
    return (value,) if isinstance(value, kube.Resource) else None


def needed_by(calls: Iterable[operator_source.Call]) -> tuple[set[Grant], list[str]]:
    """The grants ``calls`` need, and the calls that cannot be read."""
    needed: set[Grant] = set()
    unreadable = []
    for call in calls:
        if call.module in OUT_OF_CLUSTER:
            continue
        if call.method in RAW_METHODS:
            unreadable.append(f"{call}: a raw request; use a Resource method")
            continue
        if call.method in NO_RESOURCE:
            continue
        resources = resolve(call)
        if resources is None:
            unreadable.append(f"{call}: resource unknown; add it to DYNAMIC")
        elif resources != INFORMERS:
            for resource in cast(tuple[kube.Resource, ...], resources):
                needed |= grants(resource, CLIENT_VERBS[call.method], call.subresource, call.module)
    return needed, unreadable


def called() -> set[Grant]:
    needed, unreadable = needed_by(operator_source.client_calls())
    assert unreadable == []
    return needed


def test_every_client_method_has_its_verbs() -> None:
    known = set(CLIENT_VERBS) | set(RAW_METHODS) | set(NO_RESOURCE)
    assert sorted(operator_source.CLIENT_METHODS ^ known) == []


def test_the_scan_finds_the_calls_it_should() -> None:
    found = {(c.module, c.method, c.target) for c in operator_source.client_calls()}
    assert ("kubetrain.operator.runtime.leader", "replace", "LEASES") in found
    assert ("kubetrain.kube.record", "create", "EVENTS") in found
    assert (TRAINJOB, "patch", "kinds.TRAINJOBS") in found
    assert (JOBS, "get", "children.PRIORITY_CLASSES") in found
    assert (INFORMER, "watch", "self.resource") in found


def test_every_call_in_the_operator_is_readable() -> None:
    _, unreadable = needed_by(operator_source.client_calls())
    assert unreadable == []


def test_the_deployment_runs_no_out_of_cluster_module() -> None:
    """The calls left out of the check are made only with --webhook-url, which the Deployment
    does not pass; and they are still there to be left out."""
    args = main.build_parser().parse_args(deployment_args())
    options = operator_cli.options(args, {"POD_NAMESPACE": "kubeflow"})
    assert options.webhook is not None
    assert not options.webhook.out_of_cluster
    found = {c.module for c in operator_source.client_calls()}
    assert set(OUT_OF_CLUSTER) <= found


def test_every_dynamic_entry_is_still_a_call() -> None:
    found = {(c.module, c.method, c.target) for c in operator_source.client_calls()}
    assert sorted(set(DYNAMIC) - found) == []


def test_every_call_is_granted() -> None:
    needed = called()
    assert grants(leader.LEASES, ["update"]) <= needed
    assert grants(record.EVENTS, ["patch"]) <= needed
    assert difference(needed, table()) == []


NEW_CALLS = """
async def reconcile(self, key):
    await self.client.get(kinds.SECRETS, key.name, namespace=key.namespace)
    await self.client.patch(kinds.PODS, key.name, {}, subresource="status")
    await self.client.create(the_thing, {})
    await self.client.request("GET", "/api/v1/nodes")
"""


def test_a_new_call_without_its_grant_is_caught() -> None:
    calls = list(operator_source.calls_in(TRAINJOB, NEW_CALLS))
    needed, unreadable = needed_by(calls)
    assert difference(needed, table()) == [
        "ClusterRole core pods/status patch",
        "ClusterRole core secrets get",
    ]
    assert [line.split(": ")[-1] for line in unreadable] == [
        "resource unknown; add it to DYNAMIC",
        "a raw request; use a Resource method",
    ]


# -- what RBAC itself asks for ----------------------------------------------------------------


def launcher_role_rules() -> set[Grant]:
    """What the MPIJob launcher's Role grants, which the operator must hold to create it."""
    job = mpijob("ns", "m").replica("Launcher", 1).workers(2).build()
    owner = children.owner_reference("MPIJob", "m", "uid")
    (role,) = [c for c in companions.mpi_launcher(job, [], owner) if c.resource == children.ROLES]
    return {
        (CLUSTER, group, resource, verb)
        for rule in role.body["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def owner_finalizers() -> set[Grant]:
    """``update`` on the finalizers of each owner whose children set blockOwnerDeletion."""
    needed: set[Grant] = set()
    if children.owner_reference("PyTorchJob", "a", "uid").get("blockOwnerDeletion"):
        for resource in V1_RESOURCES:
            needed |= grants(resource, ["update"], "finalizers")
    trainjob = {"apiVersion": kinds.TRAINJOBS.api_version, "metadata": {"name": "t", "uid": "u"}}
    made = snapshot.config_map(trainjob, {"kind": "ClusterTrainingRuntime", "metadata": {}})
    if made["metadata"]["ownerReferences"][0].get("blockOwnerDeletion"):
        needed |= grants(kinds.TRAINJOBS, ["update"], "finalizers")
    return needed


def test_the_operator_holds_every_permission_of_the_mpi_launcher_role() -> None:
    rules = launcher_role_rules()
    assert (CLUSTER, "", "pods/exec", "create") in rules
    assert difference(rules, table()) == []


def test_owners_of_children_with_block_owner_deletion_have_finalizers_granted() -> None:
    needed = owner_finalizers()
    assert len(needed) == len(V1_RESOURCES) + 1
    assert difference(needed, table()) == []


# -- and nothing more ---------------------------------------------------------------------------


def test_the_code_needs_every_row_of_the_table() -> None:
    needed = informers() | called() | launcher_role_rules() | owner_finalizers()
    assert difference(table(), needed) == [], "granted, but no code needs it"


def test_every_resource_the_operator_names_is_in_the_table() -> None:
    """Every ``kube.Resource(group, version, plural)`` written in the operator's source (and
    every v1 kind, which ``children.job_resource`` builds) is granted something: a new
    resource without RBAC fails here first."""
    written = operator_source.resources_named()
    computed = sorted({n.scope for n in written if n.group is None or n.plural is None})
    assert computed == ["kubetrain.operator.jobs.children.job_resource"]
    named = {(n.group, n.plural) for n in written if n.group and n.plural}
    named |= {(r.group, r.plural) for r in V1_RESOURCES}
    assert ("coordination.k8s.io", "leases") in named
    assert (TRAINER, "clustertrainingruntimes") in named
    in_table = {(group, resource) for _, group, resource, _ in table()}
    assert sorted(named - in_table) == []


def test_a_new_resource_without_a_grant_is_caught() -> None:
    source = 'JOBSETS = kube.Resource("jobset.x-k8s.io", "v1alpha2", "jobsets")'
    (named,) = operator_source.resources_in(TRAINJOB, source)
    in_table = {(group, resource) for _, group, resource, _ in table()}
    assert (named.group, named.plural) == ("jobset.x-k8s.io", "jobsets")
    assert (named.group, named.plural) not in in_table


# -- the v1 plan, behind the reconciler's DYNAMIC entries ------------------------------------

CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}


def observed_in(decided: plan.Plan) -> dict[tuple[str, str, str], set[kube.Resource]]:
    found: dict[tuple[str, str, str], set[kube.Resource]] = {}

    def add(method: str, target: str, resource: kube.Resource) -> None:
        found.setdefault((JOBS, method, target), set()).add(resource)

    for create in decided.creates:
        step: plan.Create | None = create
        while step is not None:
            add("create", "create.resource", step.resource)
            step = step.then
    for delete in decided.deletes:
        add("delete", "delete.resource", delete.resource)
        if delete.before is not None:
            add("patch", "delete.before.resource", delete.before.resource)
    for patch in decided.patches:
        add("patch", "patch.resource", patch.resource)
    for companion in decided.ensure:
        add("create", "companion.resource", companion.resource)
        add("get", "companion.resource", companion.resource)
    return found


def mpi_under_volcano() -> Iterator[plan.Plan]:
    """Admitted by Volcano, hostfile updated, gang resized, finished."""
    world = World(
        mpijob("ns", "m").replica("Launcher", 1).workers(2).doc(),
        job_settings.Settings(gang_scheduler=job_settings.VOLCANO),
    )
    yield world.step()
    world.objects[("podgroups", "m")]["status"] = {"phase": "Inqueue"}
    yield world.step(at(1))
    world.run()
    yield world.step(at(2))
    world.edit(runPolicy={"schedulingPolicy": {"minAvailable": 2}})
    yield world.step(at(3))
    world.exit("m-launcher", 0)
    yield world.step(at(4))


def elastic_under_scheduler_plugins() -> Iterator[plan.Plan]:
    """Autoscaled and gang-scheduled; resized, a worker restarted, then suspended."""
    doc = (
        pytorchjob("ns", "a")
        .workers(2, restart_policy="ExitCode")
        .spec(elasticPolicy={"minReplicas": 1, "maxReplicas": 4, "metrics": [CPU]})
        .doc()
    )
    world = World(doc, job_settings.Settings(gang_scheduler=job_settings.SCHEDULER_PLUGINS))
    yield world.step()
    world.job["spec"]["elasticPolicy"]["maxReplicas"] = 6
    world.edit(runPolicy={"schedulingPolicy": {"minAvailable": 1}})
    yield world.step(at(1))
    world.run()
    world.exit("a-worker-0", 137)
    yield world.step(at(2))
    world.edit(runPolicy={"suspend": True})
    yield world.step(at(3))


def test_the_plan_needs_exactly_what_dynamic_declares_for_the_v1_reconciler() -> None:
    found: dict[tuple[str, str, str], set[kube.Resource]] = {}
    for scenario in (mpi_under_volcano, elastic_under_scheduler_plugins):
        for decided in scenario():
            for where, resources in observed_in(decided).items():
                found.setdefault(where, set()).update(resources)
    declared = {
        where: set(cast(tuple[kube.Resource, ...], resources))
        for where, (resources, _) in DYNAMIC.items()
        if where[0] == JOBS and where[2] != "self.resource"
    }
    shown = {
        where: sorted(r.group_resource for r in resources) for where, resources in found.items()
    }
    assert shown == {
        where: sorted(r.group_resource for r in resources) for where, resources in declared.items()
    }
