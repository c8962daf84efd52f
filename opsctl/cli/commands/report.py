"""`opsctl report RUN_DIR`: judge a fleet run whose trays Ansible ran (ansible/burnin.yml) —
each rack by the very code `opsctl burnin` judges with — and write every rack's summary and
reports and the fleet's summary (RUN_DIR/fleet-summary.json)."""

import json
from pathlib import Path

import click
from rich.table import Table

from opsctl.cli.ledger_options import record_in_ledger, recording_options
from opsctl.cli.output import console, json_option, print_json
from opsctl.fleet.judge import SUMMARY_FILE, judge_fleet
from opsctl.ledger import record_burnin
from opsctl.reports.formatting import fails_when, reading
from opsctl.reports.terminal import STYLE

CHECKS_SHOWN_PER_RACK = 5  # the rest are in the rack's report.html


@click.command("report")
@click.argument("run_dir", type=click.Path(file_okay=False))
@recording_options
@json_option
@click.pass_context
def command(ctx, run_dir, record, db, as_json):
    """Judge the results Ansible fetched into RUN_DIR, rack by rack as `opsctl burnin` does; exit
    1 when a rack failed, 3 when a rack is incomplete (a tray unreachable or its probe did not
    finish), 0 when every rack passed. The inventory is the one the run was planned with,
    unless --inventory names another."""
    fleet = judge_fleet(run_dir, ctx.find_root().obj.get("inventory"))
    if as_json:
        print_json(fleet)
    else:
        print_fleet(console(), fleet)
    if record:
        for rack in fleet["racks"]:
            summary = Path(rack["files"]["summary"])
            record_in_ledger(ctx, record_burnin, json.loads(summary.read_text()), db,
                             f"opsctl ledger record-burnin {summary.parent}")
    ctx.exit(fleet["exit_code"])


def print_fleet(out, fleet):
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


def unreported_lines(rack, trays_named=4):
    """'27 of 27 trays did not report: REASON' — one line per distinct reason, naming the trays
    when not all of them share it."""
    missing = rack["not_reported"]
    if not missing:
        return []
    by_reason = {}
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
