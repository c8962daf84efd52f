"""`opsctl repair open|close|list`: who repaired which part, with what action, what went in,
the RMA ids, and when the rack was back in service — the ledger's measure of MTTR."""

from __future__ import annotations

import getpass
from datetime import datetime

import click
from rich.table import Table

from opsctl.cli.commands.drain import rack_and_target
from opsctl.cli.commands.resume import resume_part
from opsctl.cli.ledger_options import TIME, db_option, parts_for
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import EXIT_FAILED, EXIT_INCOMPLETE
from opsctl.ledger import close_repair, open_ledger, open_repair
from opsctl.ledger.drains import drains_of_incident, validation_of
from opsctl.ledger.repairs import NEW_INCIDENT, restore_hours


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


by_option = click.option("--by", default=_user, show_default="you", help="Who does it.")


@click.group("repair")
def command() -> None:
    """Repairs of racks' parts, recorded in the ledger (opsctl ledger)."""


@command.command("open")
@click.argument("part")
@click.option("--action", metavar="NAME",
              help="An action of the repair model (opsctl/data/mttr.yaml: reset_gpu, replace_compute_tray, "
                   "reseat_switch_tray, replace_cartridge, …; default: its first action for this kind of part).")
@by_option
@click.option("--at", type=TIME, help="When the repair started (default: now).")
@click.option("--details", help="Free text: what was seen, what is planned.")
@click.option("--incident", metavar=f"KEY|{NEW_INCIDENT}",
              help="The incident it repairs (default: the latest open incident of PART, of a part it holds or of "
                   "one that holds it; else it opens one; 'new' always opens one).")
@db_option
@json_option
@click.pass_context
def open_command(ctx: click.Context, part: str, action: str | None, by: str, at: datetime | None, details: str | None,
                 incident: str | None, db: str | None, as_json: bool) -> None:
    """Open a repair of PART (a component id: rack07/ct03, rack07/st3/sw1, rack07/cart2, …)."""
    with open_ledger(db) as ledger:
        repair = open_repair(part, ledger, action=action, by=by, at=at, details=details, incident=incident,
                             parts=parts_for(ctx))
    if as_json:
        print_json(repair)
        return
    repaired = repair["incident"]
    if repair["incident_opened"]:
        fixes = (f"no open incident of {repair['part']} or of a part it holds or that holds it, so it opens "
                 f"incident {repaired['key']} for {repair['part']}")
    else:
        fixes = (f"it repairs incident {repaired['key']}: {repaired['part']} ({repaired['kind']}) "
                 f"since {repaired['occurred_at']}")
    console().print(f"repair {repair['key']} opened: {repair['part']} ({repair['kind']}), {repair['action']}, "
                    f"{repair['gpus_idled']} GPUs out of service; {fixes}", soft_wrap=True)


@command.command("close")
@click.argument("part")
@by_option
@click.option("--at", type=TIME, help="When the repair was done (default: now).")
@click.option("--back-in-service", type=TIME, help="When the rack took work again (default: --at).")
@click.option("--replaced", help="What went in: serial numbers, the new part, or 'reseated'.")
@click.option("--rma", "rma_ids", multiple=True, help="An RMA id (repeat for more).")
@click.option("--details", help="Free text, added to the repair's details.")
@click.option("--resume", "resume_nodes", is_flag=True,
              help="Resume in Slurm the nodes opsctl drained for PART, if the rack's latest burn-in or acceptance "
                   "since the repair opened no longer fails it (opsctl resume; docs/slurm.md).")
@db_option
@json_option
@click.pass_context
def close_command(ctx: click.Context, part: str, by: str, at: datetime | None, back_in_service: datetime | None,
                  replaced: str | None, rma_ids: tuple[str, ...], details: str | None, resume_nodes: bool, db: str | None,
                  as_json: bool) -> None:
    """Close the open repair of PART. With --resume, only once it is validated: a refused resume
    closes nothing (exit 1 when a run since still fails the part, 3 when none has judged it)."""
    if resume_nodes:  # refused before anything is recorded: the part is not back in service
        with open_ledger(db, read_only=True) as ledger:
            still_open = ledger.records("repairs", "part = :part AND closed_at IS NULL", {"part": part})
            checked, said = validation_of(ledger, still_open[0]) if still_open else (None, "")
        if still_open and not checked:
            click.echo(f"opsctl: not resuming {part}'s nodes: {said}; the repair stays open and its nodes drained "
                       f"(validate it: opsctl burnin {part.split('/')[0]}; or close it without --resume)", err=True)
            ctx.exit(EXIT_INCOMPLETE if said.startswith("no complete") else EXIT_FAILED)
    with open_ledger(db) as ledger:
        repair = close_repair(part, ledger, by=by, at=at, back_in_service=back_in_service, replaced=replaced,
                              rma_ids=rma_ids, details=details)
        incidents = ledger.records("incidents", "key = :key", {"key": repair["incident_key"]})
        validated, why = validation_of(ledger, repair) if resume_nodes else (None, None)
    if resume_nodes:
        click.echo(f"opsctl: {'resuming' if validated else 'not resuming'} {repair['part']}'s nodes: {why}", err=True)
        if validated:
            rack, target = rack_and_target(ctx, repair["part"])
            resume_part(ctx, rack, target, db=db, to_stderr=True)
    with open_ledger(db, read_only=True) as ledger:  # after the resume: it closed the drains it released
        drained = drains_of_incident(ledger, repair["incident_key"])
    hours = restore_hours(repair, {i["key"]: i for i in incidents})
    assert hours is not None  # a closed repair has its end
    if as_json:
        print_json({**repair, "restore_hours": round(hours, 2), "drains": [e.to_dict() for e in drained]})
        return
    out = console()
    out.print(f"repair {repair['key']} closed: {repair['part']} back in service {repair['back_in_service_at']}, "
              f"{hours:.1f} h from the failure")
    for episode in drained:  # the scheduler's own view of the same incident
        held = (f"resumed {episode.resumed_at}, {episode.hours:.2f} h out of service" if not episode.open
                else f"still drained, {episode.hours:.2f} h so far")
        out.print(f"Slurm: {episode.nodes_text()} drained for {episode.part} ({episode.action}) "
                  f"{episode.drained_at}, {held}", soft_wrap=True, markup=False)


@command.command("list")
@click.option("--open", "only_open", is_flag=True, help="Only repairs not closed yet.")
@click.option("--rack", help="Only this rack.")
@db_option
@json_option
def list_command(only_open: bool, rack: str | None, db: str | None, as_json: bool) -> None:
    """List repairs, newest first."""
    where: list[str] = []
    params: dict[str, str] = {}
    if only_open:
        where.append("closed_at IS NULL")
    if rack:
        where.append("rack = :rack")
        params["rack"] = rack
    with open_ledger(db, read_only=True) as ledger:
        repairs = ledger.records("repairs", " AND ".join(where), params, order="opened_at DESC, key")
        url = ledger.url
    if as_json:
        print_json({"ledger": url, "repairs": repairs})
        return
    table = Table(title=f"repairs in {url}")
    for column in ("part", "action", "opened", "by", "back in service", "replaced", "RMA"):
        table.add_column(column)
    for r in repairs:
        table.add_row(r["part"], r["action"], r["opened_at"], r["opened_by"], r["back_in_service_at"] or "open",
                      r["replaced"] or "-", ", ".join(r["rma_ids"]) or "-")
    console().print(table)
