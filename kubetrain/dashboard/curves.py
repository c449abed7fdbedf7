"""Training curves: the history of what a TrainJob reported through ``kubetrain.report``.

``status.trainerStatus`` holds only the latest report (progress, ETA, metrics, time). The
dashboard keeps the reports it sees, one point per ``lastUpdatedTime``, in a ConfigMap per
TrainJob, ``<job>-training-curves`` in the job's namespace:

- labelled ``kubetrain.io/training-curves-of: <job>``, so one watch finds them all;
- owned by the TrainJob (an ownerReference to its uid), so the garbage collector deletes it
  with the job, on a cluster as on the local control plane;
- written with the user's own credentials (``configmaps`` create and update in the job's
  namespace), compare-and-swap on its resourceVersion, so several dashboards add to one
  history and none loses another's points.

Why a ConfigMap: it lives in the API server, so it survives a restart of the dashboard and is
seen by every dashboard of the cluster, and it needs no new kind, no CRD change and no
permission beyond what a user who runs jobs has. Not an annotation of the TrainJob: kubetrain
leaves users' objects as upstream would, a write to the job would wake every controller that
watches TrainJobs at each report, and annotations share 256 KiB with the user's own. A
ConfigMap holds 1 MiB; the history is kept under :data:`MAX_BYTES` and :data:`MAX_POINTS` by
thinning the older half (every other point dropped), so a long run keeps its whole span at a
coarser grain.

A history has the points reported while some dashboard watched (the report a job holds when
a dashboard starts is always added).

Owns: the point read off a TrainJob, the stored format, merging and thinning, and the
ConfigMap's shape. Pure: no I/O (:mod:`kubetrain.dashboard.recorder` writes it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubetrain.cli import durations, jobs

LABEL: Final = "kubetrain.io/training-curves-of"  # its value: the TrainJob's name
DATA_KEY: Final = "curves.json"
NAME_SUFFIX: Final = "-training-curves"
MAX_POINTS: Final = 2000
MAX_BYTES: Final = 512 * 1024
FORMAT: Final = 1


@dataclass(frozen=True)
class Point:
    """One report: when (seconds since the epoch), progress (%), ETA (s), metric values (a
    value that is not a number is None: it is shown, not plotted)."""

    time: float
    progress: float | None = None
    eta: float | None = None
    metrics: Mapping[str, float | None] = field(default_factory=dict)


def point_of(job: Mapping[str, Any]) -> Point | None:
    """The report a TrainJob holds now, or None when it holds none."""
    status = job.get("status") if isinstance(job.get("status"), Mapping) else {}
    trainer = status.get("trainerStatus")
    if not isinstance(trainer, Mapping):
        return None
    when = durations.timestamp(trainer.get("lastUpdatedTime"))
    if when is None:
        return None
    metrics = {
        str(item.get("name")): _number(item.get("value"))
        for item in trainer.get("metrics") or []
        if isinstance(item, Mapping) and item.get("name")
    }
    return Point(
        when.timestamp(),
        _number(trainer.get("progressPercentage")),
        _number(trainer.get("estimatedRemainingSeconds")),
        metrics,
    )


def merged(points: Iterable[Point], more: Iterable[Point]) -> list[Point]:
    """``points`` and ``more`` by time, one per time (``more`` wins), within the bounds."""
    by_time = {p.time: p for p in points}
    by_time.update((p.time, p) for p in more)
    return bounded([by_time[t] for t in sorted(by_time)])


def bounded(points: Sequence[Point]) -> list[Point]:
    """At most :data:`MAX_POINTS` points encoding to at most :data:`MAX_BYTES`: while over,
    every other point of the older half goes (the first and the newer half stay)."""
    kept = list(points)
    while len(kept) > 2 and (len(kept) > MAX_POINTS or len(encode(kept)) > MAX_BYTES):
        half = len(kept) // 2
        kept = [kept[0], *kept[1:half][1::2], *kept[half:]]
    return kept


def encode(points: Sequence[Point]) -> str:
    """The stored text: metric names once, then a row per point (``[time, progress, eta,
    [value per name]]``)."""
    names = list(dict.fromkeys(name for p in points for name in p.metrics))
    rows = [
        [p.time, p.progress, p.eta, [p.metrics.get(n) if n in p.metrics else None for n in names]]
        for p in points
    ]
    return json.dumps({"format": FORMAT, "metrics": names, "points": rows}, separators=(",", ":"))


def decode(configmap: Mapping[str, Any] | None) -> list[Point]:
    """The points a ConfigMap holds; none when it holds nothing readable."""
    text = ((configmap or {}).get("data") or {}).get(DATA_KEY)
    try:
        doc = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    if not isinstance(doc, Mapping) or doc.get("format") != FORMAT:
        return []
    names = [str(n) for n in doc.get("metrics") or []]
    found = []
    for row in doc.get("points") or []:
        if not (isinstance(row, list) and len(row) == 4 and _number(row[0]) is not None):
            continue
        values = row[3] if isinstance(row[3], list) else []
        metrics = {n: _number(v) for n, v in zip(names, values, strict=False) if v is not None}
        found.append(Point(float(row[0]), _number(row[1]), _number(row[2]), metrics))
    return sorted(found, key=lambda p: p.time)


def configmap_name(job_name: str) -> str:
    return f"{job_name}{NAME_SUFFIX}"


def configmap(job: Mapping[str, Any], points: Sequence[Point]) -> dict[str, Any]:
    """The ConfigMap that keeps ``points`` for ``job``, owned by it."""
    meta = job.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(jobs.name_of(job)),
            "namespace": jobs.namespace_of(job),
            "labels": {LABEL: jobs.name_of(job)},
            "ownerReferences": [
                {
                    "apiVersion": job.get("apiVersion"),
                    "kind": job.get("kind"),
                    "name": jobs.name_of(job),
                    "uid": meta.get("uid"),
                }
            ],
        },
        "data": {DATA_KEY: encode(points)},
    }


def owned_by(configmap: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Whether ``configmap`` keeps the curves of this very job (not of an earlier job of the
    same name, whose ConfigMap the garbage collector has yet to delete)."""
    uid = (job.get("metadata") or {}).get("uid")
    owners = (configmap.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(o, Mapping) and o.get("uid") == uid for o in owners)


def series(points: Sequence[Point]) -> dict[str, Any]:
    """The points as columns, as the browser's charts take them: ``time``, ``progress``,
    ``eta`` and one column per metric, in the order metrics were first reported."""
    names = list(dict.fromkeys(name for p in points for name in p.metrics))
    return {
        "time": [p.time for p in points],
        "progress": [p.progress for p in points],
        "eta": [p.eta for p in points],
        "metrics": {n: [p.metrics.get(n) for p in points] for n in names},
    }


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None
