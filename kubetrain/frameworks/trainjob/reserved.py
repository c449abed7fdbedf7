"""The rule the ML plugins share: a TrainJob may not set the env its plugin injects.

Torch and MPI refuse such a TrainJob with upstream's one message listing every reserved name
it sets (XGBoost words its own refusal, per variable). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubetrain import api

RESERVED_ENVS_MESSAGE = "must not have reserved envs, invalid envs configured: [{names}]"
ENV_PATH = "spec.trainer.env"


def env_names(env: Iterable[Any] | None) -> list[str]:
    return [
        v["name"] for v in env or () if isinstance(v, Mapping) and isinstance(v.get("name"), str)
    ]


def env_errors(job: api.TrainJob, reserved: Iterable[str]) -> list[api.FieldError]:
    """One error at ``spec.trainer.env`` naming the reserved variables the TrainJob sets."""
    trainer = job.spec.trainer if job.spec else None
    names = env_names(trainer.env if trainer else None)
    found = sorted(set(names) & set(reserved))
    if not found:
        return []
    detail = RESERVED_ENVS_MESSAGE.format(names=" ".join(found))
    return [api.FieldError(api.ErrorType.INVALID, ENV_PATH, detail, names)]
