"""`opsctl drain PART|RACK [--dry-run]`: take out of the scheduler exactly the nodes a part's
repair takes out of service (the repair model's out-of-service unit), with a reason an operator
can act on; a node drained by someone else is left as it is and reported (docs/slurm.md).

Also what `resume`, and the --drain of triage, burnin and accept, share: finding the part's
rack and nodes, printing what was done, and recording it in the ledger.
"""

from __future__ import annotations

import getpass
from collections.abc import Iterable
from typing import TYPE_CHECKING

import click
from rich.console import Console

from opsctl.backend import topology_for
from opsctl.cli.commands.localize import mttr_config_option
from opsctl.cli.context import inventory_option, rack_from
from opsctl.cli.ledger_options import parts_for, recording_options
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import OpsctlError
from opsctl.ledger import open_ledger
from opsctl.ledger.drains import open_incident_of, record_containment
from opsctl.mttr import load_mttr_model
from opsctl.slurm import drain_parts, nodes_of_part
from opsctl.slurm.containment import LEFT
from opsctl.slurm.scontrol import shown

if TYPE_CHECKING:
    from opsctl.inventory import Rack
    from opsctl.mttr import MttrModel
    from opsctl.slurm.containment import Containment

dry_run_option = click.option("--dry-run", is_flag=True,
                              help="Say what would change and print the exact scontrol commands; run none.")


def who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def rack_and_target(ctx: click.Context, target: str) -> tuple[Rack, str]:
    """(the rack, the part id or the rack's name) of a PART|RACK argument."""
    return rack_from(ctx, target.split("/", 1)[0]), target.rstrip("/")


def open_incidents(db: str | None, parts: Iterable[str]) -> dict[str, str | None]:
    """{part: its open incident's key} from the ledger; {} when there is no ledger to read."""
    try:
        with open_ledger(db, read_only=True) as ledger:
            return {part: open_incident_of(ledger, part) for part in parts}
    except OpsctlError:
        return {}


def contain(ctx: click.Context, rack: Rack, parts: Iterable[tuple[str, str | None]], *, mttr: MttrModel | None = None,
            record: bool = True, db: str | None = None, dry_run: bool = False, to_stderr: bool = False) -> Containment:
    """Drain the nodes of `parts` — (part id, repair action or None) — on `rack`; print each
    node's outcome, record the drains; returns the Containment."""
    mttr = mttr or load_mttr_model()
    topology = topology_for(rack)
    scopes = [nodes_of_part(rack, part, topology, mttr, action) for part, action in parts]
    incidents = open_incidents(db, [scope.part for scope in scopes]) if record else {}
    containment = drain_parts([(scope, incidents.get(scope.part)) for scope in scopes], dry_run)
    report(ctx, containment, rack, record, db, to_stderr)
    return containment


def report(ctx: click.Context, containment: Containment, rack: Rack, record: bool, db: str | None,
           to_stderr: bool = False) -> None:
    """Print what happened to each node (and the commands), record it unless a dry run."""
    out = Console(stderr=True, highlight=False, soft_wrap=True) if to_stderr else console()
    verb = "would run" if containment.dry_run else "ran"
    if containment.unchecked:
        out.print(f"could not check current drains ({containment.unchecked}): the commands below assume no node is "
                  f"drained yet; run for real, a node someone else drained is left as it is", soft_wrap=True, markup=False)
    for argv in containment.commands:
        out.print(f"{verb}: {shown(argv)}", soft_wrap=True, markup=False)
    for node in containment.nodes:
        out.print(f"{node.node}: {node.detail}", soft_wrap=True, markup=False)
    left = [n.node for n in containment.nodes if n.outcome == LEFT]
    if left:
        out.print(f"{len(left)} node(s) left as someone else set them: {', '.join(left)}", soft_wrap=True, markup=False)
    if record and not containment.dry_run and any(n.added or n.released for n in containment.nodes):
        try:
            with open_ledger(db) as ledger:
                record_containment(containment, rack.name, who(), ledger, parts=parts_for(ctx))
        except OpsctlError as error:
            click.echo(f"opsctl: warning: the {containment.verb} is done but not recorded in the ledger ({error})",
                       err=True)


@click.command("drain")
@click.argument("target", metavar="PART|RACK")
@inventory_option
@click.option("--action", metavar="NAME", help="The repair action the reason names (a name in the repair model, "
              "opsctl/data/mttr.yaml; default: the model's for this kind of part). It decides which nodes go out.")
@click.option("--incident", metavar="KEY", help="The incident the reason names (default: the part's open incident "
              "in the ledger, if any).")
@mttr_config_option
@dry_run_option
@recording_options
@json_option
@click.pass_context
def command(ctx: click.Context, target: str, action: str | None, incident: str | None, mttr_config: str | None,
            dry_run: bool, record: bool, db: str | None, as_json: bool) -> int:
    """Drain the Slurm nodes PART's repair takes out of service (a GPU or compute-tray part: its
    tray's node; a switch tray, cartridge or the RACK: every compute tray of the rack). A node
    someone else drained is left drained, and said. Exit 0 when every node is out of service,
    3 when slurmctld could not be asked or told."""
    rack, target = rack_and_target(ctx, target)
    mttr = load_mttr_model(mttr_config)
    scope = nodes_of_part(rack, target, topology_for(rack), mttr, action)
    if incident is None and record:
        incident = open_incidents(db, [scope.part]).get(scope.part)
    containment = drain_parts([(scope, incident)], dry_run)
    if as_json:
        print_json(containment.to_dict())
    report(ctx, containment, rack, record, db, to_stderr=as_json)
    return 0


