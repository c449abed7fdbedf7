"""The v1 job controllers' settings: what upstream's operator flags choose, plus host networking.

Passed explicitly to :func:`kubetrain.operator.jobs.setup.setup`; nothing here reads the
environment or argv (the operator's entry point does that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from kubetrain import frameworks
from kubetrain.operator import hostports

VOLCANO: Final = "volcano"
SCHEDULER_PLUGINS: Final = "scheduler-plugins"
# The scheduler name pods get under each gang scheduler unless `scheduler_name` says otherwise.
DEFAULT_SCHEDULER_NAMES: Final = {
    VOLCANO: "volcano",
    SCHEDULER_PLUGINS: "scheduler-plugins-scheduler",
}

GangScheduler = Literal["", "volcano", "scheduler-plugins"]


@dataclass(frozen=True)
class Settings:
    """How the v1 job controllers shape what they create.

    ``gang_scheduler``: ``""`` (none), ``"volcano"`` or ``"scheduler-plugins"`` (upstream's
    ``--gang-scheduler-name``); ``scheduler_name`` overrides the ``schedulerName`` pods get.

    ``host_port_range``: inclusive bounds of the ports given to host-network pods, one per pod,
    so that pods sharing a host never collide. ``force_host_network`` puts every pod the
    operator creates on the host network (the local control plane, whose pods all share the
    host's network, runs the operator with it); the job object itself is never changed.
    """

    pod: frameworks.Settings = field(default_factory=frameworks.Settings)
    gang_scheduler: GangScheduler = ""
    scheduler_name: str = ""
    host_port_range: tuple[int, int] = hostports.DEFAULT_RANGE
    force_host_network: bool = False
    workers: int | None = None  # per controller; None: the manager's default

    def __post_init__(self) -> None:
        hostports.check_range(*self.host_port_range)
        if self.gang_scheduler not in ("", VOLCANO, SCHEDULER_PLUGINS):
            raise ValueError(
                f"gang_scheduler: {self.gang_scheduler!r}; accepted: '', {VOLCANO},"
                f" {SCHEDULER_PLUGINS}"
            )

    @property
    def pod_scheduler_name(self) -> str:
        """The ``schedulerName`` gang-scheduled pods get when their template names none."""
        return self.scheduler_name or DEFAULT_SCHEDULER_NAMES.get(self.gang_scheduler, "")
