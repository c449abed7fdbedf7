"""Job manifests, however malformed, get a verdict from :func:`kubetrain.api.review` whose every
error names the field it is about, and never an exception.

tests/unit/cli/test_properties.py mutates corpus manifests and checks that a verdict comes
back; this suite adds what an admission path relies on besides:

- every error of an object has a field path, rooted at one of the object's own keys or at a
  field the object must have (``apiVersion``, ``kind``, ``metadata``, ``spec``); only a
  document that is no object at all gets its one error at the root;
- updates (a valid object changed into a mangled one, and the reverse), and TrainJobs judged
  against the corpus runtimes, are judged without an exception too;
- :func:`kubetrain.api.admit` raises nothing but :class:`kubetrain.api.Invalid`, carrying
  the same errors;
- objects of any kind kubetrain serves built from random JSON, nested beyond any limit, or
  with values of every type at every known field.
"""

from __future__ import annotations

import copy
import os
import re
from typing import TYPE_CHECKING, Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain import api
from tests.unit.cli.test_properties import BASES, JSON_VALUES, RUNTIMES, mutated

if TYPE_CHECKING:  # imported by pytest as a plugin, before this module (see below)
    from tests.reliability.security_fixtures import Figures

pytest_plugins = ["tests.reliability.security_fixtures"]  # the bad_input_figures fixture

REQUIRED: Final = frozenset({"apiVersion", "kind", "metadata", "spec"})
KINDS: Final = sorted({(doc["apiVersion"], doc["kind"]) for doc in BASES})
FIELD_PATH: Final = re.compile(r"[^.\[\]]+(\.[^.\[\]]+|\[[^\]]*\])*")


def scaled(examples: int) -> int:
    """``examples`` times ``$KUBETRAIN_FUZZ_SCALE`` (default 1): a longer hunt on demand."""
    return max(1, round(examples * float(os.environ.get("KUBETRAIN_FUZZ_SCALE", "1"))))


SETTINGS: Final = settings(
    max_examples=scaled(200),
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)


def runtime_lookup() -> api.RuntimeLookup:
    found: dict[tuple[str, str | None, str], Any] = {}
    for doc in RUNTIMES:
        verdict = api.review(doc)
        assert verdict.ok, verdict.messages()
        namespace = doc["metadata"].get("namespace") or "default"
        key = (doc["kind"], namespace if doc["kind"] == "TrainingRuntime" else None)
        found[(*key, doc["metadata"]["name"])] = verdict.obj
    return lambda kind, namespace, name: found.get((kind, namespace, name))


FIND_RUNTIME: Final = runtime_lookup()


def rooted(path: str, keys: set[str] | frozenset[str]) -> bool:
    """Whether ``path`` starts at one of ``keys`` (which may hold "." or "[" themselves)."""
    return any(path == key or path.startswith((f"{key}.", f"{key}[")) for key in keys)


def check(raw: Any, old: Any = None) -> api.Review:
    """The verdict on ``raw``, with what every verdict must satisfy."""
    verdict = api.review(raw, old, find_runtime=FIND_RUNTIME)
    assert isinstance(verdict, api.Review)
    assert verdict.ok == (verdict.obj is not None)
    assert all(isinstance(e, api.FieldError) for e in verdict.errors)
    if not isinstance(raw, dict):
        assert not verdict.ok
        assert [e.path for e in verdict.errors] == [""]
        return verdict
    keys = {str(k) for k in raw}
    for error in verdict.errors:
        if not error.path:  # a top-level key "" is a field too, named by the empty path
            assert "" in keys, f"an error names no field: {error}"
            assert error.type is api.ErrorType.UNKNOWN_FIELD, error
            continue
        assert rooted(error.path, keys | REQUIRED), f"{error.path} is not in the object: {error}"
        if FIELD_PATH.fullmatch(error.path) is None:
            # only a key that itself holds "." or "[" may make the path irregular
            assert any(c in error.path for c in ".[]"), error.path
        assert str(error).startswith(f"{error.path}: {error.type.value}")
    if verdict.ok:
        admitted = api.admit(raw, old, find_runtime=FIND_RUNTIME)
        assert type(admitted) is type(verdict.obj)
    else:
        with pytest.raises(api.Invalid) as raised:
            api.admit(raw, old, find_runtime=FIND_RUNTIME)
        assert raised.value.review.errors == verdict.errors
    return verdict


@pytest.fixture(scope="module")
def counted(bad_input_figures: Figures) -> Figures:
    return bad_input_figures


@SETTINGS
@given(data=st.data())
def test_a_mangled_manifest_gets_errors_that_name_their_fields(
    data: st.DataObject, counted: Figures
) -> None:
    check(mutated(data))
    counted.add("inputs: manifests")


@SETTINGS
@given(data=st.data())
def test_an_update_to_or_from_a_mangled_manifest_is_judged(
    data: st.DataObject, counted: Figures
) -> None:
    changed = mutated(data)
    same_kind = [b for b in BASES if b["kind"] == changed.get("kind")]
    base = same_kind[0] if same_kind else BASES[0]
    check(changed, copy.deepcopy(base))
    check(copy.deepcopy(base), changed)
    counted.add("inputs: manifests", 2)


FIELDS: Final = st.sampled_from(["metadata", "spec", "status", "runPolicy", "trainer", "x"])


@SETTINGS
@given(
    kind=st.sampled_from(KINDS),
    body=st.dictionaries(FIELDS, JSON_VALUES, max_size=4),
)
def test_any_json_under_a_known_kind_is_judged(
    kind: tuple[str, str], body: dict[str, Any], counted: Figures
) -> None:
    check({"apiVersion": kind[0], "kind": kind[1], **body})
    counted.add("inputs: manifests")


@SETTINGS
@given(doc=JSON_VALUES)
def test_any_json_at_all_is_judged(doc: Any, counted: Figures) -> None:
    check(doc)
    counted.add("inputs: manifests")


def nested(levels: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    node = top
    for _ in range(levels - 1):
        node["a"] = {}
        node = node["a"]
    return top


@pytest.mark.parametrize("levels", [150, 5_000])
@pytest.mark.parametrize("where", ["metadata", "spec", "container", "old"])
def test_nesting_beyond_any_limit_is_a_field_error_not_a_recursion_error(
    levels: int, where: str, counted: Figures
) -> None:
    base = next(b for b in BASES if b["kind"] == "PyTorchJob")
    doc = copy.deepcopy(base)
    old = None
    if where == "metadata":
        doc["metadata"]["annotations"] = nested(levels)
    elif where == "spec":
        doc["spec"]["runPolicy"] = nested(levels)
    elif where == "container":
        replica = next(iter(doc["spec"]["pytorchReplicaSpecs"].values()))
        replica["template"]["spec"]["containers"][0]["env"] = [nested(levels)]
    else:
        old = copy.deepcopy(base)
        old["spec"]["runPolicy"] = nested(levels)
    verdict = check(doc, old)
    counted.add("inputs: manifests")
    if where == "old":
        assert verdict.ok, verdict.messages()
        return
    assert not verdict.ok
    assert "nested more than 100 levels deep" in str(verdict.errors[0])
