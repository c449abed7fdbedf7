"""Test doubles for the runtime's unit tests: a clock moved by hand, and an in-memory stand-in
for the few client calls the leader elector and the event recorder make (get, create,
replace with a resourceVersion compare-and-swap, merge patch), with errors injectable per
call, answers that get lost after the call took effect, and a gate that holds every call
until it is opened.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubetrain import _aio, kube

T = TypeVar("T")


class FakeClock:
    """Monotonic seconds that move only when told."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Call:
    verb: str
    resource: str
    namespace: str | None
    name: str
    body: Any = None


@dataclass
class FakeClient:
    """Objects by (plural, namespace, name); ``fail[verb]`` holds errors raised by the next
        calls of that verb, in order, before they do anything; ``lost[verb]`` errors raised by
        the next calls after they took effect (the answer lost on the way). While ``gate`` is
        set and not open, every call waits for it (``held`` counts them); while ``answer_gate`` is,
    creates and patches wait for it after they took effect."""

    objects: dict[tuple[str, str | None, str], dict[str, Any]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    fail: dict[str, list[Exception]] = field(default_factory=dict)
    lost: dict[str, list[Exception]] = field(default_factory=dict)
    gate: asyncio.Event | None = None
    held: int = 0  # calls waiting at the gate now
    answer_gate: asyncio.Event | None = None  # creates and patches wait here once done
    version: int = 0

    def _check(self, verb: str) -> None:
        errors = self.fail.get(verb)
        if errors:
            raise errors.pop(0)

    async def _answer(self, verb: str) -> None:
        if self.answer_gate is not None:
            await self.answer_gate.wait()
        errors = self.lost.get(verb)
        if errors:
            raise errors.pop(0)

    async def _wait(self) -> None:
        if self.gate is not None:
            self.held += 1
            try:
                await self.gate.wait()
            finally:
                self.held -= 1

    def _next_version(self) -> str:
        self.version += 1
        return str(self.version)

    async def get(
        self, resource: kube.Resource, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        await self._wait()
        self.calls.append(Call("get", resource.plural, namespace, name))
        self._check("get")
        found = self.objects.get((resource.plural, namespace, name))
        if found is None:
            raise kube.NotFound(f"{resource.plural} {name} not found", code=404)
        return copy.deepcopy(found)

    async def create(
        self, resource: kube.Resource, body: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        await self._wait()
        name = body["metadata"]["name"]
        self.calls.append(Call("create", resource.plural, namespace, name, copy.deepcopy(body)))
        self._check("create")
        key = (resource.plural, namespace, name)
        if key in self.objects:
            raise kube.AlreadyExists(f"{name} exists", code=409, reason="AlreadyExists")
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = self._next_version()
        self.objects[key] = stored
        await self._answer("create")
        return copy.deepcopy(stored)

    async def replace(
        self, resource: kube.Resource, body: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        await self._wait()
        name = body["metadata"]["name"]
        self.calls.append(Call("replace", resource.plural, namespace, name, copy.deepcopy(body)))
        self._check("replace")
        key = (resource.plural, namespace, name)
        current = self.objects.get(key)
        if current is None:
            raise kube.NotFound(f"{name} not found", code=404)
        given = body["metadata"].get("resourceVersion")
        if given is not None and given != current["metadata"]["resourceVersion"]:
            raise kube.Conflict(f"{name} changed", code=409, reason="Conflict")
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = self._next_version()
        self.objects[key] = stored
        return copy.deepcopy(stored)

    async def patch(
        self,
        resource: kube.Resource,
        name: str,
        patch: dict[str, Any],
        *,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        await self._wait()
        self.calls.append(Call("patch", resource.plural, namespace, name, copy.deepcopy(patch)))
        self._check("patch")
        key = (resource.plural, namespace, name)
        current = self.objects.get(key)
        if current is None:
            raise kube.NotFound(f"{name} not found", code=404)
        current.update(copy.deepcopy(patch))
        current["metadata"]["resourceVersion"] = self._next_version()
        await self._answer("patch")
        return copy.deepcopy(current)

    def verbs(self) -> list[str]:
        return [c.verb for c in self.calls]


async def until(condition: Callable[[], object], timeout: float = 5.0) -> None:
    """Wait until ``condition()`` is truthy; fail after ``timeout`` seconds."""
    async with _aio.timeout(timeout):
        while True:
            if condition():
                return
            await asyncio.sleep(0.001)


def run(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run one test's coroutine, with asyncio debug on."""
    return asyncio.run(factory(), debug=True)
