"""The admission webhooks the operator registers validate every kind and default the trainer
kinds first; ``deploy/``'s webhooks, rendered by kubectl, are tested in
tests/integration/deploy/test_webhook.py."""

from __future__ import annotations

from kubetrain.operator.webhook import configurations


def test_every_kind_is_validated_and_the_trainer_kinds_defaulted_first() -> None:
    validated = {(h.group, h.kind) for h in configurations.HOOKS if not h.mutating}
    defaulted = {(h.group, h.kind) for h in configurations.HOOKS if h.mutating}
    assert len(validated) == 10
    assert defaulted == {k for k in validated if k[0] == "trainer.kubeflow.org"}
    paths = {h.path for h in configurations.HOOKS}
    assert "/validate-kubeflow-org-v1-pytorchjob" in paths  # upstream's
    assert "/mutate-trainer-kubeflow-org-v1alpha1-trainjob" in paths
    for webhook in configurations.webhooks(False, url="https://h:1"):
        assert webhook["failurePolicy"] == "Fail"
        assert webhook["sideEffects"] == "None"
        assert webhook["rules"][0]["operations"] == ["CREATE", "UPDATE"]


# -- the cert-manager overlay -------------------------------------------------------------------
