"""`opsctl sim …`: look inside a simulated rack — its faults and the spec its trays run on."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from opsctl.backend import sim_spec_for
from opsctl.cli.commands.snapshot import write_atomically
from opsctl.cli.context import rack_argument, rack_from
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import InputError
from opsctl.regular_files import OutputFile

if TYPE_CHECKING:
    from opsctl.backend import RackSpec
    from opsctl.inventory import Rack


def _sim_rack(ctx: click.Context, name: str) -> tuple[Rack, RackSpec]:
    rack = rack_from(ctx, name)
    if rack.backend != "sim":
        raise InputError(f"rack {rack.name} reads real GPUs (opsctl_backend: {rack.backend}), not the simulator")
    spec = sim_spec_for(rack)
    assert spec is not None  # a rack whose backend is sim always has one
    return rack, spec


def injected_faults(spec: RackSpec) -> list[dict[str, Any]]:
    """Every effect in the spec, grouped by the scenario fault it came from."""
    rows: dict[str, dict[str, Any]] = {}
    for tray in spec.trays:
        if tray.unreachable:
            rows.setdefault(f"tray {tray.name}", {"source": "tray_unreachable", "effects": []})["effects"].append(
                {"target": f"{spec.rack}/{tray.name}", "kind": "unreachable", "params": {}})
        for gpu in tray.gpus:
            for effect in gpu.effects:
                rows.setdefault(effect.source, {"source": effect.source, "effects": []})["effects"].append(
                    {"target": gpu.id, "kind": effect.kind, "params": effect.params})
            for link in gpu.links:
                for effect in link.effects:
                    rows.setdefault(effect.source, {"source": effect.source, "effects": []})["effects"].append(
                        {"target": f"{gpu.id}/nvl{link.port:02d}", "kind": effect.kind, "params": effect.params})
    return sorted(rows.values(), key=lambda group: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", group["source"])])


@click.group("sim")
def command() -> None:
    """Inspect the simulated racks (opsctl_backend: sim)."""


@command.command("faults")
@rack_argument
@json_option
@click.pass_context
def faults(ctx: click.Context, rack: str, as_json: bool) -> None:
    """List the faults injected into a simulated rack, resolved to GPUs and links."""
    chosen, spec = _sim_rack(ctx, rack)
    groups = injected_faults(spec)
    if as_json:
        print_json({"rack": chosen.name, "scenario": str(chosen.scenario) if chosen.scenario else None,
                    "seed": spec.seed, "noise": spec.noise, "faults": groups})
        return
    out = console()
    out.print(f"[bold]{chosen.name}[/bold] scenario {chosen.scenario or '(healthy)'} seed {spec.seed}")
    table = Table()
    for column in ("fault", "effect", "on", "parameters"):
        table.add_column(column)
    for group in groups:
        by_kind: dict[tuple[str, str], list[str]] = {}
        for effect in group["effects"]:
            # Downstream XIDs differ only in their moment: one row for all of them.
            shown_params = {k: v for k, v in effect["params"].items() if not (effect["kind"] == "xid" and k == "at_s")}
            by_kind.setdefault((effect["kind"], json.dumps(shown_params, sort_keys=True)), []).append(effect["target"])
        for (kind, params), targets in by_kind.items():
            shown = ", ".join(targets[:3]) + (f" and {len(targets) - 3} more" if len(targets) > 3 else "")
            table.add_row(group["source"], kind, shown, params)
    out.print(table)


@command.command("spec")
@rack_argument
@click.option("-o", "--output", type=OutputFile(writable=True), help="Write here instead of stdout.")
@click.pass_context
def spec(ctx: click.Context, rack: str, output: str | None) -> None:
    """Write the compiled simulator spec (what `python -m probes --sim-spec` reads on a tray)."""
    _, compiled = _sim_rack(ctx, rack)
    text = json.dumps(compiled.to_dict())
    if output:
        write_atomically(output, compiled.to_dict())  # /proc/x, a missing folder: one line, exit 2
    else:
        click.echo(text)
