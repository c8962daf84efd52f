"""What the ledger says about the fleet: failures per part kind, MTBI in GPU-days (per kind and
overall), time to restore per repair action, blast radius, burn-in failure rate at handover
and infant mortality — each with its interval, because a fleet sees few events.

Exposure is GPU-days in service: for every rack from its handover to its retirement (or the
end of the window), its GPUs × days, less the GPUs each repair idled while it lasted (from the
failure to back in service). A failure counts against its part kind as the repair confirmed
it (the part replaced), else as triage suspected it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.ledger.drain_times import drain_statistics
from opsctl.ledger.intervals import binomial_interval, hours_summary, poisson_interval
from opsctl.ledger.repairs import restore_hours
from opsctl.ledger.timestamps import Moment, from_epoch, parse_time, stored, utc_now
from opsctl.mttr import load_mttr_model

if TYPE_CHECKING:
    from opsctl.ledger.store import Ledger, Record
    from opsctl.mttr import MttrModel

DAY_S = 86400.0
# The published operator figures (docs/sources.md, Reliability) the ledger's own measure replaces.
PUBLISHED_MTBI = {
    "gb200-nvl72": {"gpu_days": [1000, 3000],
                    "source": "published operator figures (docs/sources.md, Reliability): GB200 NVL72 MTBI 1,000–3,000 GPU-days"},
    "hgx-h100": {"gpu_days": [2000, 5000],
                 "source": "published operator figures (docs/sources.md, Reliability): H100 MTBI 2,000 (immature) – 5,000 "
                           "(best operator) GPU-days"},
    "hgx-h200": {"gpu_days": [2000, 5000],
                 "source": "published operator figures (docs/sources.md, Reliability): H100 MTBI 2,000–5,000 GPU-days "
                           "(no H200 figure is published)"},
}
MTBI_METHOD = "exposure / failures; exact Poisson (Garwood) interval on the failure count"
MTTR_METHOD = "time from the failure to back in service; median with its order-statistic interval"


@dataclass(frozen=True)
class Window:
    since: float | None  # epoch seconds
    until: float
    racks: tuple[str, ...]  # empty: every rack

    def covers_rack(self, rack: str) -> bool:
        return not self.racks or rack in self.racks

    def covers(self, moment: float) -> bool:
        return (self.since is None or moment >= self.since) and moment <= self.until


def _seconds(text: str) -> float:
    return parse_time(text).timestamp()


def _overlap(a_start: float, a_end: float, b_start: float, b_end: float) -> float:
    return max(0.0, min(a_end, b_end) - max(a_start, b_start))


def _rate(failures: int, gpu_days: float, confidence: float) -> dict[str, Any]:
    """MTBI with its interval, from a count over an exposure."""
    low, high = poisson_interval(failures, confidence)
    return {
        "failures": failures,
        "gpu_days": round(gpu_days, 1),
        "mtbi_gpu_days": round(gpu_days / failures, 1) if failures else None,
        # Few failures → a wide interval; none → only a lower bound.
        "interval": [round(gpu_days / high, 1) if high else None, round(gpu_days / low, 1) if low else None],
        "per_1000_gpu_days": round(1000 * failures / gpu_days, 4) if gpu_days else None,
    }


@dataclass
class _Fleet:
    """The ledger's rows inside the window, with exposure split into infant and later periods."""

    racks: list[Record]
    incidents: list[tuple[str, float, str, bool]]  # (rack, seconds, kind, in_infancy)
    repairs: list[Record]
    runs: list[Record]
    exposure_early: float = 0.0
    exposure_later: float = 0.0
    downtime: float = 0.0
    restore: dict[str, float] = field(default_factory=dict)  # repair key -> hours


def _gather(data: dict[str, list[Record]], window: Window, infant_weeks: float) -> _Fleet:
    infant_s = infant_weeks * 7 * DAY_S
    incidents_by_key = {i["key"]: i for i in data["incidents"]}
    claimed = {r["incident_key"]: r for r in data["repairs"] if r["incident_key"] and r["closed_at"]}
    fleet = _Fleet([], [], [], [])
    for rack in data["racks"]:
        if not window.covers_rack(rack["rack"]) or not rack["handover_at"]:
            continue
        start = _seconds(rack["handover_at"])
        end = min(_seconds(rack["retired_at"]), window.until) if rack["retired_at"] else window.until
        first = window.since if window.since is not None else start
        periods = {"early": (start, start + infant_s), "later": (start + infant_s, end)}
        in_window = {name: (max(a, first), min(b, end)) for name, (a, b) in periods.items()}
        exposure = {name: rack["gpus"] * max(0.0, b - a) for name, (a, b) in in_window.items()}
        for repair in data["repairs"]:
            if repair["rack"] != rack["rack"]:
                continue
            incident = incidents_by_key.get(repair["incident_key"])
            out = _seconds(incident["occurred_at"] if incident else repair["opened_at"])
            back = repair["back_in_service_at"] or repair["closed_at"]
            back = _seconds(back) if back else window.until
            for name, (a, b) in in_window.items():
                idle = repair["gpus_idled"] * _overlap(out, back, a, b)
                exposure[name] -= idle
                fleet.downtime += idle
        fleet.exposure_early += max(0.0, exposure["early"]) / DAY_S
        fleet.exposure_later += max(0.0, exposure["later"]) / DAY_S
        fleet.racks.append(rack)
        for incident in data["incidents"]:
            moment = _seconds(incident["occurred_at"])
            if incident["rack"] != rack["rack"] or not (max(start, first) <= moment <= end):
                continue
            claiming = claimed.get(incident["key"])
            kind = claiming["kind"] if claiming else incident["kind"]
            fleet.incidents.append((rack["rack"], moment, kind, moment < start + infant_s))
    fleet.downtime /= DAY_S
    for repair in data["repairs"]:
        if window.covers_rack(repair["rack"]) and window.covers(_seconds(repair["opened_at"])):
            fleet.repairs.append(repair)
            hours = restore_hours(repair, incidents_by_key)
            if hours is not None:
                fleet.restore[repair["key"]] = hours
    fleet.runs = [r for r in data["runs"] if window.covers_rack(r["rack"]) and window.covers(_seconds(r["finished_at"]))]
    return fleet


def _mttr(fleet: _Fleet, mttr_model: MttrModel, confidence: float) -> dict[str, dict[str, Any]]:
    by_action: dict[str, list[Record]] = {}
    for repair in fleet.repairs:
        by_action.setdefault(repair["action"], []).append(repair)
    result: dict[str, dict[str, Any]] = {}
    for action, repairs in sorted(by_action.items()):
        hours = [fleet.restore[r["key"]] for r in repairs if r["key"] in fleet.restore]
        published = mttr_model.actions.get(action)
        result[action] = {
            "repairs": len(repairs),
            "closed": len(hours),
            **hours_summary(hours, confidence),
            "gpus_idled_mean": round(sum(r["gpus_idled"] for r in repairs) / len(repairs), 1),
            "published_hours": round(published.mttr_hours, 2) if published else None,
            "published_source": f"{mttr_model.source}: {published.source}" if published else None,
        }
    return result


def _burnin(runs: Sequence[Record], confidence: float) -> dict[str, Any]:
    """How racks arrive: the share whose first burn-in (or acceptance) failed, and the parts named."""
    judged = [r for r in runs if r["verdict"] in ("pass", "fail")]
    first: dict[str, Record] = {}
    for run in sorted(judged, key=lambda r: r["finished_at"]):
        first.setdefault(run["rack"], run)
    failed = sum(run["verdict"] == "fail" for run in first.values())
    low, high = binomial_interval(failed, len(first), confidence)
    parts: dict[str, int] = {}
    explained = 0
    for run in judged:
        for part in run["failing_parts"]:
            if part.get("explained_by"):  # a symptom of a part counted already (a link through a bad connector)
                explained += 1
                continue
            parts[part["kind"]] = parts.get(part["kind"], 0) + 1
    return {
        "racks": len(first),
        "racks_failed_first_run": failed,
        "failure_rate": round(failed / len(first), 4) if first else None,
        "interval": [round(low, 4), round(high, 4)] if first else None,
        "method": "racks whose first judged burn-in or acceptance run failed / racks burned in; "
                  "exact Clopper-Pearson interval",
        "runs": len(runs),
        "runs_failed": sum(r["verdict"] == "fail" for r in judged),
        "runs_incomplete": len(runs) - len(judged),
        "failing_parts_by_kind": dict(sorted(parts.items())),
        "failing_parts_explained": explained,
        "failing_parts_method": "each fault once: a failing link or GPU that a localized suspect of the same run "
                                "explains (in its links) is counted as that suspect, not again",
    }


def window_of(since: Moment | None = None, until: Moment | None = None, racks: Iterable[str] | None = ()) -> Window:
    until_s = parse_time(until, "--until").timestamp() if until else utc_now().timestamp()
    since_s = parse_time(since, "--since").timestamp() if since else None
    if since_s is not None and since_s > until_s:
        raise InputError(f"--since {from_epoch(since_s)} is after --until {from_epoch(until_s)}")
    return Window(since_s, until_s, tuple(racks or ()))


def fleet_statistics(ledger: Ledger, *, since: Moment | None = None, until: Moment | None = None, racks: Iterable[str] = (),
                     confidence: float = 0.95, infant_weeks: float = 4, mttr_model: MttrModel | None = None) -> dict[str, Any]:
    """The `opsctl ledger stats` document."""
    if not 0.5 <= confidence < 1:
        raise InputError(f"--confidence {confidence}: must be at least 0.5 and below 1")
    if infant_weeks <= 0:
        raise InputError(f"--infant-weeks {infant_weeks}: must be more than 0")
    window = window_of(since, until, racks)
    data = ledger.everything()
    unknown = [r for r in window.racks if r not in {row["rack"] for row in data["racks"]}]
    if unknown:
        raise InputError(f"rack(s) not in the ledger: {', '.join(unknown)}")
    mttr_model = mttr_model or load_mttr_model()
    fleet = _gather(data, window, infant_weeks)
    exposure = fleet.exposure_early + fleet.exposure_later
    # A rack without a handover date is not in service yet: its incidents count nowhere, and the
    # statistics say so rather than show a quiet 0.
    waiting = [{"rack": row["rack"], "incidents": sum(1 for i in data["incidents"] if i["rack"] == row["rack"])}
               for row in data["racks"] if window.covers_rack(row["rack"]) and not row["handover_at"]]
    by_kind: dict[str, int] = {}
    for _, _, kind, _ in fleet.incidents:
        by_kind[kind] = by_kind.get(kind, 0) + 1
    early = sum(1 for *_, infant in fleet.incidents if infant)
    models = sorted({r["model"] for r in fleet.racks})
    early_rate = _rate(early, fleet.exposure_early, confidence)
    later_rate = _rate(len(fleet.incidents) - early, fleet.exposure_later, confidence)
    mttr = _mttr(fleet, mttr_model, confidence)
    return {
        "ledger": ledger.url,
        "window": {"since": stored(since) if since else None, "until": from_epoch(window.until),
                   "racks": list(window.racks) or None},
        "confidence": confidence,
        "exposure": {"racks_in_service": len(fleet.racks), "gpu_days": round(exposure, 1),
                     "downtime_gpu_days": round(fleet.downtime, 1), "models": models, "not_handed_over": waiting},
        "failures": {"total": len(fleet.incidents), "by_kind": dict(sorted(by_kind.items()))},
        "mtbi": {
            "method": MTBI_METHOD,
            "overall": _rate(len(fleet.incidents), exposure, confidence),
            "by_kind": {kind: _rate(count, exposure, confidence) for kind, count in sorted(by_kind.items())},
            "published": {m: PUBLISHED_MTBI[m] for m in models if m in PUBLISHED_MTBI},
        },
        "mttr": {"method": MTTR_METHOD, "by_action": mttr},
        "slurm_drains": drain_statistics(data["drains"], data["racks"], window, confidence, mttr),
        "blast_radius": {
            "repairs": len(fleet.repairs),
            "gpus_idled_mean": round(sum(r["gpus_idled"] for r in fleet.repairs) / len(fleet.repairs), 1) if fleet.repairs else None,
        },
        "burnin": _burnin(fleet.runs, confidence),
        "infant_mortality": {
            "weeks": infant_weeks,
            "early": early_rate,
            "later": later_rate,
            "ratio": (round(early_rate["per_1000_gpu_days"] / later_rate["per_1000_gpu_days"], 2)
                      if early_rate["per_1000_gpu_days"] and later_rate["per_1000_gpu_days"] else None),
            "method": f"failures per 1,000 GPU-days in the first {infant_weeks} weeks after handover vs after",
        },
        "failures_over_time": [{"rack": rack, "at": from_epoch(moment), "kind": kind}
                               for rack, moment, kind, _ in sorted(fleet.incidents, key=lambda i: i[1])],
    }


@dataclass(frozen=True)
class ReliabilityInputs:
    """What the TCO takes from the ledger instead of published defaults."""

    scenario: dict[str, Any]  # the TCO scenario's reliability keys (docs/tco.md) that the ledger measured
    source: str  # one line saying where they come from, for the TCO's output
    detail: dict[str, Any]  # the figures behind them (counts, exposure, intervals, per action)


def reliability_inputs(ledger: Ledger | None = None, *, since: Moment | None = None, until: Moment | None = None,
                       racks: Iterable[str] = (), confidence: float = 0.95) -> ReliabilityInputs:
    """MTBI (GPU-days), repair hours and blast radius measured on the ledger, for `opsctl tco
    run --from-ledger`. Keys the ledger cannot measure (no failure, no closed repair) are left
    out of `scenario`, so the scenario's own values stand for them; `source` says which."""
    from opsctl.ledger.store import open_ledger

    owned = ledger is None
    ledger = ledger or open_ledger(read_only=True)
    try:
        stats = fleet_statistics(ledger, since=since, until=until, racks=racks, confidence=confidence)
    finally:
        if owned:
            ledger.close()
    overall = stats["mtbi"]["overall"]
    if not overall["gpu_days"]:
        raise InputError(f"the ledger {stats['ledger']} has no rack in service in this window: nothing to measure "
                         "(record an acceptance, or opsctl ledger rack RACK --handover DATE)")
    hours = [a["mean_hours"] * a["closed"] for a in stats["mttr"]["by_action"].values() if a["closed"]]
    closed = sum(a["closed"] for a in stats["mttr"]["by_action"].values())
    scenario: dict[str, Any] = {}
    said: list[str] = []
    if overall["failures"]:
        scenario["mtbi_gpu_days"] = overall["mtbi_gpu_days"]
        low, high = overall["interval"]
        said.append(f"MTBI {overall['mtbi_gpu_days']:,.0f} GPU-days ({confidence:.0%} interval "
                    f"{low:,.0f}–{high:,.0f}) from {overall['failures']} failures over {overall['gpu_days']:,.0f} GPU-days")
    else:
        said.append(f"no failure in {overall['gpu_days']:,.0f} GPU-days (MTBI at least {overall['interval'][0]:,.0f}); "
                    "MTBI left to the scenario")
    if closed:
        scenario["repair_hours"] = round(sum(hours) / closed, 2)
        scenario["blast_radius_gpus"] = stats["blast_radius"]["gpus_idled_mean"]
        said.append(f"repair {scenario['repair_hours']} h and {scenario['blast_radius_gpus']} GPUs idled "
                    f"on average over {closed} closed repairs")
    else:
        said.append("no closed repair: repair hours and blast radius left to the scenario")
    window = stats["window"]
    span = f"{window['since'] or 'the start'} to {window['until']}"
    source = f"measured by the opsctl ledger {stats['ledger']} ({span}): " + "; ".join(said)
    detail = {"mtbi": overall, "mtbi_by_kind": stats["mtbi"]["by_kind"], "mttr_by_action": stats["mttr"]["by_action"],
              "exposure": stats["exposure"], "window": window, "confidence": confidence, "ledger": stats["ledger"]}
    return ReliabilityInputs(scenario, source, detail)
