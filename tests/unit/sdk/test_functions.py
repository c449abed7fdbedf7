"""A function is checked for self-containment before it is shipped, and the script built from
it calls it with func_args as keyword arguments (kubetrain.sdk._functions)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.sdk import InvalidTrainer, _functions
from tests.unit.sdk import trainfuncs


def run_script(script: str) -> dict[str, Any]:
    """Execute a script the way ``python3 -c`` would, in a namespace of its own."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(script, "<string>", "exec"), namespace)
    return namespace


def test_a_self_contained_function_runs_alone_with_its_arguments_as_keywords() -> None:
    prepared = _functions.prepare(trainfuncs.self_contained, {"epochs": 4, "lr": 0.5})
    assert prepared.name == "self_contained"
    assert prepared.script.startswith("def self_contained(epochs: int, lr: float = 0.01)")
    assert prepared.script.rstrip().endswith("self_contained(**{'epochs': 4, 'lr': 0.5})")
    ran = run_script(prepared.script)
    assert ran["RESULT"]["epochs"] == 4
    assert ran["RESULT"]["lr"] == 0.5
    assert ran["RESULT"]["twice"] == 8
    assert "trainfuncs" not in prepared.script  # nothing of the defining module comes along


def test_a_function_without_arguments_is_called_bare() -> None:
    prepared = _functions.prepare(trainfuncs.no_arguments)
    assert prepared.script.rstrip().endswith("\nno_arguments()")


def test_v1_style_passes_the_parameters_as_one_dict() -> None:
    def train(parameters: dict) -> None:
        print(parameters)

    prepared = _functions.prepare(train, {"lr": "0.1"}, style="positional")
    assert prepared.script.rstrip().endswith("train({'lr': '0.1'})")


@pytest.mark.parametrize(
    ("func", "expected"),
    [
        pytest.param(
            trainfuncs.uses_module_global,
            "LEARNING_RATE is a global variable (pass it in func_args)",
            id="a module global is named, with the fix: pass it in func_args",
        ),
        pytest.param(
            trainfuncs.uses_module_import,
            "os is a module imported outside it (import it inside the function)",
            id="a module imported at the top is named, with the fix: import it inside",
        ),
        pytest.param(
            trainfuncs.uses_module_function,
            "helper is a function defined outside it (define it inside the function)",
            id="a helper of the same module must move inside",
        ),
        pytest.param(
            trainfuncs.uses_imported_class,
            "OrderedDict is a class imported outside it (import it inside the function)",
            id="an imported class must be imported inside",
        ),
        pytest.param(
            trainfuncs.default_from_global,
            "LEARNING_RATE is a global variable",
            id="a default value is evaluated by the script, so it counts",
        ),
        pytest.param(
            trainfuncs.uses_undefined,
            "not_defined_anywhere is not defined",
            id="a name defined nowhere is reported",
        ),
        pytest.param(
            trainfuncs.make_closure(3),
            "value is a variable of the function it is defined in (pass it in func_args)",
            id="a closure's variable is reported",
        ),
    ],
)
def test_what_a_function_needs_from_outside_is_refused_with_the_reason(
    func: Any, expected: str
) -> None:
    with pytest.raises(InvalidTrainer) as raised:
        _functions.prepare(func)
    message = str(raised.value)
    assert message.startswith(f"CustomTrainer.func: {func.__name__} is not self-contained: ")
    assert expected in message
    assert "must import what it uses inside its body" in message


def test_every_missing_name_is_reported_at_once() -> None:
    def train() -> None:
        print(trainfuncs, pytest, _functions)

    with pytest.raises(InvalidTrainer) as raised:
        _functions.prepare(train)
    message = str(raised.value)
    for name in ("trainfuncs", "pytest", "_functions"):
        assert f"{name} is a module imported outside it" in message


def test_builtins_imports_inside_and_globals_it_assigns_are_fine() -> None:
    assert (
        _functions.unresolved_names(
            trainfuncs.self_contained,
            _functions.prepare(trainfuncs.self_contained, {"epochs": 1}).source,
        )
        == []
    )


@pytest.mark.parametrize(
    ("func", "expected"),
    [
        pytest.param(lambda: 1, "a lambda cannot be shipped", id="a lambda is refused"),
        pytest.param(
            trainfuncs.coroutine_function, "is async", id="a coroutine function is refused"
        ),
        pytest.param(
            trainfuncs.Holder().method, "is a bound method", id="a bound method is refused"
        ),
        pytest.param(print, "is not a Python function", id="a builtin is refused"),
        pytest.param("train.py", "is not a Python function", id="a string is refused"),
    ],
)
def test_what_is_not_a_plain_function_is_refused(func: Any, expected: str) -> None:
    with pytest.raises(InvalidTrainer, match=expected):
        _functions.prepare(func)


def test_a_function_without_readable_source_is_refused_with_what_to_do() -> None:
    namespace: dict[str, Any] = {}
    exec("def typed_at_the_prompt():\n    return 1\n", namespace)
    with pytest.raises(InvalidTrainer) as raised:
        _functions.prepare(namespace["typed_at_the_prompt"])
    assert "the source of typed_at_the_prompt cannot be read" in str(raised.value)
    assert "define it in a file or a notebook cell" in str(raised.value)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            {"epochs": object()},
            "CustomTrainer.func_args['epochs']: object <object object at",
            id="an object that is not a literal is refused",
        ),
        pytest.param(
            {"epochs": 1, "lr": float("nan")},
            "['lr']: float nan is not a Python literal",
            id="nan has no literal form",
        ),
        pytest.param(
            {"lr": 0.1},
            "CustomTrainer.func_args: missing a required argument: 'epochs'",
            id="a missing required argument is reported with the signature",
        ),
        pytest.param(
            {"epochs": 1, "batch": 2},
            "got an unexpected keyword argument 'batch'",
            id="an argument the function does not take is reported",
        ),
        pytest.param(
            {"epochs": 1, 3: 4},
            "CustomTrainer.func_args: keys [3] are not argument names",
            id="keys must be argument names",
        ),
        pytest.param([1, 2], "CustomTrainer.func_args: a list", id="func_args must be a dict"),
    ],
)
def test_func_args_must_fit_the_signature_and_be_literals(args: Any, expected: str) -> None:
    with pytest.raises(InvalidTrainer) as raised:
        _functions.prepare(trainfuncs.self_contained, args)
    assert expected in str(raised.value)


def test_literal_containers_pass_and_arrive_equal() -> None:
    args = {"epochs": 2, "lr": {"a": [1, 2.5, None], "b": (True, "x"), "c": {1, 2}}}
    prepared = _functions.prepare(trainfuncs.self_contained, args)
    assert run_script(prepared.script)["RESULT"]["lr"] == args["lr"]


def test_a_missing_argument_is_reported_even_without_func_args() -> None:
    with pytest.raises(InvalidTrainer, match="missing a required argument: 'epochs'"):
        _functions.prepare(trainfuncs.self_contained)
