"""A simulated fleet history with known injected rates, to check that the ledger measures what
happened: racks burned in (some failing first), accepted, then failing part by part at known
MTBIs, triaged, repaired in times drawn around known medians — seeded, so it is the same
history every time.

It yields the very documents and calls the commands take (a burn-in summary, a localize
result, `repair open`/`close`), so a test can record it through the CLI and compare what
`opsctl ledger stats` measures with what was injected. The benchmark uses it too.
"""

import math
import random
from dataclasses import dataclass, field
from datetime import timedelta

from opsctl.ledger.timestamps import parse_time, stored
from opsctl.mttr import load_mttr_model
from opsctl.rack_models import model_named


@dataclass(frozen=True)
class FailureMode:
    kind: str  # the part kind that fails (and is repaired)
    mtbi_gpu_days: float  # injected: one failure per this many GPU-days in service
    action: str  # the repair action (opsctl/data/mttr.yaml)


# Rates of the order the published operator figures report (GB200 NVL72 MTBI 1,000–3,000 GPU-days
# overall; docs/sources.md, Reliability).
DEFAULT_MODES = (
    FailureMode("gpu", 2500.0, "reset_gpu"),
    FailureMode("compute_tray", 6000.0, "replace_compute_tray"),
    FailureMode("link", 8000.0, "reseat_compute_tray"),
    FailureMode("switch_tray", 15000.0, "replace_switch_tray"),
    FailureMode("cartridge", 40000.0, "replace_cartridge"),
)


@dataclass(frozen=True)
class Injected:
    """What the simulation put in: the truth the ledger's measures should contain."""

    modes: tuple
    repair_median_hours: dict  # action -> median time from failure to back in service
    repair_sigma: float  # lognormal spread of repair times
    burnin_failure_probability: float  # chance a rack's first burn-in fails
    infant_factor: float  # failure rate × this in the first infant_weeks after handover
    infant_weeks: int

    @property
    def mtbi_gpu_days(self):
        return 1.0 / sum(1.0 / m.mtbi_gpu_days for m in self.modes)


@dataclass
class FleetHistory:
    injected: Injected
    racks: list  # (name, model)
    until: str
    events: list = field(default_factory=list)  # (time, kind, payload), in time order


def _part(kind, rack, model, rng):
    tray = rng.randrange(1, model.compute_trays + 1)
    if kind == "gpu":
        return model.gpu_id(rack, rng.randrange(model.gpus))
    if kind == "compute_tray":
        return f"{rack}/ct{tray:02d}"
    if kind == "link":
        return model.link_id(rack, rng.randrange(model.gpus), rng.randrange(model.nvlink_ports))
    if kind == "switch_tray":
        return f"{rack}/st{rng.randrange(1, model.switch_trays + 1)}"
    if kind == "cartridge":
        return f"{rack}/cart{rng.randrange(1, 5)}"
    raise ValueError(f"no simulated parts of kind {kind!r}")


def _suspect(kind, part, rng):
    """What triage names first: for a tray, sometimes one of its connectors (the repair then
    replaces the whole tray, and the ledger counts the failure against the tray)."""
    if kind == "compute_tray" and rng.random() < 0.5:
        return f"{part}/j{rng.randrange(4)}", "connector"
    return part, kind


def simulate_fleet_history(*, racks=8, model="gb200-nvl72", start="2026-01-05", days=200, seed=1,
                           modes=DEFAULT_MODES, repair_sigma=0.5, burnin_failure_probability=0.35,
                           infant_factor=1.0, infant_weeks=4, stagger_days=7, prefix="fleet"):
    """A seeded history of `racks` racks over `days` days from `start`."""
    rng = random.Random(seed)
    mttr = load_mttr_model()
    rack_model = model_named(model)
    injected = Injected(tuple(modes), {m.action: mttr.actions[m.action].mttr_hours for m in modes}, repair_sigma,
                        burnin_failure_probability, infant_factor, infant_weeks)
    begin = parse_time(start)
    end = begin + timedelta(days=days)
    history = FleetHistory(injected, [], stored(end))
    rate_per_gpu_day = 1.0 / injected.mtbi_gpu_days
    for number in range(1, racks + 1):
        rack = f"{prefix}{number:02d}"
        history.racks.append((rack, model))
        t = begin + timedelta(days=stagger_days * (number - 1))
        base = {"rack": rack, "model": model}
        if rng.random() < burnin_failure_probability:
            bad = _part(rng.choice(["gpu", "link"]), rack, rack_model, rng)
            checks = [{"check": "gemm.bf16", "component": bad, "verdict": "fail", "value": 0.8, "threshold": 0.9,
                       "source": "simulated"}]
            history.events.append((t, "burnin", {**base, "kind": "burnin", "verdict": "fail", "checks": checks}))
            t += timedelta(days=2)  # the part swapped, burned in again
        history.events.append((t, "burnin", {**base, "kind": "burnin", "verdict": "pass", "checks": []}))
        t += timedelta(days=1)
        history.events.append((t, "accept", {**base, "kind": "accept", "verdict": "pass", "checks": []}))
        handover = t
        while True:
            infant = t < handover + timedelta(weeks=infant_weeks)
            rate = rate_per_gpu_day * rack_model.gpus * (infant_factor if infant else 1.0)
            wait = timedelta(days=rng.expovariate(rate))
            if infant and t + wait > handover + timedelta(weeks=infant_weeks):
                # Memoryless: restart the clock at the end of infancy at the later rate.
                t = handover + timedelta(weeks=infant_weeks)
                continue
            t += wait
            if t >= end:
                break
            mode = rng.choices(modes, weights=[1.0 / m.mtbi_gpu_days for m in modes])[0]
            part = _part(mode.kind, rack, rack_model, rng)
            suspect, suspect_kind = _suspect(mode.kind, part, rng)
            median = injected.repair_median_hours[mode.action]
            hours = median * math.exp(rng.gauss(0.0, repair_sigma))
            triage = {"racks": [{"rack": rack, "healthy": False, "suspects": [
                {"component": suspect, "kind": suspect_kind, "score": 0.9, "links": []}]}]}
            history.events.append((t, "triage", triage))
            history.events.append((t + timedelta(hours=0.3 * hours), "repair_open",
                                   {"part": part, "action": mode.action, "by": "sim-tech"}))
            back = t + timedelta(hours=hours)
            history.events.append((back, "repair_close", {"part": part, "by": "sim-tech", "replaced": f"SN{rng.randrange(10**6):06d}",
                                                          "rma_ids": [f"RMA-{rng.randrange(10**5):05d}"] if "replace" in mode.action else []}))
            # No failure on this rack while it is repaired: exact for whole-rack repairs; for a
            # GPU or tray it ignores the rest of the rack for a few hours (under 1 % of exposure).
            t = back
            if t >= end:
                break
    history.events.sort(key=lambda event: event[0])
    history.events = [(stored(t), kind, payload) for t, kind, payload in history.events if t < end]
    return history


def record_history(history, ledger, parts=None):
    """Record a history through the recording API (what the commands call)."""
    from opsctl.ledger.recording import record_burnin, record_triage
    from opsctl.ledger.repairs import close_repair, open_repair

    for at, kind, payload in history.events:
        if kind in ("burnin", "accept"):
            record_burnin(payload, ledger, at=at, parts=parts)
        elif kind == "triage":
            record_triage(payload, ledger, at=at, parts=parts)
        elif kind == "repair_open":
            open_repair(payload["part"], ledger, action=payload["action"], by=payload["by"], at=at, parts=parts)
        elif kind == "repair_close":
            close_repair(payload["part"], ledger, by=payload["by"], at=at, replaced=payload["replaced"],
                         rma_ids=payload["rma_ids"])
