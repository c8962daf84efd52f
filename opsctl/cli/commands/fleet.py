"""`opsctl fleet trays|plan`: what the Ansible playbooks (ansible/) ask opsctl on the controller
— which rack and tray each inventory host is, and the probe command each tray of a fleet run
runs — so that the playbooks never re-derive what opsctl's inventory and burn-in already know."""

from __future__ import annotations

import shlex

import click
from rich.table import Table

from opsctl.cli.context import inventory_from, inventory_option
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import InputError
from opsctl.fleet.trays import chosen_racks, tray_table
from opsctl.input_checks import seconds
from opsctl.regular_files import InputFile, OutputFolder

racks_option = click.option("--racks", default="all", show_default=True,
                            help="Comma-separated racks of the inventory, or all.")


@click.group("fleet")
def command() -> None:
    """Plan fleet runs that Ansible carries out (ansible/burnin.yml); judge them with `opsctl report`."""


@command.command("trays")
@inventory_option
@racks_option
@json_option
@click.pass_context
def trays(ctx: click.Context, racks: str, as_json: bool) -> None:
    """Which rack and tray each Ansible host of the inventory is."""
    inventory = inventory_from(ctx)
    table = tray_table(chosen_racks(inventory, racks))
    if as_json:
        print_json({"inventory": str(inventory.source), "trays": table})
        return
    shown = Table(title=f"trays in {inventory.source}")
    for column in ("host", "tray", "model", "backend"):
        shown.add_column(column)
    for host, row in table.items():
        shown.add_row(host, row["id"], row["model"], row["backend"])
    console().print(shown)


@command.command("plan")
@inventory_option
@click.argument("run_dir", type=OutputFolder())
@racks_option
@click.option("--kind", type=click.Choice(["burnin", "accept"]), default="burnin", show_default=True,
              help="Judge as `opsctl burnin` or as `opsctl accept`.")
@click.option("--duration", type=seconds(),
              help="Seconds of load on each tray (default: burnin's 20, or the acceptance criteria's).")
@click.option("--run-timeout", type=seconds(1, min_open=False),
              help="Seconds before a tray's probe is given up as incomplete (default: as burnin and accept).")
@click.option("--criteria", "criteria_file", type=InputFile(),
              help="Acceptance criteria YAML, with --kind accept (default: opsctl's).")
@json_option
@click.pass_context
def plan(ctx: click.Context, run_dir: str, racks: str, kind: str, duration: float | None, run_timeout: float | None,
         criteria_file: str | None, as_json: bool) -> None:
    """Make a fleet run folder and print each tray's probe command; Ansible runs them and
    fetches the results there, and `opsctl report RUN_DIR` judges them."""
    from opsctl.cli.commands.burnin import DEFAULT_DURATION_S
    from opsctl.fleet.plan import plan_run  # burn-in's planning: imported only for this command

    if criteria_file and kind != "accept":
        raise InputError("--criteria goes with --kind accept (a burn-in is judged by opsctl's default criteria)")
    if duration is None and kind == "burnin":
        duration = DEFAULT_DURATION_S
    inventory = inventory_from(ctx)
    planned = plan_run(inventory, chosen_racks(inventory, racks), run_dir, kind, criteria_file, duration, run_timeout)
    if as_json:
        print_json(planned)
        return
    out = console()
    shown = Table(title="each tray's probe command (the tray's venv python; --json for the argv)", title_justify="left")
    for column in ("host", "tray", "command"):
        shown.add_column(column, no_wrap=column != "command", overflow="fold")
    for host, row in planned["trays"].items():
        shown.add_row(host, row["id"], "python -m probes " + shlex.join(row["argv"])
                      + (" --sim-spec SPEC" if row["sim_spec"] else ""))
    out.print(shown)
    if any(row["sim_spec"] for row in planned["trays"].values()):
        out.print("SPEC: the rack's simulator spec (RACK/sim-spec.json), copied to the tray by the playbook")
    out.print(f"planned {kind} of {len(planned['racks'])} rack(s), {len(planned['trays'])} trays, "
              f"{planned['duration_s']:g} s of load each, in {planned['run_dir']}")
    out.print(f"judge what Ansible fetches with: opsctl report {planned['run_dir']}")
