"""``kubetrain operator --watch-timeout-seconds``: how long the API server is asked to hold
each of the operator's watches open; the default is the watch's own, and tests shrink it to
see several watch lifetimes in a minute."""

from __future__ import annotations

import pytest

from kubetrain.cli import main
from kubetrain.cli import operator as operator_cli
from kubetrain.kube import watch
from kubetrain.operator import process


def options(*flags: str) -> process.Options:
    args = main.build_parser().parse_args(["operator", "--kubeconfig", "k", *flags])
    return operator_cli.options(args, {})


def test_the_operators_watches_ask_for_the_default_timeout_unless_told() -> None:
    assert options().manager.watch == watch.Settings()
    assert options().manager.watch.timeout_seconds == 300


def test_the_watch_timeout_flag_reaches_every_informer_through_the_manager() -> None:
    assert options("--watch-timeout-seconds", "20").manager.watch == watch.Settings(
        timeout_seconds=20
    )


def test_a_watch_timeout_under_one_second_is_refused_naming_the_flag() -> None:
    with pytest.raises(ValueError, match=r"--watch-timeout-seconds: 0; accepted: 1 or more"):
        options("--watch-timeout-seconds", "0")
