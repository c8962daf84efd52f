"""Judging a fleet run: every rack by burnin's own `judge_run` (which writes the rack's
summary.json, snapshot.json, report.html and junit.xml into its run directory), then the fleet's
verdict across racks, written to fleet-summary.json. And judging one rack's run folder again
(`judge_rack_run`), as `opsctl burnin` or `opsctl accept` judged it when it ran.

The fleet's verdict follows the rack's rule one level up: FAIL (exit 1) when any rack failed,
even if others are incomplete; INCOMPLETE (exit 3) when none failed but one was not fully seen;
PASS (exit 0) only when every rack passed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl.burnin.rack_judge import EXIT_CODES, FAIL, INCOMPLETE, PASS
from opsctl.burnin.session import judge_run, resume_run, unchanged_criteria
from opsctl.errors import InputError
from opsctl.fleet.ansible_results import import_records
from opsctl.fleet.plan import FLEET_FILE, FLEET_FORMAT
from opsctl.inventory import load_inventory
from opsctl.reports import REPORT_FILES
from opsctl.reports.formatting import primary_suspects, shown_checks
from opsctl.runs.atomic_file import write_json_atomic
from opsctl.runs.journal import utc_now
from opsctl.runs.run_directory import RUN_FILE, default_runs_root
from opsctl.runs.trial import trial_fields, trial_of

if TYPE_CHECKING:
    from opsctl.burnin.rack_judge import RackJudgment

SUMMARY_FORMAT = "opsctl-fleet/1"
SUMMARY_FILE = "fleet-summary.json"


def read_fleet_file(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / FLEET_FILE
    if not path.is_file():
        raise InputError(f"{run_dir}: not a fleet run folder (no {FLEET_FILE}; `opsctl fleet plan` writes it, "
                         "and ansible/burnin.yml runs that)")
    try:
        fleet = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{path}: cannot read: {error}") from None
    if not isinstance(fleet, dict) or fleet.get("format") != FLEET_FORMAT or not isinstance(fleet.get("racks"), list):
        raise InputError(f"{path}: not an opsctl fleet run (expected format {FLEET_FORMAT})")
    return fleet


def run_kind_of(run_dir: str | Path) -> str:
    """"fleet" for a fleet run folder (fleet.json), "rack" for one rack's run folder (run.json,
    as `opsctl burnin` and `opsctl accept` make it, or a run's name under the default root)."""
    path = Path(run_dir)
    if (path / FLEET_FILE).exists():
        return "fleet"
    if (path / RUN_FILE).exists() or (default_runs_root() / str(run_dir) / RUN_FILE).exists():
        return "rack"
    raise InputError(f"{run_dir}: not a run folder: no {FLEET_FILE} (a fleet run, planned by `opsctl fleet plan`) "
                     f"and no {RUN_FILE} (one rack's run, made by `opsctl burnin` or `opsctl accept`)")


def judge_rack_run(run_dir: str | Path, inventory_file: str | None = None) -> tuple[RackJudgment, dict[str, Any]]:
    """Judge one rack's run folder again from the tray results it holds — the very `judge_run`
    burnin ends with — and write its summary and reports again; (judgment, summary). The rack is
    read from the inventory the run recorded, unless `inventory_file` names another; criteria
    that changed since the run started are refused, as a resume refuses them."""
    run, plan, meta = resume_run(run_dir)
    unchanged_criteria(run, plan)
    rack = load_inventory(inventory_file or meta.get("inventory")).rack(str(meta.get("rack")))
    return judge_run(rack, run, plan)


def fleet_verdict(verdicts: Iterable[str]) -> str:
    verdicts = set(verdicts)
    if FAIL in verdicts:
        return FAIL
    if INCOMPLETE in verdicts or not verdicts:
        return INCOMPLETE
    return PASS


def judge_fleet(run_dir: str | Path, inventory_file: str | None = None) -> dict[str, Any]:
    """Judge every rack of the fleet run; write and return the fleet summary."""
    run_dir = Path(run_dir).resolve()
    fleet = read_fleet_file(run_dir)
    inventory = load_inventory(inventory_file or fleet.get("inventory"))
    racks: list[dict[str, Any]] = []
    for name in fleet["racks"]:
        rack = inventory.rack(str(name))
        run, plan, _ = resume_run(run_dir / rack.name)
        unchanged_criteria(run, plan)  # the trays ran what the criteria said when the run was planned
        import_records(rack, run)
        _, summary = judge_run(rack, run, plan)
        racks.append(rack_line(summary, run.path))
    verdict = fleet_verdict(r["verdict"] for r in racks)
    criteria = fleet.get("criteria") or {}
    document = {
        "format": SUMMARY_FORMAT, "kind": fleet.get("kind"), "run_dir": str(run_dir), "verdict": verdict,
        "exit_code": EXIT_CODES[verdict], "judged": utc_now(), "planned": fleet.get("created"),
        "inventory": str(inventory.source), "criteria": criteria,
        **trial_fields(fleet.get("kind") or "", fleet.get("duration_s") or 0, criteria.get("duration_s") or 0),
        "counts": {v: sum(1 for r in racks if r["verdict"] == v) for v in (PASS, FAIL, INCOMPLETE)},
        "racks": racks,
    }
    write_json_atomic(run_dir / SUMMARY_FILE, document)
    return document


def rack_line(summary: dict[str, Any], run_path: Path) -> dict[str, Any]:
    """One rack in the fleet summary: its verdict and why, drawn from its own summary."""
    trays = summary["trays"]
    return {
        "rack": summary["rack"], "model": summary["model"], "verdict": summary["verdict"],
        "run_id": summary.get("run_id"),  # the ledger's one row per run
        "exit_code": summary["exit_code"], "trial": trial_of(summary)["trial"],
        "trays_reported": sum(1 for t in trays if t["status"] == "complete"), "trays": len(trays),
        "not_reported": [{"tray": t["id"], "host": t["host"], "status": t["status"], "reason": t["reason"]}
                         for t in trays if t["status"] != "complete"],
        # failing components; a tray that did not report is in not_reported, not failing
        "failing": {kind: ids for kind, ids in summary["failing"].items() if kind != "trays"},
        "parts_to_repair": [{k: s.get(k) for k in ("component", "kind", "action", "mttr_hours", "gpus_idled")}
                            for s in primary_suspects(summary)],
        "checks": shown_checks(summary),
        "run": str(run_path),
        "files": {"summary": str(run_path / "summary.json"), **{f.split(".")[0]: str(run_path / f) for f in REPORT_FILES}},
    }
