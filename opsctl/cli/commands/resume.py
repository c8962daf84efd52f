"""`opsctl resume PART|RACK [--dry-run]`: give back to the scheduler the nodes opsctl drained
for PART (or, for a RACK, every node of it opsctl drained). A node another opsctl hold still
keeps out stays drained with that part alone in its reason; a node someone else drained is
left drained, and said (docs/slurm.md). `opsctl repair close PART --resume` does this after a
passing validation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from opsctl.backend import topology_for
from opsctl.cli.commands.drain import dry_run_option, rack_and_target, report
from opsctl.cli.context import inventory_option
from opsctl.cli.ledger_options import recording_options
from opsctl.cli.output import json_option, print_json
from opsctl.mttr import load_mttr_model
from opsctl.slurm import nodes_of_part, resume_parts

if TYPE_CHECKING:
    from opsctl.inventory import Rack
    from opsctl.slurm.containment import Containment


def resume_part(ctx: click.Context, rack: Rack, target: str, *, record: bool = True, db: str | None = None,
                dry_run: bool = False, to_stderr: bool = False) -> Containment:
    scope = nodes_of_part(rack, target, topology_for(rack), load_mttr_model())
    containment = resume_parts([target], scope.nodes, dry_run)
    report(ctx, containment, rack, record, db, to_stderr)
    return containment


@click.command("resume")
@click.argument("target", metavar="PART|RACK")
@inventory_option
@dry_run_option
@recording_options
@json_option
@click.pass_context
def command(ctx: click.Context, target: str, dry_run: bool, record: bool, db: str | None, as_json: bool) -> int:
    """Resume the Slurm nodes opsctl drained for PART (or the RACK). Exit 0 when done (nodes held
    by someone else, or for another part, are left and said), 3 when slurmctld could not be
    asked or told."""
    rack, target = rack_and_target(ctx, target)
    containment = resume_part(ctx, rack, target, record=record, db=db, dry_run=dry_run, to_stderr=as_json)
    if as_json:
        print_json(containment.to_dict())
    return 0
