"""Reading one container's log through the ``pods/log`` API, line by line as it arrives.

A pod whose container has not started has no log yet; :func:`started` says when one may be
read. Blank lines are not delivered (the client's line reader skips them).

Must not: decide which pods to read or wait for them; the clients do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from kubetrain import kube
from kubetrain.sdk import _status
from kubetrain.sdk._errors import JobFailedError


async def lines(
    client: kube.Client,
    namespace: str,
    pod: str,
    container: str,
    *,
    follow: bool = False,
    tail: int | None = None,
    previous: bool = False,
) -> AsyncIterator[str]:
    """The container's log, a line at a time; with ``follow`` until the container ends; with
    ``previous``, the log of the instance before its last restart."""
    path = kube.resource.PODS.path(namespace, pod, "log")
    query = {
        "container": container,
        "follow": "true" if follow else None,
        "tailLines": tail,
        "previous": "true" if previous else None,
    }
    async with client.stream(path, query=query) as body:
        async for raw in body:
            yield raw.decode("utf-8", errors="replace").rstrip("\r")


async def last_words(
    client: kube.Client, namespace: str, pod: str, container: str, *, tail: int
) -> list[str]:
    """The last lines of the container instance that ended last: the current one's if it
    has a log, else (restarted, waiting to run again) the previous one's; [] if neither can
    be read."""
    for previous in (False, True):
        try:
            found = [
                line
                async for line in lines(
                    client, namespace, pod, container, tail=tail, previous=previous
                )
            ]
        except kube.ApiError:
            continue
        if found:
            return found
    return []


def started(pod: Mapping[str, Any], container: str) -> bool:
    """Whether the container has a log to read: it runs, or ran and ended."""
    status = _status.container_status(pod, container)
    if status is not None:
        state = status.get("state") or {}
        return "running" in state or "terminated" in state
    return _status.dig(pod, "status", "phase") in ("Running", "Succeeded", "Failed")


async def failed(
    client: kube.Client,
    job: Any,
    failure: _status.Failure,
    namespace: str,
    container: str,
    *,
    tail: int,
) -> JobFailedError:
    """What a wait raises once a job failed: the failure's message, and the last ``tail``
    lines of the step to blame (TrainJob step or v1 replica alike), shown and kept."""
    words: list[str] = []
    if failure.pod is not None:
        words = await last_words(client, namespace, failure.pod, container, tail=tail)
    message = failure.message
    if words:
        message += f"\nlast lines of {failure.step}:\n" + "\n".join(f"  {t}" for t in words)
    return JobFailedError(
        message, job=job, step=failure.step, exit_code=failure.exit_code, logs=tuple(words)
    )
