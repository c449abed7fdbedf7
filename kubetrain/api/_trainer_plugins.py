"""The seam through which each TrainJob runtime plugin's own admission checks reach validation.

Upstream's webhook asks every runtime plugin to validate a TrainJob against its runtime (the
plugin's ``Validate``). kubetrain keeps those checks beside each plugin's env contract, one
pure module per plugin in ``kubetrain.frameworks.trainjob``, which sits a layer above ``api``
(it reads these models). So this module only holds the ordered list of checks: that package
registers it when it is imported, and TrainJob validation runs it after its own
runtime-dependent rules.

No caller has to remember that import: the first TrainJob judged against a runtime loads the
package by name if nothing did yet, as ``kubetrain/__init__`` loads the SDK, since a static
import would turn the layers upside down. Should it still register nothing, :func:`run` raises
:class:`PluginChecksMissing` rather than let a job through unchecked. Must not: hold any
plugin's rules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from kubetrain.api._fielderrors import FieldError
from kubetrain.api._trainer import Runtime, TrainJob
from kubetrain.errors import KubetrainError

PriorityClassLookup = Callable[[str], bool]  # whether a PriorityClass of that name exists
# One plugin's checks of a defaulted TrainJob against its defaulted runtime; a plugin that the
# runtime does not select returns no error.
PluginCheck = Callable[[TrainJob, Runtime, "PriorityClassLookup | None"], list[FieldError]]

PLUGINS_PACKAGE = "kubetrain.frameworks.trainjob"
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
        importlib.import_module(PLUGINS_PACKAGE)  # by name: it registers on import
    if not _checks:
        raise PluginChecksMissing(
            f"TrainJob validation against a runtime needs the runtime plugins' checks; "
            f"{PLUGINS_PACKAGE} registered none"
        )
    errors: list[FieldError] = []
    for check in _checks:
        errors += check(job, runtime, find_priority_class)
    return errors
