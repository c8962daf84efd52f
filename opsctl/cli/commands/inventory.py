"""`opsctl inventory list|show RACK`: what racks the inventory holds and how opsctl reaches them."""

import click
from rich.table import Table

from opsctl.cli.context import inventory_from, inventory_option, rack_argument, rack_from
from opsctl.cli.output import console, json_option, print_json


def rack_summary(rack):
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
def command():
    """Racks and trays of the inventory."""


@command.command("list")
@inventory_option
@json_option
@click.pass_context
def list_racks(ctx, as_json):
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
def show_rack(ctx, rack, as_json):
    """Show one rack's trays and how opsctl reaches them."""
    rack = rack_from(ctx, rack)
    trays = [
        {"tray": t.name, "id": rack.model.tray_id(rack.name, t.name), "host": t.host, "address": t.address,
         "port": t.port, "user": t.user, "switch_tray": t.is_switch}
        for t in rack.trays
    ]
    if as_json:
        print_json({**rack_summary(rack), "description": rack.model.description, "tray_list": trays})
        return
    out = console()
    out.print(f"[bold]{rack.name}[/bold]: {rack.model.description}")
    out.print(f"transport {rack.transport}, backend {rack.backend}" + (f", scenario {rack.scenario}" if rack.scenario else ""))
    if rack.missing_trays:
        out.print(f"[yellow]not in the inventory: {', '.join(rack.missing_trays)}[/yellow]")
    table = Table()
    for column in ("tray", "host", "address", "port", "user"):
        table.add_column(column)
    for t in trays:
        table.add_row(t["id"], t["host"], t["address"], str(t["port"]), t["user"] or "-")
    out.print(table)
