"""`opsctl report RUN_DIR`: judge a run folder again and write its reports.

- A fleet run whose trays Ansible ran (ansible/burnin.yml; RUN_DIR/fleet.json): each rack by the
  very code `opsctl burnin` judges with, every rack's summary and reports, and the fleet's
  summary (RUN_DIR/fleet-summary.json).
- One rack's run folder, made by `opsctl burnin` or `opsctl accept` (RUN_DIR/run.json): judged
  again as burnin judged it when it ran, its summary.json, snapshot.json, report.html and
  junit.xml written again — after an upgrade of opsctl, or for a run killed before it was judged.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from opsctl.cli.ledger_options import record_in_ledger, recording_options
from opsctl.cli.output import console, json_option, print_json
from opsctl.fleet.judge import SUMMARY_FILE, judge_fleet, judge_rack_run, run_kind_of
from opsctl.ledger import record_burnin
from opsctl.regular_files import OutputFolder, read_regular_text
from opsctl.reports.formatting import fails_when, reading
from opsctl.reports.terminal import STYLE, print_summary
from opsctl.runs.trial import trial_of

if TYPE_CHECKING:
    from rich.console import Console

CHECKS_SHOWN_PER_RACK = 5  # the rest are in the rack's report.html


@click.command("report")
@click.argument("run_dir", type=OutputFolder())
@recording_options
@json_option
@click.pass_context
def command(ctx: click.Context, run_dir: str, record: bool, db: str | None, as_json: bool) -> None:
    """Judge RUN_DIR again as `opsctl burnin` judges and write its reports: a fleet run whose
    results Ansible fetched (rack by rack, and the fleet), or one rack's run folder made by
    `opsctl burnin` or `opsctl accept`. Exit 1 when a rack failed, 3 when a rack is incomplete
    (a tray unreachable or its probe did not finish), 0 when every rack passed. The inventory is
    the one the run was made with, unless --inventory names another. Each rack is recorded in
    the ledger: one row per run, brought up to date when a run is judged again."""
    inventory = ctx.find_root().obj.get("inventory")
    if run_kind_of(run_dir) == "rack":
        _, summary = judge_rack_run(run_dir, inventory)
        if as_json:
            print_json(summary)
        else:
            print_summary(console(), summary)
        if record:
            record_run(ctx, summary, db, summary["run"])
        ctx.exit(summary["exit_code"])
    fleet = judge_fleet(run_dir, inventory)
    if as_json:
        print_json(fleet)
    else:
        print_fleet(console(), fleet)
    if record:
        for rack in fleet["racks"]:
            summary_file = Path(rack["files"]["summary"])
            record_run(ctx, json.loads(read_regular_text(summary_file)), db, summary_file.parent)
    ctx.exit(fleet["exit_code"])


def record_run(ctx: click.Context, summary: dict[str, Any], db: str | None, run_path: str | Path) -> None:
    """Record a judged rack in the ledger: a trial acceptance as the burn-in it is, so that its
    pass does not hand the rack over."""
    if trial_of(summary)["trial"]:
        record_in_ledger(ctx, functools.partial(record_burnin, kind="burnin"), summary, db,
                         f"opsctl ledger record-burnin {run_path} --kind burnin")
    else:
        record_in_ledger(ctx, record_burnin, summary, db, f"opsctl ledger record-burnin {run_path}")


def print_fleet(out: Console, fleet: dict[str, Any]) -> None:
    table = Table(title=f"{fleet['kind']} of {len(fleet['racks'])} rack(s) in {fleet['run_dir']}")
    for column in ("rack", "model", "verdict", "trays reported", "failing", "report"):
        table.add_column(column)
    for rack in fleet["racks"]:
        # Failing components only: a tray that did not report is unjudged, not failing — it
        # shows in "trays reported" and makes the rack INCOMPLETE.
        failing = sum(len(ids) for kind, ids in rack["failing"].items() if kind != "trays")
        table.add_row(rack["rack"], rack["model"], f"[{STYLE[rack['verdict']]}]{rack['verdict']}[/]",
                      f"{rack['trays_reported']}/{rack['trays']}", str(failing) if failing else "-", rack["files"]["report"])
    out.print(table)
    if fleet.get("trial"):
        out.print(f"a trial acceptance: {fleet['duration_s']:g} s of load per tray, not the criteria's "
                  f"{fleet['criteria_duration_s']:g} s — not an acceptance by the criteria", soft_wrap=True)
    for rack in fleet["racks"]:
        if rack["verdict"] == "PASS":
            continue
        out.print(f"[{STYLE[rack['verdict']]}]{rack['rack']}: {rack['verdict']}[/]")
        for line in unreported_lines(rack):
            out.print(f"  {line}", soft_wrap=True)
        for part in rack["parts_to_repair"]:
            out.print(f"  repair {part['component']}: {part['action']} (about {part['mttr_hours']:g} h, "
                      f"{part['gpus_idled']} GPUs idled)")
        checks = [c for c in rack["checks"] if c["check"] != "tray.reported"]  # said above, tray by tray no more
        for check in checks[:CHECKS_SHOWN_PER_RACK]:
            threshold = fails_when(check)
            judged = f"{reading(check)}, fails {threshold}" if threshold else reading(check)
            out.print(f"  {check['verdict']} {check['component']} {check['check']}: {judged} — {check['reason']}"
                      + (f" [{check['source']}]" if check["source"] else ""))
        hidden = len(checks) - CHECKS_SHOWN_PER_RACK
        if hidden > 0:
            out.print(f"  … and {hidden} more in {rack['files']['report']}")
    counts = ", ".join(f"{n} {verdict}" for verdict, n in fleet["counts"].items())
    out.print(f"[{STYLE[fleet['verdict']]}]fleet: {fleet['verdict']}[/] (exit {fleet['exit_code']}) — {counts}; "
              f"{fleet['run_dir']}/{SUMMARY_FILE}")


def unreported_lines(rack: dict[str, Any], trays_named: int = 4) -> list[str]:
    """'27 of 27 trays did not report: REASON' — one line per distinct reason, naming the trays
    when not all of them share it."""
    missing = rack["not_reported"]
    if not missing:
        return []
    by_reason: dict[str, list[str]] = {}
    for tray in missing:
        by_reason.setdefault(tray["reason"] or tray["status"], []).append(tray["tray"])
    count = f"{len(missing)} of {rack['trays']} tray{'s' if rack['trays'] != 1 else ''}"
    if len(by_reason) == 1:
        return [f"{count} did not report: {next(iter(by_reason))}"]
    lines = [f"{count} did not report:"]
    for reason, trays in by_reason.items():
        named = ", ".join(trays[:trays_named]) + (f" and {len(trays) - trays_named} more" if len(trays) > trays_named else "")
        lines.append(f"  {named}: {reason}")
    return lines
