"""The base every API type derives from, and the free-form Kubernetes object type.

Types are strict on purpose: a string where Kubernetes wants an integer is rejected rather
than coerced, and an unknown field is an error naming it rather than silently dropped, so
nothing a user submitted is ever lost or quietly changed. Python names are snake_case; the
wire names (aliases) are Kubernetes' camelCase.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

# A Kubernetes object we do not model (pod templates, resource requirements, env vars, a
# JobSet spec): kept exactly as written and checked only where kubetrain relies on it.
KubeObject = dict[str, Any]

# Integer fields with Kubernetes' ranges; pydantic's Field bounds make the CRD schema too.
Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
NonNegInt32 = Annotated[StrictInt, Field(ge=0, le=2**31 - 1)]
IntOrString = StrictInt | StrictStr


class Model(BaseModel):
    """Strict, camelCase-on-the-wire, unknown fields rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        strict=True,
        validate_assignment=False,
    )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, unset (None) fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OpenModel(Model):
    """A modelled object that also keeps fields it does not model (object metadata)."""

    model_config = ConfigDict(extra="allow")
