"""From failing links and GPUs to the parts to repair: the one place burn-in calls the
localizer (opsctl/localize, what `opsctl localize` runs) with the run's link-health snapshot.

Beside the counters the snapshot carries what the burn-in measured that they do not: a link's
traffic against its GPU's other links, and the NVLink domain bisection's slow tray — each the
`failed_checks` of its link or tray (opsctl/localize/measured.py), so that the localizer names
the smallest part behind them all (a switch chip's 72 slow links are the chip).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

from opsctl.burnin.checks import Check
from opsctl.localize import localize_snapshot

if TYPE_CHECKING:
    from opsctl.topology.graph import Topology

SOURCE = ("opsctl localize on the burn-in window's link counters, XIDs, the GPUs' own failed checks, and the links' and "
          "trays' failed measurements (snapshot.json)")
# Checks that measure a link or a tray beyond what the snapshot's counters say (the counter
# rules are the counters' own evidence; a GPU's symptom moved onto its link is not the link's).
# And a link's totals since the driver loaded (probes/running_totals.py, DCGM 4.6's
# MonitorNVLinkErrorFields counters): what it arrived with, which the window's counters never see.
LINK_TOTALS = tuple(f"nvlink.total.{counter}" for counter in
                    ("recovery_failed", "recovery_successful", "crc_errors", "replay_errors", "recovery_errors"))
LINK_MEASUREMENTS = ("nvlink.link_traffic", *LINK_TOTALS)
TRAY_MEASUREMENTS = ("collective.bisection", "switch_tray.firmware")
# An HGX switch chip's own checks (probes/nvswitch_sxids.py): the chip is on the baseboard.
HOST_SWITCH_MEASUREMENTS = ("nvswitch.sxid.recorded",)


def measured_failures(checks: Iterable[Check], bad: Collection[str], components: Collection[str],
                      names: Collection[str]) -> dict[str, list[dict[str, Any]]]:
    """{component id: [{check, value, reason}]}: the checks named `names` that failed (`bad`
    verdicts) on the given components."""
    found: dict[str, list[dict[str, Any]]] = {}
    for check in checks:
        if check.check in names and check.verdict in bad and check.component in components:
            found.setdefault(check.component, []).append({"check": check.check, "value": check.value, "reason": check.reason})
    return found


def suspect_parts(snapshot: dict[str, Any], topology: Topology) -> tuple[list[dict[str, Any]], str, dict[str, Any] | None]:
    """(suspects as `opsctl localize` lists them, how they were found, what their repairs take
    out of service together)."""
    result = localize_snapshot(snapshot, topology, source="the burn-in's link-health snapshot")
    return result["suspects"], SOURCE, result["repair_plan"]
