"""From failing links and GPUs to the parts to repair: the one place burn-in calls the
localizer (opsctl/localize, CONTRACT's `opsctl localize`) with the run's link-health snapshot.
"""


def suspect_parts(snapshot, topology):
    """(suspects as CONTRACT's `opsctl localize` lists them, a note on how they were found)."""
    try:
        from opsctl.localize import localize_snapshot
    except ImportError:  # the localizer is not part of this build yet
        return None, "localizer not available: the verdict names failing GPUs and links, not parts"
    result = localize_snapshot(snapshot, topology, source="the burn-in's link-health snapshot")
    return result["suspects"], "opsctl localize on the burn-in window's link counters and XIDs (snapshot.json)"
