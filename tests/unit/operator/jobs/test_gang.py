"""Gang scheduling: the PodGroup of a job and what its pods carry (reference 6.4)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubetrain.operator.jobs import gang, settings
from tests.builders import pytorchjob, tfjob
from tests.unit.operator.jobs.world import World, at

VOLCANO = settings.Settings(gang_scheduler="volcano")
PLUGINS = settings.Settings(gang_scheduler="scheduler-plugins")


def requests(builder: Any, rtype: str, cpu: str, priority: str | None = None) -> Any:
    spec = builder._doc["spec"][builder.field][rtype]["template"]["spec"]
    spec["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    if priority:
        spec["priorityClassName"] = priority
    return builder


def test_a_volcano_pod_group_is_named_like_the_job_and_owned_by_it() -> None:
    doc = (
        pytorchjob("ns", "a")
        .master()
        .workers(2)
        .run_policy(schedulingPolicy={"queue": "research", "priorityClass": "high"})
        .doc()
    )
    world = World(doc, VOLCANO)
    decided = world.step()
    groups = [c for c in decided.creates if c.resource == gang.VOLCANO_POD_GROUPS]
    (group,) = groups
    assert group.body["metadata"]["name"] == "a"
    assert group.body["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    assert group.body["spec"] == {"minMember": 3, "queue": "research", "priorityClassName": "high"}


def test_volcano_pods_wait_until_the_pod_group_is_admitted() -> None:
    world = World(pytorchjob("ns", "a").master().workers(1).doc(), VOLCANO)
    world.step()
    assert world.pods == {}
    world.objects[("podgroups", "a")]["status"] = {"phase": "Pending"}
    world.step(at(1))
    assert world.pods == {}
    world.objects[("podgroups", "a")]["status"] = {"phase": "Inqueue"}
    world.step(at(2))
    pod = world.pods["a-worker-0"]
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "a",
        "volcano.sh/task-spec": "worker",
    }


def test_scheduler_plugins_pods_are_created_at_once_with_the_pod_group_label() -> None:
    doc = (
        pytorchjob("ns", "a")
        .workers(2)
        .run_policy(schedulingPolicy={"minAvailable": 1, "scheduleTimeoutSeconds": 30})
        .doc()
    )
    world = World(doc, PLUGINS)
    world.step()
    group = world.objects[("podgroups", "a")]
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["spec"] == {"minMember": 1, "scheduleTimeoutSeconds": 30}
    pod = world.pods["a-worker-1"]
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "a"
    assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"


def test_a_template_naming_another_scheduler_keeps_it_with_a_warning() -> None:
    doc = pytorchjob("ns", "a").workers(1).doc()
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "mine"
    world = World(doc, PLUGINS)
    decided = world.step()
    assert world.pods["a-worker-0"]["spec"]["schedulerName"] == "mine"
    assert ("Warning", "SetPodTemplateSchedulerName") in [
        (e.type, e.reason) for e in decided.events
    ]


def test_an_existing_volcano_queue_is_kept_and_a_changed_spec_is_patched() -> None:
    world = World(pytorchjob("ns", "a").workers(2).doc(), VOLCANO)
    world.step()
    world.objects[("podgroups", "a")]["spec"]["queue"] = "assigned-by-kueue"
    world.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    decided = world.plan(at(1))
    assert [(p.name, p.patch) for p in decided.patches] == [("a", {"spec": {"minMember": 3}})]


def test_the_pod_group_is_deleted_when_the_job_finishes() -> None:
    world = World(pytorchjob("ns", "a").workers(1).doc(), PLUGINS)
    world.step()
    world.run()
    world.exit("a-worker-0", 0)
    decided = world.step(at(1))
    assert [(d.resource, d.name) for d in decided.deletes] == [(gang.COSCHEDULING_POD_GROUPS, "a")]
    assert ("Normal", "JobTerminated") in [(e.type, e.reason) for e in decided.events]


def test_min_resources_sum_the_requests_of_the_highest_priority_pods_first() -> None:
    builder = tfjob("ns", "t").replica("PS", 2).workers(2)
    builder = requests(builder, "PS", "500m", priority="low")
    builder = requests(builder, "Worker", "2", priority="high")
    job = builder.run_policy(schedulingPolicy={"minAvailable": 3}).build()
    assert gang.min_resources(job, {"high": 1000, "low": 10}) == {
        "cpu": "4500m",
        "memory": "3221225472",
    }


def test_given_min_resources_are_used_as_written() -> None:
    job = (
        pytorchjob().workers(2).run_policy(schedulingPolicy={"minResources": {"cpu": "3"}}).build()
    )
    assert gang.min_resources(job, {}) == {"cpu": "3"}


def test_limits_count_for_a_container_without_requests() -> None:
    job = pytorchjob().workers(2, limits={"cpu": "1"}).build()
    # the API server defaults requests from limits; here the template has limits only
    assert gang.min_resources(job, {}) == {"cpu": "2"}


@pytest.mark.parametrize(
    ("amount", "text"),
    [(Fraction(3), "3"), (Fraction(3, 2), "1500m"), (Fraction(1, 3), "334m")],
    ids=["whole numbers stay whole", "fractions go to milli-units", "and round up"],
)
def test_format_quantity(amount: Fraction, text: str) -> None:
    assert gang.format_quantity(amount) == text
