"""What one tray's run came to: complete (the probe ended with its JSON document) or incomplete,
with the reason.

The fan-out (opsctl/fanout/) makes these and Ansible's records (opsctl/fleet/) are read into
them; the run folder keeps each as it arrives. It is the run's record, so it lives here: the
run folder needs nothing of how the trays were reached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COMPLETE = "complete"
INCOMPLETE = "incomplete"


@dataclass
class TrayResult:
    tray: str  # ct03, st1, node
    host: str  # the inventory host
    status: str  # complete | incomplete
    exit_code: int | None  # the probe's; None when it never ended on its own
    document: dict[str, Any] | None  # the probe's JSON document, when it printed one
    stdout: bytes = b""  # exactly what the probe printed (the raw file of the run)
    stderr: str = ""
    reason: str | None = None  # why incomplete, in one line
    interrupted: bool = False
    started: float = 0.0  # unix time
    seconds: float = 0.0
    transport: str = ""

    @property
    def complete(self) -> bool:
        return self.status == COMPLETE
