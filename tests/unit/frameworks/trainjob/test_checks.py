"""The plugins' admission checks reach TrainJob validation in order, or loudly not at all."""

from __future__ import annotations

import sys

import pytest

from kubetrain import api
from kubetrain.api import _trainer_plugins
from kubetrain.frameworks import trainjob
from kubetrain.frameworks.trainjob import flux, mpi, torch, volcano, xgboost
from tests.unit.api.trainers import runtime
from tests.unit.api.trainers import trainjob as trainjob_doc

RESERVED = trainjob_doc("t").trainer(env=[{"name": "PET_NNODES", "value": "9"}]).build()


def _review_against_torch() -> api.Review:
    found = api.review(runtime("torch").build()).obj
    return api.review(RESERVED, find_runtime=lambda *_: found)


def test_the_plugins_register_their_checks_ml_policies_first() -> None:
    expected = (torch.validate, mpi.validate, xgboost.validate, flux.validate, volcano.validate)
    assert expected == trainjob.CHECKS
    assert _trainer_plugins._checks == expected


def test_the_first_trainjob_judged_against_a_runtime_loads_the_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, _trainer_plugins.PLUGINS_PACKAGE)  # as if never imported
    api.register_trainjob_plugin_checks(())
    try:
        verdict = _review_against_torch()
        assert [e.path for e in verdict.errors] == ["spec.trainer.env"]  # torch's check ran
        assert _trainer_plugins.PLUGINS_PACKAGE in sys.modules
    finally:
        api.register_trainjob_plugin_checks(trainjob.CHECKS)


def test_a_plugins_package_that_registers_nothing_fails_loudly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_trainer_plugins, "PLUGINS_PACKAGE", "kubetrain.errors")
    api.register_trainjob_plugin_checks(())
    try:
        with pytest.raises(_trainer_plugins.PluginChecksMissing):
            _review_against_torch()
    finally:
        api.register_trainjob_plugin_checks(trainjob.CHECKS)
