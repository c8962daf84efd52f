"""`opsctl localize SNAPSHOT.json [SNAPSHOT.json ...] [--json]`: the faulty parts behind link-health
snapshots (docs/triage.md), for one rack or a fleet in one call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from opsctl.cli.context import inventory_from, inventory_option
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from opsctl.localize import localize_files
from opsctl.localize.render import render_summary
from opsctl.mttr import load_mttr_model
from opsctl.regular_files import InputFile

mttr_config_option = click.option(
    "--mttr-config", type=InputFile(),
    help="Repair model to lay over opsctl/data/mttr.yaml (default: $OPSCTL_MTTR_CONFIG).")


def exit_code(document: dict[str, Any]) -> int:
    """opsctl's exit codes: 1 when any rack has a suspect; 3 when nothing was found but something
    went unread."""
    racks = document["racks"]
    if any(r["suspects"] for r in racks):
        return EXIT_FAILED
    if any(r["status"] == "incomplete" for r in racks):
        return EXIT_INCOMPLETE
    return EXIT_OK


def inventory_racks(ctx: click.Context) -> dict[str, tuple[str, Path | None]]:
    """rack name -> (model, cabling map) for the racks the inventory holds (custom cabling maps)."""
    return {name: (rack.model.name, rack.cabling_map) for name, rack in inventory_from(ctx).racks.items()}


@click.command("localize")
@inventory_option
@click.argument("snapshots", nargs=-1, required=True, type=InputFile())
@json_option
@mttr_config_option
@click.pass_context
def command(ctx: click.Context, snapshots: tuple[str, ...], as_json: bool, mttr_config: str | None) -> int:
    """Name the faulty parts behind link-health snapshots (a file may hold a list of them)."""
    document = localize_files(snapshots, inventory_racks(ctx), load_mttr_model(mttr_config))
    if as_json:
        print_json(document)
    else:
        out = console()
        for result in document["racks"]:
            render_summary(result, out)
    return exit_code(document)
