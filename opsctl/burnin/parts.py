"""From failing links and GPUs to the parts to repair: the one place burn-in calls the
localizer (opsctl/localize, CONTRACT's `opsctl localize`) with the run's link-health snapshot.
"""

from opsctl.localize import localize_snapshot

SOURCE = "opsctl localize on the burn-in window's link counters and XIDs (snapshot.json)"


def suspect_parts(snapshot, topology):
    """(suspects as CONTRACT's `opsctl localize` lists them, how they were found)."""
    result = localize_snapshot(snapshot, topology, source="the burn-in's link-health snapshot")
    return result["suspects"], SOURCE
