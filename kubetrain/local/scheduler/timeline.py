"""The nodes as they are expected to be from now on: what conservative backfill needs to tell
whether a unit may start now without delaying any unit ahead of it, and when a unit that
waits could start at the latest.

The timeline is a list of *moments*, the first being now; from one moment to the next nothing
is expected to change. Running pods leave at their expected ends
(:mod:`~kubetrain.local.scheduler.estimates`); a pod whose end is unknown never leaves.
Every *hold* the policy adds (a unit started now, or a reservation from a later moment) takes
its pods' resources from its start until its expected end, or for ever when its runtime is
unknown. What a unit may use over a stretch of time is what the nodes have free at the
busiest of its moments (:meth:`~kubetrain.local.scheduler.fit.NodeInfo.peak`): one
placement that fits beside that fits at every moment.

One more picture, *after*, stands for "once every running pod has ended", a time nobody
knows when a running pod's end is unknown. A unit that cannot fit on the timeline at all (a
pod of unknown end stands in its way) is reserved there. Since that time could be any time
from now on, *after* counts, besides those reservations, every hold of the cycle whatever
its start and end; and as soon as one unit is reserved there, every later hold must fit
beside it too. Unknown runtimes thus make the timeline cautious, never hopeful.

Owns: the expected pictures of the nodes over time, and adding holds to them. Must not:
place units, order them, or decide who starts (see :mod:`~kubetrain.local.scheduler.policy`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence

from kubetrain.local.scheduler import fit

FOREVER = math.inf

Placement = Sequence[tuple[fit.PodInfo, str]]  # (pod, node name)


class Timeline:
    def __init__(
        self,
        nodes: Sequence[fit.NodeInfo],
        ends: Iterable[tuple[str, fit.PodInfo, float]],
        now: float,
    ) -> None:
        """``nodes`` as they are now, with the pods that hold them; ``ends`` names those pods
        with their node and expected end (FOREVER: unknown; an end not after ``now`` counts
        as unknown too, since the pod still runs). Nothing passed in is changed."""
        picture = [n.clone() for n in nodes]
        self.moments: list[float] = [now]
        self.pictures: list[list[fit.NodeInfo]] = [picture]
        self.after: list[fit.NodeInfo] = [n.emptied() for n in nodes]
        self.unknown_start = False  # something is reserved on ``after``
        names = {n.name: i for i, n in enumerate(nodes)}
        ending = sorted((e for e in ends if e[0] in names and e[2] > now), key=lambda e: e[2])
        for name, pod, end in ending:
            if end == FOREVER:
                break
            if end != self.moments[-1]:
                self.moments.append(end)
                self.pictures.append([n.clone() for n in self.pictures[-1]])
            self.pictures[-1][names[name]].remove(pod)

    def now(self) -> list[fit.NodeInfo]:
        """The nodes now, with what was started in this cycle (a live view: do not change)."""
        return self.pictures[0]

    def at(self, moment: float) -> list[fit.NodeInfo]:
        """The picture at ``moment``, one of the moments (a live view: do not change)."""
        return self.pictures[bisect.bisect_right(self.moments, moment) - 1]

    def window(self, first: int, end: float) -> list[fit.NodeInfo]:
        """What a unit starting at moment ``first`` and running until ``end`` may use: per
        node, the peak of the moments it spans (and of *after*, once something is reserved
        there). A fresh picture: the caller may place pods on it."""
        spans = [self.pictures[i] for i in self.moments_from(first, end)]
        if self.unknown_start:
            spans = [*spans, self.after]
        return [fit.NodeInfo.peak(moment) for moment in zip(*spans, strict=True)]

    def moments_from(self, first: int, end: float) -> range:
        """The indices of the moments from ``first`` that a unit running until ``end`` spans."""
        return range(first, bisect.bisect_left(self.moments, end, lo=first + 1))

    def hold(self, placed: Placement, start: float, end: float) -> None:
        """``placed`` holds its nodes from ``start`` (a moment, or FOREVER: on *after* only)
        until ``end`` (FOREVER: for ever)."""
        by_name = {n.name: i for i, n in enumerate(self.after)}
        for pod, name in placed:
            self.after[by_name[name]].add(pod)
        if start == FOREVER:
            self.unknown_start = True
            return
        if end <= start:
            return
        first = self._split(start)
        last = self._split(end) if end != FOREVER else len(self.moments)
        for moment in self.pictures[first:last]:
            for pod, name in placed:
                moment[by_name[name]].add(pod)

    def _split(self, at: float) -> int:
        """The index of the moment ``at`` (now or later), made a moment if it is not one
        yet."""
        at = max(at, self.moments[0])
        i = bisect.bisect_left(self.moments, at)
        if i < len(self.moments) and self.moments[i] == at:
            return i
        self.moments.insert(i, at)  # i > 0: the first moment is now
        self.pictures.insert(i, [n.clone() for n in self.pictures[i - 1]])
        return i
