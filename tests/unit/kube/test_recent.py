"""The recorders' cache of recent Events: keyed by digest, bounded, least recently used out."""

from __future__ import annotations

from kubetrain.kube import recent


def identity(name: str, message: str = "started") -> tuple[str, ...]:
    return (
        "kubelet",
        "node-a",
        "Pod",
        "v1",
        "team",
        name,
        f"uid-{name}",
        "Normal",
        "Started",
        message,
    )


def test_the_same_identity_finds_what_was_written_and_another_does_not() -> None:
    cache = recent.RecentEvents()
    cache.remember(identity("p"), recent.Written("p.1", "team", 1, 10.0))
    found = cache.get(identity("p"))
    assert found == recent.Written("p.1", "team", 1, 10.0)
    assert cache.get(identity("p", message="stopped")) is None
    assert cache.get(identity("q")) is None


def test_parts_are_not_run_together() -> None:
    assert recent.digest(["ab", "c"]) != recent.digest(["a", "bc"])
    assert recent.digest(["a", ""]) != recent.digest(["", "a"])
    assert len(recent.digest(identity("p"))) == 16


def test_the_entry_used_longest_ago_goes_first() -> None:
    cache = recent.RecentEvents(capacity=2)
    cache.remember(identity("a"), recent.Written("a.1", "team", 1, 1.0))
    cache.remember(identity("b"), recent.Written("b.1", "team", 1, 2.0))
    used = cache.get(identity("a"))
    assert used is not None
    used.count += 1
    cache.remember(identity("a"), used)  # a is now the most recent
    cache.remember(identity("c"), recent.Written("c.1", "team", 1, 3.0))
    assert len(cache) == 2
    assert cache.get(identity("b")) is None
    assert cache.get(identity("a")) == recent.Written("a.1", "team", 2, 1.0)
    assert cache.get(identity("c")) is not None
