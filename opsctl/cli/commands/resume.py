"""`opsctl resume PART|RACK [--dry-run] [--unvalidated]`: give back to the scheduler the nodes
opsctl drained for PART (or, for a RACK, every node of it opsctl drained) — each part only once
a burn-in or acceptance of the rack since its drain no longer fails it, as the ledger records
them. A node another opsctl hold still keeps out stays drained with that part alone in its
reason; a node someone else drained is left drained, and said (docs/slurm.md). `opsctl repair
close PART --resume` does this after a passing validation."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from opsctl.backend import topology_for
from opsctl.cli.commands.drain import dry_run_option, rack_and_target, report
from opsctl.cli.context import inventory_option
from opsctl.cli.ledger_options import recording_options
from opsctl.cli.output import json_option, print_json
from opsctl.errors import EXIT_FAILED, EXIT_INCOMPLETE, OpsctlError
from opsctl.ledger import open_ledger
from opsctl.ledger.drains import open_drain_of, validation_since
from opsctl.mttr import load_mttr_model
from opsctl.slurm import nodes_of_part, resume_parts
from opsctl.slurm.containment import HEALTH_ACTION, UNVALIDATED, Hold

if TYPE_CHECKING:
    from opsctl.inventory import Rack
    from opsctl.slurm.containment import Containment

STILL_FAILS = "still fails"  # the words validation_since uses when a run since names the part


def resume_part(ctx: click.Context, rack: Rack, target: str, *, record: bool = True, db: str | None = None,
                dry_run: bool = False, to_stderr: bool = False,
                why_kept: Callable[[str, Hold], str | None] | None = None) -> Containment:
    scope = nodes_of_part(rack, target, topology_for(rack), load_mttr_model())
    containment = resume_parts([target], scope.nodes, dry_run, why_kept=why_kept)
    report(ctx, containment, rack, record, db, to_stderr)
    return containment


def validation_rule(rack: str, db: str | None) -> Callable[[str, Hold], str | None]:
    """why_kept for resume_parts: a hold stays unless the ledger shows a complete burn-in or
    acceptance of the rack since the node was drained for the part that no longer fails it.
    A health check's own hold is its check's to release (opsctl health --slurm, once it passes)."""
    try:
        with open_ledger(db, read_only=True) as ledger:
            drains = {(r["node"], r["part"]): r for r in ledger.records("drains", "resumed_at IS NULL")}
            verdicts: dict[tuple[str, str], str | None] = {}
            for (node, part), drain in drains.items():
                drain = open_drain_of(ledger, node, part) or drain
                run, why = validation_since(ledger, rack, part, drain["drained_at"], f"{node} was drained for it")
                verdicts[(node, part)] = None if run else why
        unreadable = ""
    except OpsctlError as error:
        verdicts, unreadable = {}, str(error)

    def why_kept(node: str, hold: Hold) -> str | None:
        if hold.action == HEALTH_ACTION:
            return f"held by its health check, which resumes it once its checks pass (opsctl health {hold.part} --slurm)"
        if unreadable:
            return f"the ledger cannot be read ({unreadable}), so its validation cannot be checked"
        if (node, hold.part) not in verdicts:
            return "no drain of it on this node is on record in the ledger, so its validation cannot be checked"
        return verdicts[(node, hold.part)]

    return why_kept


@click.command("resume")
@click.argument("target", metavar="PART|RACK")
@inventory_option
@dry_run_option
@click.option("--unvalidated", is_flag=True,
              help="Resume without checking that a burn-in or acceptance since the drain no longer fails the part "
                   "(said on stderr).")
@recording_options
@json_option
@click.pass_context
def command(ctx: click.Context, target: str, dry_run: bool, unvalidated: bool, record: bool, db: str | None,
            as_json: bool) -> int:
    """Resume the Slurm nodes opsctl drained for PART (or the RACK). Each part only once the rack's
    latest burn-in or acceptance since its drain no longer fails it. Exit 0 when done (nodes held
    by someone else, or for another part, are left and said); 1 when a run since still fails a
    part and 3 when none has judged it (its nodes stay drained); 3 when slurmctld could not be
    asked or told."""
    rack, target = rack_and_target(ctx, target)
    why_kept = None
    if unvalidated or not record:
        said = "--unvalidated" if unvalidated else "--no-ledger: the ledger's drains and runs are not read"
        click.echo(f"opsctl: warning: resuming without checking each part's validation since its drain ({said})",
                   err=True)
    else:
        why_kept = validation_rule(rack.name, db)
    containment = resume_part(ctx, rack, target, record=record, db=db, dry_run=dry_run, to_stderr=as_json,
                              why_kept=why_kept)
    if as_json:
        print_json(containment.to_dict())
    kept = [n.detail for n in containment.nodes if n.outcome == UNVALIDATED or "(not validated: " in n.detail]
    if kept:
        return EXIT_FAILED if any(STILL_FAILS in detail for detail in kept) else EXIT_INCOMPLETE
    return 0
