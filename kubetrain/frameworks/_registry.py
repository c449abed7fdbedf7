"""The ordered list of v1 frameworks and the lookup by kind.

The order is that of ``kubetrain.api.V1_KINDS`` (TF, PyTorch, XGBoost, Paddle, JAX, MPI,
MXNet) and is part of the contract: whatever iterates frameworks (controller start-up,
metrics, ``--enable-scheme``) does so in this order. Pure.
"""

from __future__ import annotations

from kubetrain.frameworks import jax, mpi, mxnet, paddle, pytorch, tensorflow, xgboost
from kubetrain.frameworks._framework import Framework

FRAMEWORKS: tuple[Framework, ...] = (
    tensorflow.FRAMEWORK,
    pytorch.FRAMEWORK,
    xgboost.FRAMEWORK,
    paddle.FRAMEWORK,
    jax.FRAMEWORK,
    mpi.FRAMEWORK,
    mxnet.FRAMEWORK,
)

_BY_KIND = {framework.kind: framework for framework in FRAMEWORKS}


def for_kind(kind: str) -> Framework:
    """The framework of a v1 kind such as ``PyTorchJob``; KeyError names the accepted kinds."""
    try:
        return _BY_KIND[kind]
    except KeyError:
        accepted = ", ".join(_BY_KIND)
        raise KeyError(f"no v1 framework for kind {kind!r}; accepted: {accepted}") from None
