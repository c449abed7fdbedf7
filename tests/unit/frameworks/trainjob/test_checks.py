"""The plugins' admission checks reach TrainJob validation in order, or loudly not at all."""

from __future__ import annotations

import pytest

from kubetrain import api
from kubetrain.api import _trainer_plugins
from kubetrain.frameworks import trainjob
from kubetrain.frameworks.trainjob import flux, mpi, torch, volcano, xgboost
from tests.unit.api.trainers import runtime
from tests.unit.api.trainers import trainjob as trainjob_doc


def test_importing_frameworks_registers_every_plugins_checks_ml_policies_first() -> None:
    expected = (torch.validate, mpi.validate, xgboost.validate, flux.validate, volcano.validate)
    assert expected == trainjob.CHECKS
    assert _trainer_plugins._checks == trainjob.CHECKS


def test_a_runtime_lookup_without_registered_checks_fails_loudly() -> None:
    rt = runtime("torch").build()
    job = trainjob_doc("t").trainer(env=[{"name": "PET_NNODES", "value": "9"}]).build()
    found = api.review(rt).obj
    verdict = api.review(job, find_runtime=lambda *_: found)
    assert [e.path for e in verdict.errors] == ["spec.trainer.env"]  # registered: refused
    api.register_trainjob_plugin_checks(())
    try:
        with pytest.raises(_trainer_plugins.PluginChecksMissing):
            api.review(job, find_runtime=lambda *_: found)
    finally:
        api.register_trainjob_plugin_checks(trainjob.CHECKS)
