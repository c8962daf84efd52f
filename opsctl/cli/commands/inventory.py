"""`opsctl inventory list|show RACK`: what racks the inventory holds and how opsctl reaches them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from opsctl.cli.context import inventory_from, inventory_option, rack_argument, rack_from
from opsctl.cli.output import console, json_option, print_json

if TYPE_CHECKING:
    from opsctl.inventory import Rack


def rack_summary(rack: Rack) -> dict[str, Any]:
    return {
        "rack": rack.name,
        "model": rack.model.name,
        "transport": rack.transport,
        "backend": rack.backend,
        "scenario": str(rack.scenario) if rack.scenario else None,
        "cabling_map": str(rack.cabling_map) if rack.cabling_map else None,
        "trays": len(rack.trays),
        "missing_trays": rack.missing_trays,
    }


@click.group("inventory")
def command() -> None:
    """Racks and trays of the inventory."""


@command.command("list")
@inventory_option
@json_option
@click.pass_context
def list_racks(ctx: click.Context, as_json: bool) -> None:
    """List the racks."""
    inventory = inventory_from(ctx)
    racks = [rack_summary(r) for r in inventory.racks.values()]
    if as_json:
        print_json({"inventory": str(inventory.source), "racks": racks})
        return
    table = Table(title=f"racks in {inventory.source}")
    for column in ("rack", "model", "transport", "backend", "trays", "missing"):
        table.add_column(column)
    for r in racks:
        table.add_row(r["rack"], r["model"], r["transport"], r["backend"], str(r["trays"]), ", ".join(r["missing_trays"]) or "-")
    console().print(table)


@command.command("show")
@rack_argument
@json_option
@click.pass_context
def show_rack(ctx: click.Context, rack: str, as_json: bool) -> None:
    """Show one rack's trays and how opsctl reaches them."""
    chosen = rack_from(ctx, rack)
    trays: list[dict[str, Any]] = [
        {"tray": t.name, "id": chosen.model.tray_id(chosen.name, t.name), "host": t.host, "address": t.address,
         "port": t.port, "user": t.user, "switch_tray": t.is_switch}
        for t in chosen.trays
    ]
    if as_json:
        print_json({**rack_summary(chosen), "description": chosen.model.description, "tray_list": trays})
        return
    out = console()
    out.print(f"[bold]{chosen.name}[/bold]: {chosen.model.description}")
    out.print(f"transport {chosen.transport}, backend {chosen.backend}" + (f", scenario {chosen.scenario}" if chosen.scenario else ""))
    if chosen.missing_trays:
        out.print(f"[yellow]not in the inventory: {', '.join(chosen.missing_trays)}[/yellow]")
    table = Table()
    for column in ("tray", "host", "address", "port", "user"):
        table.add_column(column)
    for t in trays:
        table.add_row(t["id"], t["host"], t["address"], str(t["port"] or "-"), t["user"] or "-")  # -: ssh_config's, else the default
    out.print(table)
