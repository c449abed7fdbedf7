"""Expectations (kube's ControllerExpectations / UIDTrackingExpectations, the Training
Operator's controller.v1/expectation): a reconciler trusts its cache for a key only once every
create and delete it made has been seen, or the wait has outlived the TTL."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kubetrain.operator.runtime import expectations
from tests.unit.operator.runtime.fakes import FakeClock

KEY = "ns/job/worker/pods"
Step = Callable[[expectations.Expectations, FakeClock], None]


def expect_creations(*names: str) -> Step:
    return lambda e, clock: e.expect_creations(KEY, names)


def expect_deletions(*names: str) -> Step:
    return lambda e, clock: e.expect_deletions(KEY, names)


def created(name: str, key: str = KEY) -> Step:
    return lambda e, clock: e.creation_observed(key, name)


def deleted(name: str) -> Step:
    return lambda e, clock: e.deletion_observed(KEY, name)


def lowered(name: str) -> Step:
    return lambda e, clock: e.lower(KEY, name)


def wait(seconds: float) -> Step:
    return lambda e, clock: clock.advance(seconds)


def forget() -> Step:
    return lambda e, clock: e.forget(KEY)


CASES = [
    pytest.param([], True, id="with nothing expected the cache is trusted"),
    pytest.param([expect_creations("a", "b")], False, id="expected creations hold it back"),
    pytest.param(
        [expect_creations("a", "b"), created("a")], False, id="one of two seen is not enough"
    ),
    pytest.param(
        [expect_creations("a", "b"), created("a"), created("b")],
        True,
        id="every expected creation seen satisfies it",
    ),
    pytest.param(
        [expect_creations("a"), created("a", key="ns/other/worker/pods")],
        False,
        id="a creation seen for another key does not count",
    ),
    pytest.param(
        [expect_creations("a"), created("b")], False, id="an unexpected name does not count"
    ),
    pytest.param(
        [expect_creations("a", "b"), created("a"), lowered("b")],
        True,
        id="a failed create call is no longer expected",
    ),
    pytest.param([expect_deletions("a")], False, id="expected deletions hold it back"),
    pytest.param([expect_deletions("a"), deleted("a")], True, id="a seen deletion satisfies it"),
    pytest.param(
        [expect_deletions("a"), created("a")],
        False,
        id="seeing a creation does not settle an expected deletion",
    ),
    pytest.param(
        [expect_deletions("a"), lowered("a")], True, id="a failed delete call is not expected"
    ),
    pytest.param(
        [expect_creations("a"), wait(299.0)], False, id="an unmet expectation holds within TTL"
    ),
    pytest.param(
        [expect_creations("a"), wait(300.5)], True, id="an unmet expectation expires after TTL"
    ),
    pytest.param(
        [expect_creations("a"), wait(200.0), expect_creations("b"), wait(200.0)],
        False,
        id="new expectations restart the TTL",
    ),
    pytest.param([expect_creations("a"), forget()], True, id="forgetting drops everything"),
    pytest.param([expect_creations()], True, id="expecting no names expects nothing"),
]


@pytest.mark.parametrize(("steps", "satisfied"), CASES)
def test_expectations(steps: list[Step], satisfied: bool) -> None:
    clock = FakeClock()
    e = expectations.Expectations(ttl=300.0, clock=clock)
    for step in steps:
        step(e, clock)
    assert e.satisfied(KEY) is satisfied


def test_pending_names_what_is_still_expected() -> None:
    e = expectations.Expectations()
    e.expect_creations(KEY, ["a", "b"])
    e.expect_deletions(KEY, ["c"])
    e.creation_observed(KEY, "a")
    assert e.pending(KEY) == ({"b"}, {"c"})


def test_an_expired_expectation_is_dropped_so_late_events_do_not_revive_it() -> None:
    clock = FakeClock()
    e = expectations.Expectations(ttl=10.0, clock=clock)
    e.expect_creations(KEY, ["a", "b"])
    clock.advance(11.0)
    assert e.satisfied(KEY)
    e.creation_observed(KEY, "a")
    assert e.pending(KEY) == (frozenset(), frozenset())
    assert e.satisfied(KEY)
