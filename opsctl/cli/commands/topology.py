"""`opsctl topology show RACK [--json]`: the rack's components, links and physical paths."""

from __future__ import annotations

from collections.abc import Sequence

import click
from rich.table import Table

from opsctl.backend import topology_for
from opsctl.cli.context import rack_argument, rack_from
from opsctl.cli.output import console, json_option, print_json


@click.group("topology")
def command() -> None:
    """The rack as a graph of parts and NVLink links."""


@command.command("show")
@rack_argument
@json_option
@click.option("--part", help="Show one component and the links through it.")
@click.pass_context
def show(ctx: click.Context, rack: str, as_json: bool, part: str | None) -> None:
    """Show the rack's components and links (their JSON with --json: docs/topology.md)."""
    topology = topology_for(rack_from(ctx, rack))
    if part:
        component = topology.components.get(part) or topology.components.get(f"{topology.rack}/{part}")
        if component is None:
            raise click.BadParameter(f"no component {part!r} in {topology.rack}", param_hint="--part")
        if as_json:
            print_json({"id": component.id, "kind": component.kind, "tray": component.tray, "links": component.links})
            return
        out = console()
        out.print(f"[bold]{component.id}[/bold] ({component.kind}): {len(component.links)} link(s)")
        for link_id in component.links:
            link = topology.links[link_id]
            out.print(f"  {link.id} → {link.switch} port {link.switch_port}  via {' · '.join(_short(link.path))}")
        return
    if as_json:
        print_json(topology.to_json())
        return
    out = console()
    out.print(f"[bold]{topology.rack}[/bold]: {topology.model.description}")
    out.print(f"cabling map {topology.cabling_map_path}")
    table = Table(title="components")
    table.add_column("kind")
    table.add_column("count", justify="right")
    table.add_column("links through each", justify="right")
    table.add_column("example")
    for kind, count in topology.counts().items():
        examples = topology.of_kind(kind)
        sizes = sorted({len(c.links) for c in examples})
        table.add_row(kind, str(count), "–".join(map(str, (sizes[0], sizes[-1]))) if len(sizes) > 1 else str(sizes[0]), examples[0].id)
    out.print(table)
    sample = next(iter(topology.links.values()))
    out.print(f"a link's path: {sample.id} → {' → '.join(sample.path)} → {sample.switch} port {sample.switch_port}")
    out.print("opsctl topology show RACK --part ID lists the links through one part; --json gives all of it.")


def _short(path: Sequence[str]) -> list[str]:
    # Cables are four a link; name their cartridge once instead.
    return [p for p in path if "/cart" not in p or p.count("/") == 1]
