"""The entry point imports only the command module of the verb it runs, and each verb only
what it uses: `kubetrain --version` nothing, `list` and `get` no control plane, no SDK."""

from __future__ import annotations

import argparse

import pytest

from kubetrain.cli import main


def _verbs(parser: argparse.ArgumentParser) -> set[str]:
    (subparsers,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(subparsers.choices)


def test_the_verb_table_names_every_verb_the_modules_register() -> None:
    assert _verbs(main.build_parser()) == set(main.VERBS)


@pytest.mark.parametrize("verb", sorted(main.VERBS))
def test_a_verb_alone_builds_the_same_parser_for_it(verb: str) -> None:
    alone = _verbs(main.build_parser(verb))
    assert verb in alone
    assert alone <= {v for v, module in main.VERBS.items() if module == main.VERBS[verb]}


@pytest.mark.parametrize(
    ("argv", "verb"),
    [
        (["list", "-A"], "list"),
        (["-v", "get", "job"], "get"),
        (["--help"], None),
        (["--version", "list"], None),
        ([], None),
        (["lst"], "lst"),  # unknown: every verb is registered, and argparse names the choices
    ],
)
def test_the_verb_is_the_first_word_that_is_not_a_top_level_option(
    argv: list[str], verb: str | None
) -> None:
    assert main._verb(argv) == verb


def test_an_unknown_verb_gets_argparse_s_list_of_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main.main(["lst"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'lst'" in err
    assert "'list'" in err
