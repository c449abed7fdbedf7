"""The seam through which each TrainJob runtime plugin's own admission checks reach validation.

Upstream's webhook asks every runtime plugin to validate a TrainJob against its runtime (the
plugin's ``Validate``). kubetrain keeps those checks beside each plugin's env contract, one
pure module per plugin in ``kubetrain.frameworks.trainjob``, which sits a layer above ``api``
(it reads these models). So this module only holds the ordered list of checks: that package
registers it when it is imported (``kubetrain.frameworks`` imports it), and TrainJob
validation runs it after its own runtime-dependent rules.

Validating a TrainJob against a runtime before any check is registered is a wiring mistake,
not bad input: :func:`run` raises :class:`PluginChecksMissing` rather than let a job through
unchecked. Must not: hold any plugin's rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kubetrain.api._fielderrors import FieldError
from kubetrain.api._trainer import Runtime, TrainJob
from kubetrain.errors import KubetrainError

PriorityClassLookup = Callable[[str], bool]  # whether a PriorityClass of that name exists
# One plugin's checks of a defaulted TrainJob against its defaulted runtime; a plugin that the
# runtime does not select returns no error.
PluginCheck = Callable[[TrainJob, Runtime, "PriorityClassLookup | None"], list[FieldError]]

_checks: tuple[PluginCheck, ...] = ()


class PluginChecksMissing(KubetrainError):
    """A TrainJob was validated against a runtime before the plugins registered their checks."""


def register(checks: Sequence[PluginCheck]) -> None:
    """Replace the registered checks with ``checks``, which run in this order."""
    global _checks
    _checks = tuple(checks)


def run(
    job: TrainJob, runtime: Runtime, find_priority_class: PriorityClassLookup | None
) -> list[FieldError]:
    """Every registered plugin's errors, in registration order."""
    if not _checks:
        raise PluginChecksMissing(
            "TrainJob validation against a runtime needs the runtime plugins' checks; "
            "import kubetrain.frameworks, which registers them"
        )
    errors: list[FieldError] = []
    for check in _checks:
        errors += check(job, runtime, find_priority_class)
    return errors
