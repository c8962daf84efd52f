"""The fleet by cohort: racks grouped by what they came with — vendor or ODM, delivery batch,
firmware at handover (the ledger's own columns, from the inventory's opsctl_vendor, opsctl_batch,
opsctl_firmware), or any inventory variable by name — and, per cohort, what `opsctl ledger
stats` measures (exposure, failures, MTBI with its exact interval, time to restore), its RMA ids
and acceptance results, and whether the cohorts' failure rates differ beyond chance
(rate_tests.py).

Each cohort's figures are fleet_stats' over that cohort's racks, from one read of the ledger, so
a cohort's MTBI is the number `opsctl ledger stats --rack …` gives for the same racks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from opsctl.errors import InputError
from opsctl.ledger.fleet_stats import fleet_statistics, window_of
from opsctl.ledger.intervals import binomial_interval, hours_summary
from opsctl.ledger.rate_tests import compare_rates
from opsctl.ledger.repairs import restore_hours
from opsctl.ledger.store import COHORT_COLUMNS
from opsctl.ledger.timestamps import Moment, parse_time

if TYPE_CHECKING:
    from opsctl.inventory import Inventory
    from opsctl.ledger.store import Ledger, Record
    from opsctl.mttr import MttrModel

NOT_SET = "(not set)"  # the cohort of racks the field is not given for


class Snapshot:
    """The ledger's tables read once (Ledger.everything()), standing in for the ledger where the
    statistics read it again and again: every cohort from the same consistent picture."""

    def __init__(self, data: dict[str, list[Record]], url: str) -> None:
        self.data = data
        self.url = url

    def everything(self) -> dict[str, list[Record]]:
        return self.data


def cohort_field(by: str) -> str:
    """The ledger column a --by names (vendor, batch, firmware, or opsctl_<that>), else the
    inventory variable's name as given."""
    name = by.strip()
    if not name:
        raise InputError("--by: empty (vendor, batch, firmware, or an inventory variable's name)")
    bare = name[len("opsctl_"):] if name.startswith("opsctl_") else name
    return bare if bare in COHORT_COLUMNS else name


def cohorts_of(racks: Iterable[Record], by: str, inventory: Inventory | None = None) -> dict[str, str]:
    """{rack: its cohort under `by`}: the ledger's column for vendor, batch or firmware, else the
    inventory variable of that name (the inventory as it is now); NOT_SET where neither says."""
    field = cohort_field(by)
    rows = list(racks)
    if field in COHORT_COLUMNS:
        return {row["rack"]: NOT_SET if row.get(field) in (None, "") else str(row[field]) for row in rows}
    if inventory is None:
        from opsctl.inventory import load_inventory

        inventory = load_inventory()
    found = {}
    for row in rows:
        rack = inventory.racks.get(row["rack"])
        value = rack.vars.get(field) if rack is not None else None
        found[row["rack"]] = NOT_SET if value is None or isinstance(value, (dict, list)) else str(value)
    if rows and all(value == NOT_SET for value in found.values()):
        raise InputError(f"--by {by}: no rack of the ledger has it: not one of the ledger's cohort fields "
                         f"({', '.join(COHORT_COLUMNS)}), and no rack in {inventory.source} sets an inventory "
                         f"variable {field}")
    return found


def parse_cohort(text: str) -> tuple[str, str]:
    """'batch=2026-03' -> ('batch', '2026-03'); a bare value is looked up later among the ledger's cohort fields."""
    field, sep, value = text.partition("=")
    if not sep:
        return "", text.strip()
    if not field.strip() or not value.strip():
        raise InputError(f"--cohort {text!r}: write FIELD=VALUE (batch=2026-03, vendor=odm-a, firmware=1.2.3)")
    return cohort_field(field), value.strip()


def cohort_racks(ledger: Ledger, cohort: str, inventory: Inventory | None = None) -> tuple[str, str, list[str]]:
    """(field, value, the racks of that cohort) for `--cohort FIELD=VALUE` (or a bare VALUE that
    exactly one of vendor, batch, firmware has): what `tco --from-ledger --cohort` prices."""
    field, value = parse_cohort(cohort)
    racks = ledger.records("racks")
    if not field:
        fields = [f for f in COHORT_COLUMNS if any(str(row.get(f)) == value for row in racks)]
        if len(fields) != 1:
            said = f"the {' and '.join(fields)} of racks" if fields else "no rack's vendor, batch or firmware"
            raise InputError(f"--cohort {value}: {value!r} is {said} in the ledger; write FIELD=VALUE "
                             "(batch=…, vendor=…, firmware=…, or an inventory variable)")
        field = fields[0]
    chosen = sorted(rack for rack, name in cohorts_of(racks, field, inventory).items() if name == value)
    if not chosen:
        known = sorted(set(cohorts_of(racks, field, inventory).values()) - {NOT_SET})
        raise InputError(f"--cohort {field}={value}: no rack of the ledger is in it (its {field}s: "
                         f"{', '.join(known) or 'none recorded'})")
    return field, value, chosen


def _acceptance(runs: list[Record]) -> dict[str, Any]:
    """Acceptance results of a cohort's racks: runs by verdict, and the share of racks whose first judged acceptance passed."""
    accepts = [r for r in runs if r["kind"] == "accept"]
    first: dict[str, Record] = {}
    for run in sorted((r for r in accepts if r["verdict"] in ("pass", "fail")), key=lambda r: r["finished_at"]):
        first.setdefault(run["rack"], run)
    passed = sum(run["verdict"] == "pass" for run in first.values())
    low, high = binomial_interval(passed, len(first))
    return {
        "runs": {verdict: sum(r["verdict"] == verdict for r in accepts) for verdict in ("pass", "fail", "incomplete")},
        "racks_judged": len(first), "racks_passed_first": passed,
        "first_pass_rate": round(passed / len(first), 4) if first else None,
        "interval": [round(low, 4), round(high, 4)] if first else None,
        "method": "racks whose first judged acceptance passed / racks judged; exact Clopper-Pearson interval",
    }


def cohort_statistics(ledger: Ledger | Snapshot, by: str, *, since: Moment | None = None, until: Moment | None = None,
                      racks: Iterable[str] = (), confidence: float = 0.95, infant_weeks: float = 4,
                      inventory: Inventory | None = None, mttr_model: MttrModel | None = None) -> dict[str, Any]:
    """The `opsctl ledger stats --by COHORT` document."""
    data = ledger.everything()
    url = ledger.url
    snapshot = Snapshot(data, url)
    window = window_of(since, until, racks)
    rows = [row for row in data["racks"] if window.covers_rack(row["rack"])]
    unknown = [r for r in window.racks if r not in {row["rack"] for row in data["racks"]}]
    if unknown:
        raise InputError(f"rack(s) not in the ledger: {', '.join(unknown)}")
    of = cohorts_of(rows, by, inventory)
    members: dict[str, list[str]] = {}
    for rack, name in sorted(of.items()):
        members.setdefault(name, []).append(rack)
    if mttr_model is None:
        from opsctl.mttr import load_mttr_model

        mttr_model = load_mttr_model()
    incidents = {i["key"]: i for i in data["incidents"]}
    overall = fleet_statistics(cast("Ledger", snapshot), since=since, until=until, racks=racks, confidence=confidence,
                               infant_weeks=infant_weeks, mttr_model=mttr_model)
    cohorts: dict[str, dict[str, Any]] = {}
    for name, names in sorted(members.items(), key=lambda item: (item[0] == NOT_SET, item[0])):
        stats = fleet_statistics(cast("Ledger", snapshot), since=since, until=until, racks=names,
                                 confidence=confidence, infant_weeks=infant_weeks, mttr_model=mttr_model)
        chosen = set(names)
        repairs = [r for r in data["repairs"] if r["rack"] in chosen and window.covers(parse_time(r["opened_at"]).timestamp())]
        hours = [h for h in (restore_hours(r, incidents) for r in repairs) if h is not None]
        runs = [r for r in data["runs"] if r["rack"] in chosen and window.covers(parse_time(r["finished_at"]).timestamp())]
        cohorts[name] = {
            "racks": names,
            "racks_in_service": stats["exposure"]["racks_in_service"],
            "gpu_days": stats["exposure"]["gpu_days"],
            "failures": stats["failures"],
            "mtbi": stats["mtbi"]["overall"],
            "mtbi_by_kind": stats["mtbi"]["by_kind"],
            "time_to_restore": {"repairs": len(repairs), "closed": len(hours), **hours_summary(hours, confidence)},
            "rma_ids": sorted({rma for r in repairs for rma in (r["rma_ids"] or [])}),
            "rma": [{"rma_id": rma, "part": r["part"], "kind": r["kind"], "repair": r["key"], "opened_at": r["opened_at"]}
                    for r in repairs for rma in (r["rma_ids"] or [])],
            "acceptance": _acceptance(runs),
            "infant_mortality": stats["infant_mortality"],
        }
    # Racks whose field is not set are a cohort of their own in the table, but no batch to compare.
    comparison = compare_rates({name: (c["mtbi"]["failures"], c["gpu_days"]) for name, c in cohorts.items()
                                if name != NOT_SET}, confidence)
    return {
        "ledger": url, "by": cohort_field(by), "window": overall["window"], "confidence": confidence,
        "fleet": {"racks_in_service": overall["exposure"]["racks_in_service"], "gpu_days": overall["exposure"]["gpu_days"],
                  "mtbi": overall["mtbi"]["overall"], "method": overall["mtbi"]["method"]},
        "cohorts": cohorts,
        "comparison": comparison,
        "verdict": verdict_line(cohort_field(by), comparison, cohorts),
        "not_compared": [NOT_SET] if NOT_SET in cohorts else [],
    }


def verdict_line(field: str, comparison: Mapping[str, Any], cohorts: Mapping[str, Any]) -> str:
    """One sentence: which cohort fails more (or less) often beyond chance, or that none does."""
    if not comparison["tested"]:
        return f"by {field}: {comparison['why']}"
    level = f"{1 - comparison['level']:.0%}"
    said = []
    for name in comparison["worse"]:
        test = comparison["cohorts"][name]
        said.append(f"{field} {name} fails more often than {test['against']}: rate × {_ratio(test)} "
                    f"(adjusted p = {test['p_adjusted']:.2g})")
    for name in comparison["better"]:
        if len(cohorts) == 2 and comparison["worse"]:
            continue  # with two cohorts the better one is the other side of the same test
        test = comparison["cohorts"][name]
        said.append(f"{field} {name} fails less often than {test['against']}: rate × {_ratio(test)} "
                    f"(adjusted p = {test['p_adjusted']:.2g})")
    if said:
        return "; ".join(said) + f" — beyond chance at {level}"
    return (f"no {field} fails more or less often than the others beyond chance at {level} "
            f"(smallest adjusted p = {min(t['p_adjusted'] for t in comparison['cohorts'].values()):.2g})")


def _ratio(test: Mapping[str, Any]) -> str:
    low, high = test["interval"]
    point = "∞" if test["rate_ratio"] is None else f"{test['rate_ratio']:.2f}"
    return f"{point} [{'-' if low is None else f'{low:.2f}'}–{'∞' if high is None else f'{high:.2f}'}]"
