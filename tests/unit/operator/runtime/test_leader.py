"""Leader election decisions, as client-go's leaderelection makes them: who may take a lease,
what a renewal and a takeover write, what a release leaves; then an elector against an
in-memory Lease, on a clock moved by hand."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubetrain import kube
from kubetrain.operator.runtime import leader
from tests.unit.operator.runtime.fakes import FakeClient, FakeClock, run

T0 = "2026-01-01T00:00:00.000000Z"
T1 = "2026-01-01T00:00:05.000000Z"


@pytest.mark.parametrize(
    ("record", "observed_at", "now", "held"),
    [
        pytest.param(leader.Record(), 0.0, 0.0, False, id="an empty lease is free"),
        pytest.param(
            leader.Record("me", 15), 0.0, 1.0, False, id="our own lease is never held against us"
        ),
        pytest.param(
            leader.Record("other", 15), 100.0, 110.0, True, id="another's fresh lease is held"
        ),
        pytest.param(
            leader.Record("other", 15),
            100.0,
            115.0,
            False,
            id="another's lease expires its duration after we saw it change",
        ),
        pytest.param(
            leader.Record("other", 15),
            100.0,
            114.9,
            True,
            id="just before expiry it is still held",
        ),
        pytest.param(
            leader.Record("", 1), 100.0, 100.0, False, id="a released lease is free at once"
        ),
    ],
)
def test_held_by_another(record: leader.Record, observed_at: float, now: float, held: bool) -> None:
    assert leader.held_by_another(record, "me", observed_at, now) is held


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        pytest.param(None, leader.Record("me", 15, T1, T1, 0), id="a new lease starts at 0"),
        pytest.param(
            leader.Record("me", 15, T0, T0, 3),
            leader.Record("me", 15, T0, T1, 3),
            id="a renewal keeps acquireTime and transitions, moves renewTime",
        ),
        pytest.param(
            leader.Record("other", 15, T0, T0, 3),
            leader.Record("me", 15, T1, T1, 4),
            id="a takeover counts a transition and sets acquireTime",
        ),
        pytest.param(
            leader.Record("", 1, T0, T0, 4),
            leader.Record("me", 15, T1, T1, 5),
            id="taking a released lease counts a transition too",
        ),
    ],
)
def test_claim(current: leader.Record | None, expected: leader.Record) -> None:
    assert leader.claim(current, "me", 15, T1) == expected


def test_a_release_empties_the_holder_and_keeps_the_count() -> None:
    assert leader.released(leader.Record("me", 15, T0, T0, 2), T1) == leader.Record(
        "", 1, T1, T1, 2
    )


def test_a_record_reads_and_writes_the_lease_spec() -> None:
    spec = {
        "holderIdentity": "me",
        "leaseDurationSeconds": 15,
        "acquireTime": T0,
        "renewTime": T1,
        "leaseTransitions": 2,
    }
    record = leader.Record.of({"spec": spec})
    assert record == leader.Record("me", 15, T0, T1, 2)
    assert record.spec() == spec
    assert leader.Record.of({}) == leader.Record()


@pytest.mark.parametrize(
    ("timing", "problem"),
    [
        pytest.param((10, 10, 2), "longer than the renew deadline", id="duration = deadline"),
        pytest.param((15, 2, 2), "exceed 1.2", id="deadline too close to the retry period"),
        pytest.param((15, 10, 0), "positive", id="no retry period"),
    ],
)
def test_timing_is_checked_as_client_go_does(timing: tuple[float, ...], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        leader.Timing(*timing)


def test_lease_seconds_are_whole_and_at_least_one() -> None:
    assert leader.Timing(15, 10, 2).lease_seconds == 15
    assert leader.Timing(1.5, 1.0, 0.2).lease_seconds == 2
    assert leader.Timing(0.5, 0.4, 0.1).lease_seconds == 1


def test_microtime() -> None:
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=datetime.timezone.utc)
    assert leader.microtime(moment) == "2026-01-02T03:04:05.000678Z"


# -- an elector against an in-memory Lease -----------------------------------------------------

WALL = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def elector(client: FakeClient, clock: FakeClock, identity: str) -> leader.Elector:
    async def sleep(seconds: float) -> None:
        clock.advance(seconds)

    return leader.Elector(
        client,  # type: ignore[arg-type]
        name="lock",
        namespace="ns",
        identity=identity,
        monotonic=clock,
        wall=lambda: WALL + datetime.timedelta(seconds=clock.now),
        sleep=sleep,
    )


def lease(client: FakeClient) -> dict[str, Any]:
    return client.objects[("leases", "ns", "lock")]["spec"]


def test_the_first_candidate_creates_the_lease_and_the_second_waits() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        assert await a.try_acquire_or_renew()
        assert a.is_leader
        assert lease(client)["holderIdentity"] == "a"
        assert lease(client)["leaseDurationSeconds"] == 15
        assert lease(client)["leaseTransitions"] == 0
        assert not await b.try_acquire_or_renew()
        assert not b.is_leader
        clock.advance(14.0)
        assert not await b.try_acquire_or_renew(), "b saw the record 14 s ago: not expired"

    run(scenario)


def test_a_standby_takes_over_a_lease_nobody_renews() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        clock.advance(10.0)
        assert await a.try_acquire_or_renew(), "a renews"
        clock.advance(10.0)
        assert not await b.try_acquire_or_renew(), "b saw the renewal: the clock starts again"
        clock.advance(15.0)
        assert await b.try_acquire_or_renew()
        assert lease(client)["holderIdentity"] == "b"
        assert lease(client)["leaseTransitions"] == 1
        assert not await a.try_acquire_or_renew()
        assert not a.is_leader

    run(scenario)


def test_a_released_lease_is_taken_at_the_next_try() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        assert await a.release()
        assert lease(client)["holderIdentity"] == ""
        assert lease(client)["leaseDurationSeconds"] == 1
        assert not a.is_leader
        assert await b.try_acquire_or_renew()
        assert lease(client)["leaseTransitions"] == 1

    run(scenario)


def test_of_two_candidates_writing_the_same_version_one_wins() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        assert await a.try_acquire_or_renew()
        assert await a.release()
        # b read the released lease; a takes it back before b writes
        original_replace = client.replace

        async def a_writes_first(*args: Any, **kwargs: Any) -> dict[str, Any]:
            client.replace = original_replace  # type: ignore[method-assign]
            await a.try_acquire_or_renew()
            return await original_replace(*args, **kwargs)

        client.replace = a_writes_first  # type: ignore[method-assign]
        assert not await b.try_acquire_or_renew(), "b's write carries a stale resourceVersion"
        assert lease(client)["holderIdentity"] == "a"

    run(scenario)


def test_acquire_retries_until_the_lease_expires() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        assert await a.try_acquire_or_renew()
        started = clock.now
        await b.acquire()
        assert b.is_leader
        assert 15.0 <= clock.now - started <= 15.0 + 2.2 * 2.0

    run(scenario)


def test_api_errors_are_a_failed_try_not_a_crash() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a = elector(client, clock, "a")
        client.fail["get"] = [kube.Unavailable("connection refused")]
        assert not await a.try_acquire_or_renew()
        client.fail["create"] = [kube.Forbidden("no", code=403)]
        assert not await a.try_acquire_or_renew()
        assert await a.try_acquire_or_renew()

    run(scenario)


def landed_unseen_renewal(client: FakeClient, holder: str) -> None:
    """A write to the lease its candidate never heard back about (a renewal that a stop cut
    short after the server took it): the lease moves on to a version the candidate has not
    read."""
    stored = client.objects[("leases", "ns", "lock")]
    stored["spec"] = {**stored["spec"], "holderIdentity": holder}
    stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 100)


def test_a_release_after_a_renewal_whose_answer_was_lost_still_releases() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a = elector(client, clock, "a")
        assert await a.try_acquire_or_renew()
        landed_unseen_renewal(client, "a")
        assert await a.release()
        assert lease(client)["holderIdentity"] == ""

    run(scenario)


def test_a_release_leaves_a_lease_another_candidate_took_meanwhile() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a = elector(client, clock, "a")
        assert await a.try_acquire_or_renew()
        landed_unseen_renewal(client, "b")
        assert not await a.release()
        assert lease(client)["holderIdentity"] == "b"

    run(scenario)


def test_a_release_after_a_claim_whose_answer_was_lost_still_releases() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a, other = elector(client, clock, "a"), elector(client, clock, "b")
        assert await other.try_acquire_or_renew()  # the lease exists: b's, then a's unseen
        landed_unseen_renewal(client, "a")
        assert not a.is_leader, "a never heard back"
        assert await a.release()
        assert lease(client)["holderIdentity"] == ""

    run(scenario)


def test_a_standby_s_release_writes_nothing() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock()
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        writes = len([c for c in client.calls if c.verb == "replace"])
        assert await b.release()
        assert lease(client)["holderIdentity"] == "a"
        assert len([c for c in client.calls if c.verb == "replace"]) == writes

    run(scenario)
