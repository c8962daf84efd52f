"""From failing links and GPUs to the parts to repair: the one place burn-in calls the
localizer (opsctl/localize, CONTRACT's `opsctl localize`) with the run's link-health snapshot.
"""

from opsctl.localize import localize_snapshot

SOURCE = "opsctl localize on the burn-in window's link counters, XIDs and the GPUs' own failed checks (snapshot.json)"


def suspect_parts(snapshot, topology):
    """(suspects as `opsctl localize` lists them, how they were found, what their repairs take
    out of service together)."""
    result = localize_snapshot(snapshot, topology, source="the burn-in's link-health snapshot")
    return result["suspects"], SOURCE, result["repair_plan"]
