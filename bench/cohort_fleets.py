"""Generated fleets whose truth is known, for the ledger's cohort and age statistics: racks in
delivery batches failing at known rates (a Poisson process in time per rack), or first failing
at Weibull-distributed ages of a known shape — seeded, so each is the same fleet every time.

They are ledger tables as `Ledger.everything()` returns them (and as `opsctl ledger export`
writes them, so `opsctl ledger import` takes `export_document(...)`), built in memory in
milliseconds: a test can draw hundreds of fleets and count how often an interval covers the true
rate, or how often the cohort test calls equal batches different.
"""

from __future__ import annotations

import math
import random
from datetime import timedelta

from opsctl.ledger.timestamps import parse_time, stored

GPUS = 72  # a GB200 NVL72
# (kind, a part of that kind in rack R, its repair action, GPUs the repair idles): real component ids.
PARTS = (
    ("gpu", "{rack}/ct{tray:02d}/gpu{gpu}", "reset_gpu", 1),
    ("compute_tray", "{rack}/ct{tray:02d}", "replace_compute_tray", 4),
    ("connector", "{rack}/ct{tray:02d}/j0", "reseat_compute_tray", 4),
    ("cartridge", "{rack}/cart{cartridge}", "replace_cartridge", 72),
    ("switch_tray", "{rack}/st{switch}", "replace_switch_tray", 72),
)
START = "2026-01-05"


def _part(kind, rack, rng):
    for name, pattern, action, idled in PARTS:
        if name == kind:
            part = pattern.format(rack=rack, tray=rng.randint(1, 18), gpu=rng.randint(0, 3), cartridge=rng.randint(1, 4),
                                  switch=rng.randint(1, 9))
            return part, action, idled
    raise ValueError(kind)


def _empty():
    return {"racks": [], "runs": [], "triages": [], "incidents": [], "repairs": [], "drains": []}


def _rack(tables, rack, handover, batch, vendor, firmware):
    tables["racks"].append({"rack": rack, "model": "gb200-nvl72", "gpus": GPUS, "handover_at": stored(handover),
                            "retired_at": None, "vendor": vendor, "batch": batch, "firmware": firmware,
                            "recorded_at": stored(handover)})


def _failure(tables, rack, at, kind, rng, repair_hours, number):
    part, action, idled = _part(kind, rack, rng)
    key = f"inc-{rack}-{number:04d}"
    tables["incidents"].append({"key": key, "rack": rack, "occurred_at": stored(at), "part": part, "kind": kind,
                                "origin": "import", "triage_key": None, "note": None, "recorded_at": stored(at)})
    if repair_hours:
        hours = repair_hours * math.exp(rng.gauss(0.0, 0.5))
        back = at + timedelta(hours=hours)
        tables["repairs"].append({
            "key": f"rep-{rack}-{number:04d}", "incident_key": key, "rack": rack, "part": part, "kind": kind, "action": action,
            "details": None, "gpus_idled": idled, "opened_by": "gen", "opened_at": stored(at + timedelta(hours=0.1 * hours)),
            "closed_by": "gen", "closed_at": stored(back), "back_in_service_at": stored(back), "replaced": None,
            "rma_ids": [f"RMA-{rack}-{number:04d}"] if action.startswith("replace") else [], "recorded_at": stored(back)})


def _accept(tables, rack, at, verdict, number):
    tables["runs"].append({"key": f"run-{rack}-{number}", "rack": rack, "kind": "accept", "started_at": stored(at - timedelta(hours=2)),
                           "finished_at": stored(at), "verdict": verdict, "failing_parts": [], "source": None,
                           "recorded_at": stored(at)})


def batch_fleet(mtbi_by_batch, *, racks_per_batch=6, days=365, seed=0, kinds=("gpu", "compute_tray", "connector"),
                repair_hours=0.0, stagger_days=30, acceptance_failure=0.0, vendor="odm-a", until=None):
    """Racks in batches, each failing as a Poisson process at GPUS / its batch's MTBI (GPU-days)
    per day from its handover to the end (`until`, or START + days); returns (tables, until).

    repair_hours > 0 gives every failure a closed repair of about that length (and RMA ids for
    replacements); the repairs' idle time then makes the measured exposure a little shorter than
    the generated one, so the tests of coverage generate none."""
    rng = random.Random(seed)
    tables = _empty()
    begin = parse_time(START)
    end = parse_time(until) if until else begin + timedelta(days=days)
    for batch, mtbi in mtbi_by_batch.items():
        for number in range(1, racks_per_batch + 1):
            rack = f"{batch.lower()}r{number:02d}"
            handover = begin + timedelta(days=rng.uniform(0, stagger_days))
            if acceptance_failure and rng.random() < acceptance_failure:
                _accept(tables, rack, handover - timedelta(days=2), "fail", 0)
            _accept(tables, rack, handover, "pass", 1)
            _rack(tables, rack, handover, batch, vendor, "fw-1.0")
            t, count = handover, 0
            rate = GPUS / mtbi  # failures per day
            while True:
                t += timedelta(days=rng.expovariate(rate))
                if t >= end:
                    break
                count += 1
                _failure(tables, rack, t, rng.choice(kinds), rng, repair_hours, count)
    return tables, stored(end)


def weibull_fleet(shape, scale_days, *, racks=200, days=365, seed=0, kind="cartridge", stagger_days=180, batch="B1"):
    """Racks whose first failure (of `kind`) comes at a Weibull(shape, scale_days) age after handover;
    racks handed over across `stagger_days` and followed to START + days, so the later ones are
    censored sooner. Returns (tables, until)."""
    rng = random.Random(seed)
    tables = _empty()
    begin = parse_time(START)
    end = begin + timedelta(days=days)
    for number in range(1, racks + 1):
        rack = f"w{number:04d}"
        handover = begin + timedelta(days=rng.uniform(0, stagger_days))
        _rack(tables, rack, handover, batch, "odm-a", "fw-1.0")
        age = rng.weibullvariate(scale_days, shape)
        if handover + timedelta(days=age) < end:
            _failure(tables, rack, handover + timedelta(days=age), kind, rng, 0.0, 1)
    return tables, stored(end)


def export_document(tables):
    """The tables as `opsctl ledger import` reads them (the export format)."""
    return {"format": "opsctl-ledger/1", **tables}
