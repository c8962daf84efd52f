"""What a rack check family is given, and what it gives back (opsctl/burnin/rack_check_families.py):
the trays' readings with opsctl's component ids (docs/topology.md), and the checks a family made
with the notes on what it could not judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opsctl.burnin.checks import Check

if TYPE_CHECKING:
    from opsctl.acceptance.criteria import Criteria
    from opsctl.inventory import Rack


@dataclass(frozen=True)
class RackEvidence:
    rack: Rack
    criteria: Criteria
    gpus: dict[str, dict[str, Any]]  # GPU id -> its entry of its tray's probe document
    systems: dict[str, dict[str, Any]]  # tray -> its document's `system`
    switch_ports: dict[tuple[str, int], dict[str, Any]]  # (switch chip id, port) -> the port's row
    domain_document: dict[str, Any] | None = None  # the NVLink domain test's (nvlink_domain.py), when it ran


@dataclass
class RackFindings:
    checks: list[Check]
    notes: list[str] = field(default_factory=list)  # what could not be judged, and why
    domain: dict[str, Any] | None = None  # the report's NVLink domain section (nvlink_domain.py)
