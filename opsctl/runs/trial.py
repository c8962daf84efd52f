"""A trial acceptance: `opsctl accept RACK --duration S` loads each tray for S seconds instead of
the criteria's (the contract's) duration. It is judged by the criteria all the same, but it is
not an acceptance by them, and every report says so: the HTML in words, the JSON and the JUnit
properties as `trial` with both durations.

It is a field of the run's summary, so it lives with the run's records: the run that writes the
summary (the burn-in session, the fleet's judge) and the reports that read it share these three
functions without either reaching into the other.
"""

from __future__ import annotations

from typing import Any


def trial_fields(kind: str, duration_s: float, criteria_duration_s: float) -> dict[str, Any]:
    """What a summary says about it: {"trial": bool, "criteria_duration_s", "duration_s"}.

    Only an acceptance can be a trial; a burn-in is no acceptance at all (the report says so too)."""
    return {"trial": kind == "accept" and float(duration_s) != float(criteria_duration_s),
            "criteria_duration_s": float(criteria_duration_s), "duration_s": float(duration_s)}


def trial_of(summary: dict[str, Any]) -> dict[str, Any]:
    """The trial fields of a run's summary: those it records, else read from its durations."""
    if isinstance(summary.get("trial"), bool) and "criteria_duration_s" in summary:
        return {key: summary[key] for key in ("trial", "criteria_duration_s", "duration_s")}
    return trial_fields(summary["kind"], summary["duration_s"], summary["criteria"]["duration_s"])


def trial_sentence(summary: dict[str, Any]) -> str | None:
    """One plain sentence for a trial acceptance; None for any other run."""
    trial = trial_of(summary)
    if not trial["trial"]:
        return None
    criteria = summary["criteria"]
    return (f"Trial acceptance: each tray was loaded for {trial['duration_s']:g} s, not the "
            f"{trial['criteria_duration_s']:g} s that the criteria {criteria['name']} version {criteria['version']} "
            f"(the contract) ask for. This is not an acceptance by these criteria and does not hand the rack over.")
