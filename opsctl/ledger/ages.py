"""Failures by age since handover, with the racks still running counted as what they are:
right-censored, not failure-free forever and not left out.

The unit is a rack in service; its time is its age at its first failure (of the part kinds
asked) after handover, or, for a rack that has not failed, its age at retirement or at the end
of the window (censored). Each failure counts as the kind its repair confirmed, else as triage
suspected it (as in fleet_stats). Per group of kinds — every failure, the backplane on its own
(connectors, cable cartridges, cables, switch trays: the NVL72 parts whose fault can idle the
whole rack) and each kind — and per cohort when asked:

- the Kaplan–Meier curve (scipy.stats.ecdf over scipy.stats.CensoredData), the share of racks
  still without a failure at each age, with its pointwise log-log (Greenwood) interval;
- a Weibull fit by maximum likelihood with the censored racks in it (scipy.stats.weibull_min.fit
  over CensoredData, location 0). Its shape says how the failure rate moves with age: below 1 it
  falls (infant mortality: what burn-in is meant to catch), 1 is a constant rate, above 1 it
  rises (wear-out). The shape's interval is the profile-likelihood one (the scale maximized out
  in closed form, the χ²₁ quantile), and the likelihood-ratio test against shape 1 (the
  exponential) says whether the shape differs from 1 beyond chance.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.ledger.fleet_stats import DAY_S, _gather, window_of
from opsctl.ledger.timestamps import Moment, parse_time

if TYPE_CHECKING:
    from opsctl.inventory import Inventory
    from opsctl.ledger.cohorts import Snapshot
    from opsctl.ledger.store import Ledger

BACKPLANE = ("connector", "cartridge", "cable", "switch_tray")
ALL = "all"
BACKPLANE_GROUP = "backplane"
MILESTONE_DAYS = (7, 28, 91, 182, 365, 730)
MIN_AGE_DAYS = 1 / 1440  # a failure at the moment of handover is one a minute old (a Weibull needs t > 0)
KM_METHOD = ("Kaplan–Meier (scipy.stats.ecdf over CensoredData): share of racks without a failure by age since handover, "
             "racks still running right-censored; pointwise log-log (Greenwood) interval")
WEIBULL_METHOD = ("maximum likelihood with right-censoring (scipy.stats.weibull_min.fit over CensoredData, location 0); "
                  "shape interval by profile likelihood (χ²₁); likelihood-ratio test of shape = 1 (a constant rate)")


@dataclass(frozen=True)
class Unit:
    rack: str
    cohort: str | None
    age_days: float
    failed: bool


def kinds_of(group: str) -> set[str] | None:
    """The part kinds a group counts (None: every kind)."""
    if group == ALL:
        return None
    if group == BACKPLANE_GROUP:
        return set(BACKPLANE)
    return {group}


def units(data: dict[str, list[Any]], group: str, *, until: Moment | None = None, racks: Iterable[str] = (),
          cohorts: dict[str, str] | None = None) -> list[Unit]:
    """Every rack in service as a unit: its age at its first failure of the group's kinds, or at the end (censored)."""
    window = window_of(None, until, racks)
    fleet = _gather(data, window, 4)
    kinds = kinds_of(group)
    first: dict[str, float] = {}
    for rack, moment, kind, _ in fleet.incidents:
        if kinds is None or kind in kinds:
            first[rack] = min(first.get(rack, math.inf), moment)
    found = []
    for row in fleet.racks:
        start = parse_time(row["handover_at"]).timestamp()
        end = min(parse_time(row["retired_at"]).timestamp(), window.until) if row["retired_at"] else window.until
        failed = row["rack"] in first
        age = ((first[row["rack"]] if failed else end) - start) / DAY_S
        if not failed and age <= 0:
            continue  # handed over at the end of the window: no time at risk yet
        found.append(Unit(row["rack"], cohorts.get(row["rack"]) if cohorts else None, max(age, MIN_AGE_DAYS), failed))
    return found


def kaplan_meier(ages: Sequence[float], failed: Sequence[bool], confidence: float = 0.95) -> dict[str, Any]:
    """The Kaplan–Meier curve: one point per age with a failure, and the share at each milestone."""
    import numpy as np

    times = np.asarray(ages, dtype=float)
    events = np.asarray(failed, dtype=bool)
    if not events.any():
        longest = float(times.max()) if len(times) else 0.0
        return {"points": [], "milestones": [{"age_days": d, "survival": 1.0, "interval": None, "at_risk": int((times >= d).sum())}
                                             for d in MILESTONE_DAYS if d <= longest],
                "median_age_days": None, "followed_days": round(longest, 1)}
    from scipy.stats import CensoredData, ecdf

    result = ecdf(CensoredData(uncensored=times[events], right=times[~events]))
    with warnings.catch_warnings():  # undefined where the curve is at 1 or 0: those ends stay None
        warnings.simplefilter("ignore", RuntimeWarning)
        band = result.sf.confidence_interval(confidence, method="log-log")
    low, high = band.low.probabilities, band.high.probabilities
    points: list[dict[str, Any]] = []
    for index, age in enumerate(result.sf.quantiles):
        if not events[times == age].any():
            continue  # a censored age: the curve does not step there
        points.append({"age_days": round(float(age), 3), "at_risk": int((times >= age).sum()),
                       "failures": int((events & (times == age)).sum()), "survival": round(float(result.sf.probabilities[index]), 4),
                       "interval": [_share(low[index]), _share(high[index])]})
    longest = float(times.max())
    milestones: list[dict[str, Any]] = []
    for day in MILESTONE_DAYS:
        if day > longest:
            break
        survival = float(result.sf.evaluate(day))
        before = [p for p in points if p["age_days"] <= day]
        milestones.append({"age_days": day, "survival": round(survival, 4),
                           "interval": before[-1]["interval"] if before else None, "at_risk": int((times >= day).sum())})
    below_half = [p["age_days"] for p in points if p["survival"] <= 0.5]
    return {"points": points, "milestones": milestones, "median_age_days": below_half[0] if below_half else None,
            "followed_days": round(longest, 1)}


def _share(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 4)


def _profile_loglik(shape: float, log_u: Any, events: Any) -> float:
    """The Weibull log-likelihood at `shape`, its scale maximized out (scale^shape = Σ tᵢ^shape / d),
    on ages divided by the longest (which moves it by a constant only)."""
    from scipy.special import logsumexp

    d = int(events.sum())
    return float(d * math.log(shape) - d * (logsumexp(shape * log_u) - math.log(d))
                 + (shape - 1) * log_u[events].sum() - d)


def weibull_fit(ages: Sequence[float], failed: Sequence[bool], confidence: float = 0.95) -> dict[str, Any]:
    """Shape and scale (days) of a Weibull fitted to censored ages, the shape's interval and what it says."""
    import numpy as np

    times = np.asarray(ages, dtype=float)
    events = np.asarray(failed, dtype=bool)
    d = int(events.sum())
    if d < 2 or len(np.unique(times[events])) < 2:
        return {"fitted": False, "failures": d, "racks": len(times), "method": WEIBULL_METHOD,
                "why": f"{d} failure(s) at {len(np.unique(times[events]))} distinct age(s): a Weibull needs at least two"}
    from scipy.optimize import brentq
    from scipy.stats import CensoredData, chi2, weibull_min

    from scipy.optimize import minimize_scalar

    log_u = np.log(times / times.max())
    # The profile's maximum (one dimension, vectorized) starts scipy's censored fit near its answer.
    start = float(minimize_scalar(lambda c: -_profile_loglik(math.exp(c), log_u, events), bounds=(-5, 5),
                                  method="bounded").x)
    guess = math.exp(start)
    guess_scale = float(times.max() * (np.exp(guess * log_u).sum() / d) ** (1 / guess))
    shape, _, scale = weibull_min.fit(CensoredData(uncensored=times[events], right=times[~events]), guess, floc=0,
                                      scale=guess_scale)
    shape, scale = float(shape), float(scale)
    best = max(_profile_loglik(shape, log_u, events), _profile_loglik(guess, log_u, events))
    drop = float(chi2.ppf(confidence, 1)) / 2

    def below(c: float) -> float:
        return best - _profile_loglik(c, log_u, events) - drop

    def end(towards: float) -> float | None:
        edge = shape
        for _ in range(60):  # widen until the likelihood has dropped far enough (or give up: unbounded)
            edge *= towards
            if below(edge) > 0:
                return float(brentq(below, min(edge, shape), max(edge, shape), xtol=1e-6))
        return None
    low, high = end(0.5), end(2.0)
    statistic = max(0.0, 2 * (best - _profile_loglik(1.0, log_u, events)))
    p_value = float(chi2.sf(statistic, 1))
    alpha = 1 - confidence
    if p_value < alpha and shape < 1:
        verdict, says = "infant_mortality", "the failure rate falls with age (shape below 1): infant mortality"
    elif p_value < alpha and shape > 1:
        verdict, says = "wear_out", "the failure rate rises with age (shape above 1): wear-out"
    else:
        verdict, says = "constant", "no evidence the failure rate changes with age (the shape's interval holds 1)"
    return {
        "fitted": True, "failures": d, "racks": len(times),
        "shape": round(shape, 4), "shape_interval": [None if low is None else round(low, 4), None if high is None else round(high, 4)],
        "scale_days": round(scale, 2), "median_age_days": round(scale * math.log(2) ** (1 / shape), 2),
        "p_value_shape_1": round(p_value, 6), "verdict": verdict, "says": says, "method": WEIBULL_METHOD,
    }


def age_statistics(ledger: Ledger | Snapshot, *, until: Moment | None = None, racks: Iterable[str] = (), by: str | None = None,
                   groups: Sequence[str] | None = None, confidence: float = 0.95,
                   inventory: Inventory | None = None) -> dict[str, Any]:
    """The `opsctl ledger age` document: a curve and a fit per group of part kinds (and cohort)."""
    from opsctl.ledger.cohorts import cohort_field, cohorts_of

    if not 0.5 <= confidence < 1:
        raise InputError(f"--confidence {confidence}: must be at least 0.5 and below 1")
    data = ledger.everything()
    window = window_of(None, until, racks)
    unknown = [r for r in window.racks if r not in {row["rack"] for row in data["racks"]}]
    if unknown:
        raise InputError(f"rack(s) not in the ledger: {', '.join(unknown)}")
    cohorts = cohorts_of([r for r in data["racks"] if window.covers_rack(r["rack"])], by, inventory) if by else None
    everyone = units(data, ALL, until=until, racks=racks, cohorts=cohorts)
    if not everyone:
        raise InputError(f"the ledger {ledger.url} has no rack in service in this window: no age to measure "
                         "(record an acceptance, or opsctl ledger rack RACK --handover DATE)")
    seen = sorted({kind for _, _, kind, _ in _gather(data, window, 4).incidents})
    if groups is None:
        groups = [ALL, BACKPLANE_GROUP, *seen]
    curves = []
    for group in groups:
        found = units(data, group, until=until, racks=racks, cohorts=cohorts)
        for cohort in ([None] if cohorts is None else sorted({u.cohort for u in found}, key=str)):
            chosen = [u for u in found if cohorts is None or u.cohort == cohort]
            ages, failed = [u.age_days for u in chosen], [u.failed for u in chosen]
            curves.append({"group": group, "kinds": sorted(kinds_of(group) or []) or None, "cohort": cohort,
                           "racks": len(chosen), "failures": sum(failed),
                           "kaplan_meier": kaplan_meier(ages, failed, confidence),
                           "weibull": weibull_fit(ages, failed, confidence)})
    return {"ledger": ledger.url, "until": _until_text(window.until),
            "confidence": confidence, "by": cohort_field(by) if by else None,
            "unit": "a rack in service: its age at its first failure of the kinds counted, or at its retirement or "
                    "the window's end (right-censored)",
            "backplane": list(BACKPLANE), "kaplan_meier_method": KM_METHOD, "weibull_method": WEIBULL_METHOD,
            "curves": curves}


def _until_text(seconds: float) -> str:
    from opsctl.ledger.timestamps import from_epoch

    return from_epoch(seconds)
