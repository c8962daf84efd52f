"""`opsctl triage RACK`: read the rack now, localize the fault, and say what to do about it —
the repair, how long it takes, what it idles and the runbook — for the engineer holding the pager."""

from __future__ import annotations

import sys

import click

from opsctl.cli.commands.drain import contain
from opsctl.cli.commands.localize import exit_code, mttr_config_option
from opsctl.cli.commands.snapshot import DEFAULT_WINDOW_S, fanout_options, take_rack_snapshot, unanswered, write_atomically
from opsctl.cli.context import rack_argument, rack_from
from opsctl.cli.ledger_options import record_in_ledger, recording_options
from opsctl.cli.output import console, json_option, print_json
from opsctl.cli.window_progress import WindowProgress
from opsctl.errors import InputError
from opsctl.ledger import record_triage
from opsctl.localize import localize
from opsctl.localize.render import render_triage
from opsctl.localize.window_evidence import window_warnings, xids_seen
from opsctl.mttr import load_mttr_model
from opsctl.regular_files import OutputFile


@click.command("triage")
@rack_argument
@fanout_options
@click.option("--save", "save", type=OutputFile(), help="Also keep the snapshot here (JSON), to localize again later.")
@mttr_config_option
@recording_options
@click.option("--drain", is_flag=True, help="Drain in Slurm the nodes each faulty part's repair takes out of service "
              "(opsctl drain; docs/slurm.md).")
@click.option("--dry-run", is_flag=True, help="With --drain: print the exact scontrol commands the drain would run "
              "and run none.")
@json_option
@click.pass_context
def command(ctx: click.Context, rack: str, window: float, concurrency: int, connect_timeout: float,
            accept_new_host_keys: bool, ssh_config: str | None, save: str | None, mttr_config: str | None, record: bool, db: str | None,
            drain: bool, dry_run: bool, as_json: bool) -> int:
    """Snapshot every tray, localize the faulty parts, and print each with its evidence, repair
    action, MTTR, blast radius and runbook. Exit 1 if something is faulty, 3 if a tray could not
    be read and nothing was found in the rest, 0 if the rack is healthy."""
    if dry_run and not drain:
        raise InputError("--dry-run goes with --drain: it shows the drain's scontrol commands instead of running them")
    chosen = rack_from(ctx, rack)
    mttr = load_mttr_model(mttr_config)  # a bad file is refused before the trays are read
    with WindowProgress(chosen, window, sys.stderr) as progress:  # stderr: the --json on stdout stays whole
        snapshot = take_rack_snapshot(chosen, window, concurrency, connect_timeout, accept_new_host_keys, ssh_config,
                                      on_result=progress.finished)
    if save:
        write_atomically(save, snapshot)
    racks = localize([snapshot], {chosen.name: (chosen.model.name, chosen.cabling_map)}, mttr, [save or f"snapshot of {chosen.name}"])
    result = racks["racks"][0]
    seen, warnings = xids_seen(snapshot), window_warnings(snapshot, DEFAULT_WINDOW_S)
    if as_json:
        print_json({**result, "xids": {**result["xids"], "seen": seen}, "window_warnings": warnings,
                    "taken": snapshot.get("taken"), "trays": snapshot["trays"], "snapshot": save})
    else:
        out = console()
        render_triage(result, out)
        for tray in unanswered(snapshot):
            out.print(f"   {tray['tray']}: {tray['error']}")
        if seen:
            out.print(f"XIDs logged in the window ({len(seen)}):", markup=False)
        for xid in seen:
            times = f" ×{xid['count']}" if xid["count"] > 1 else ""
            out.print(f"   {xid['gpu']}: XID {xid['xid']}{times} ({xid['name'] or 'unlisted'}): {xid['meaning']}",
                      markup=False)
        for warning in warnings:
            out.print(f"window: {warning}", markup=False)
        if save:
            out.print(f"snapshot kept in {save} (opsctl localize {save})")
    if record:
        later = f"opsctl ledger record-triage FILE (the --json of opsctl localize {save})" if save else \
            "opsctl ledger record-triage FILE (save this triage with --json)"
        record_in_ledger(ctx, record_triage, racks, db, later)
    if drain:  # after recording: the reasons then name the incidents
        faults = [(s["component"], s.get("repair")) for s in result["suspects"] if not s.get("alternative_to")]
        contain(ctx, chosen, faults, mttr=mttr, record=record, db=db, dry_run=dry_run, to_stderr=as_json)
    return exit_code(racks)
