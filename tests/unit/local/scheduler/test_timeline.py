"""The nodes as expected from now on (kubetrain.local.scheduler.timeline): running pods leave
at their expected ends, holds take their nodes from their start to their end, and a window
shows a node at its busiest."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubetrain.local.scheduler import fit, timeline

NOW = 1000.0
FOREVER = timeline.FOREVER


def pod(name: str, cpu: int, ports: tuple[fit.Port, ...] = ()) -> fit.PodInfo:
    return fit.PodInfo("ns", name, uid=name, request={"cpu": Fraction(cpu)}, ports=ports)


def node(name: str = "n1", cpu: int = 4, *pods: fit.PodInfo) -> fit.NodeInfo:
    info = fit.NodeInfo(name, allocatable={"cpu": Fraction(cpu)}, allowed_pods=110)
    for p in pods:
        info.add(p)
    return info


def cpu(picture: list[fit.NodeInfo]) -> list[int]:
    return [int(n.requested.get("cpu", 0)) for n in picture]


def running(
    *ends: tuple[str, int, float],
) -> tuple[list[fit.NodeInfo], list[tuple[str, fit.PodInfo, float]]]:
    """One node n1 with a pod per ``(name, cpu, end)``."""
    pods = [(pod(name, c), end) for name, c, end in ends]
    return [node("n1", 8, *(p for p, _ in pods))], [("n1", p, end) for p, end in pods]


def test_running_pods_leave_at_their_expected_ends() -> None:
    nodes, ends = running(("a", 1, NOW + 10), ("b", 2, NOW + 20), ("c", 4, FOREVER))
    line = timeline.Timeline(nodes, ends, NOW)
    assert line.moments == [NOW, NOW + 10, NOW + 20]
    assert [cpu(p) for p in line.pictures] == [[7], [6], [4]]
    assert cpu(line.after) == [0], "after every running pod has ended, whenever that is"
    assert cpu(nodes) == [7], "the nodes passed in are not changed"


def test_pods_ending_together_make_one_moment() -> None:
    nodes, ends = running(("a", 1, NOW + 10), ("b", 2, NOW + 10))
    line = timeline.Timeline(nodes, ends, NOW)
    assert line.moments == [NOW, NOW + 10]
    assert [cpu(p) for p in line.pictures] == [[3], [0]]


def test_a_pod_whose_end_has_passed_is_taken_as_running_for_ever() -> None:
    nodes, ends = running(("late", 2, NOW - 1))
    line = timeline.Timeline(nodes, ends, NOW)
    assert line.moments == [NOW]
    assert cpu(line.pictures[0]) == [2]


HOLD_CASES = [
    pytest.param(
        NOW + 5,
        NOW + 15,
        [NOW, NOW + 5, NOW + 10, NOW + 15],
        [[1], [2], [1], [0]],
        id="a hold between moments adds its start and end as moments",
    ),
    pytest.param(
        NOW,
        NOW + 10,
        [NOW, NOW + 10],
        [[2], [0]],
        id="a hold from now to an existing moment adds none",
    ),
    pytest.param(
        NOW + 5,
        FOREVER,
        [NOW, NOW + 5, NOW + 10],
        [[1], [2], [1]],
        id="a hold with no known end lasts to the last moment and beyond",
    ),
]


@pytest.mark.parametrize(("start", "end", "moments", "cpus"), HOLD_CASES)
def test_a_hold_takes_its_node_from_start_to_end(
    start: float, end: float, moments: list[float], cpus: list[list[int]]
) -> None:
    nodes, ends = running(("a", 1, NOW + 10))
    line = timeline.Timeline(nodes, ends, NOW)
    line.hold([(pod("h", 1), "n1")], start, end)
    assert line.moments == moments
    assert [cpu(p) for p in line.pictures] == cpus
    assert cpu(line.after) == [1], "after counts every hold, whatever its time"
    assert not line.unknown_start


def test_a_hold_of_unknown_start_is_on_after_only_and_from_then_on_in_every_window() -> None:
    nodes, ends = running(("a", 1, NOW + 10))
    line = timeline.Timeline(nodes, ends, NOW)
    assert cpu(line.window(0, NOW + 5)) == [1]
    line.hold([(pod("u", 6), "n1")], FOREVER, FOREVER)
    assert [cpu(p) for p in line.pictures] == [[1], [0]]
    assert line.unknown_start
    assert cpu(line.window(0, NOW + 5)) == [6], "the peak of now and after"


def test_a_window_is_the_busiest_of_the_moments_it_spans() -> None:
    nodes, ends = running(("a", 3, NOW + 10))
    line = timeline.Timeline(nodes, ends, NOW)
    line.hold([(pod("later", 5), "n1")], NOW + 20, NOW + 30)
    assert line.moments == [NOW, NOW + 10, NOW + 20, NOW + 30]
    assert cpu(line.window(0, NOW + 10)) == [3], "a run that ends as a moment begins skips it"
    assert cpu(line.window(1, NOW + 20)) == [0]
    assert cpu(line.window(0, NOW + 25)) == [5]
    assert cpu(line.window(3, FOREVER)) == [0]
    window = line.window(0, FOREVER)
    window[0].add(pod("x", 1))
    assert cpu(line.pictures[2]) == [5], "a window is a fresh picture"
    assert list(line.moments_from(1, NOW + 25)) == [1, 2]


def test_the_peak_of_a_node_is_the_most_of_each_resource_count_and_port() -> None:
    web = ("TCP", "0.0.0.0", 80)
    ssh = ("TCP", "0.0.0.0", 22)
    first = node("n1", 8, pod("a", 3, (web,)))
    second = node("n1", 8, pod("b", 1, (ssh,)), pod("c", 1))
    peak = fit.NodeInfo.peak([first, second])
    assert (peak.requested["cpu"], peak.pod_count, set(peak.ports)) == (3, 2, {web, ssh})
    assert fit.reasons(pod("d", 5), peak) == []
    assert fit.reasons(pod("d", 6), peak) == ["Insufficient cpu"]
    assert fit.reasons(pod("e", 1, (ssh,)), peak) == [
        "node(s) didn't have free ports for the requested pod ports"
    ]
    assert first.pod_count == 1, "the pictures are not changed"
