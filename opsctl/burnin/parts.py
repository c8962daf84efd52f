"""From failing links and GPUs to the parts to repair: the one place burn-in calls the
localizer (opsctl/localize, CONTRACT's `opsctl localize`) with the run's link-health snapshot.

Beside the counters the snapshot carries what the burn-in measured that they do not: a link's
traffic against its GPU's other links, and the NVLink domain bisection's slow tray — each the
`failed_checks` of its link or tray (opsctl/localize/measured.py), so that the localizer names
the smallest part behind them all (a switch chip's 72 slow links are the chip).
"""

from opsctl.localize import localize_snapshot

SOURCE = ("opsctl localize on the burn-in window's link counters, XIDs, the GPUs' own failed checks, and the links' and "
          "trays' failed measurements (snapshot.json)")
# Checks that measure a link or a tray beyond what the snapshot's counters say (the counter
# rules are the counters' own evidence; a GPU's symptom moved onto its link is not the link's).
LINK_MEASUREMENTS = ("nvlink.link_traffic",)
TRAY_MEASUREMENTS = ("collective.bisection",)


def measured_failures(checks, bad, components, names):
    """{component id: [{check, value, reason}]}: the checks named `names` that failed (`bad`
    verdicts) on the given components."""
    found = {}
    for check in checks:
        if check.check in names and check.verdict in bad and check.component in components:
            found.setdefault(check.component, []).append({"check": check.check, "value": check.value, "reason": check.reason})
    return found


def suspect_parts(snapshot, topology):
    """(suspects as `opsctl localize` lists them, how they were found, what their repairs take
    out of service together)."""
    result = localize_snapshot(snapshot, topology, source="the burn-in's link-health snapshot")
    return result["suspects"], SOURCE, result["repair_plan"]
