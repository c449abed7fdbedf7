"""kubetrain/api/_podfields.py is what tools/podfields.py makes of the installed Kubernetes
client's models: the field tree the API checks pod templates against is the client's."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from kubetrain.api import _podfields, _podtemplate

GENERATOR = Path(__file__).parents[3] / "tools" / "podfields.py"
REGENERATE = (
    f".venv/bin/python {GENERATOR.relative_to(GENERATOR.parents[1])} > kubetrain/api/_podfields.py"
)


def generator() -> dict[str, Any]:
    return runpy.run_path(str(GENERATOR))


def test_the_field_tree_is_the_installed_clients() -> None:
    expected = generator()["field_tree"]()
    actual = {name: _podtemplate.fields_of(name) for name in _podfields.TYPES}
    assert actual == expected, f"the Kubernetes client changed: {REGENERATE}"


def test_the_generated_module_is_what_the_generator_writes() -> None:
    text = (Path(_podfields.__file__)).read_text(encoding="utf-8")
    assert text == generator()["render"](), f"regenerate it: {REGENERATE}"


def test_every_referenced_type_is_in_the_tree() -> None:
    referenced = {
        reference.strip("[]{}")
        for name in _podfields.TYPES
        for reference in _podtemplate.fields_of(name).values()
        if reference
    }
    assert referenced | set(_podfields.ROOTS) <= set(_podfields.TYPES)


def test_the_tree_holds_what_a_pod_template_is_made_of() -> None:
    assert _podtemplate.fields_of("V1PodTemplateSpec") == {
        "metadata": "V1ObjectMeta",
        "spec": "V1PodSpec",
    }
    container = _podtemplate.fields_of("V1Container")
    assert container["command"] == ""
    assert container["env"] == "[V1EnvVar]"
    assert container["securityContext"] == "V1SecurityContext"
    assert _podtemplate.fields_of("V1JobSpec")["template"] == "V1PodTemplateSpec"
    assert _podtemplate.fields_of("V1Probe")["exec"] == "V1ExecAction"  # wire name, not _exec
