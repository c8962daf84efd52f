"""`opsctl health [TRAY] [--slurm]`: this tray judged by the rulebook from NVML alone — no load,
a counter window of a second or two — fit to be Slurm's HealthCheckProgram (docs/slurm.md).

It runs the tray probe's own NVML reading and tray judge (`python -m probes run --probes
counters`), in this process, on the backend the inventory names for the tray (real GPUs, or
the simulator). With --slurm it acts as NHC does: on a failure it drains its own node with the
failing checks as the reason; once healthy again it resumes the node — only if opsctl drained
it for this health check, never a drain someone else (or another opsctl fault) set.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from opsctl.backend import on_one_timeline, sim_spec_for
from opsctl.cli.context import inventory_from, inventory_option
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, IncompleteError, InputError

if TYPE_CHECKING:
    from opsctl.inventory import Rack, Tray

DEFAULT_WINDOW_S = 1.0


def find_tray(ctx: click.Context, wanted: str | None) -> tuple[Rack, Tray]:
    """(rack, tray) for TRAY (rack07/ct17), else the inventory tray this machine is: the Slurm
    node slurmd runs the check for ($SLURMD_NODENAME), else this host's name."""
    inventory = inventory_from(ctx)
    if wanted:
        rack_name, _, tray_name = wanted.partition("/")
        rack = inventory.rack(rack_name)
        try:
            return rack, rack.tray(tray_name)
        except KeyError:
            raise InputError(f"{wanted}: rack {rack_name} has no tray {tray_name!r} in {inventory.source}") from None
    names = {name for name in (os.environ.get("SLURMD_NODENAME"), socket.gethostname(), socket.gethostname().split(".")[0])
             if name}
    for rack in inventory.racks.values():
        for tray in rack.trays:
            if tray.slurm_node in names or tray.host in names:
                return rack, tray
    raise InputError(f"no tray of {inventory.source} is this machine ({', '.join(sorted(names))}): name it, "
                     "e.g. opsctl health rack07/ct03")


def judge_tray(rack: Rack, tray: Tray, window_s: float) -> tuple[dict[str, Any], int]:
    """The probe's run document and exit code for the tray: NVML counters alone, no load."""
    from probes.backend import BackendError, open_backend
    from probes.run import RunOptions, TrayRun

    spec = sim_spec_for(rack)
    with tempfile.TemporaryDirectory(prefix="opsctl-health-") as folder:
        spec_file = None
        if spec is not None:
            spec_file = Path(folder) / "sim-spec.json"
            spec_file.write_text(json.dumps(on_one_timeline(spec).to_dict()))
        try:  # a reading alone (no `loads`): no compute device is opened
            backend = open_backend(rack.backend, str(spec_file) if spec_file else None, tray.name)
        except BackendError as error:
            raise (IncompleteError if error.exit_code == EXIT_INCOMPLETE else InputError)(
                f"{rack.name}/{tray.name}: {error}") from None
        try:
            return TrayRun(backend, RunOptions(duration_s=window_s, probes=("counters",))).execute()
        finally:
            backend.close()


def failing_checks(document: dict[str, Any]) -> list[dict[str, Any]]:
    every = document["checks"] + [c for gpu in document["gpus"] for c in gpu["checks"]]
    return [c for c in every if c["verdict"] in ("fail", "incomplete")]


def failed_words(failing: list[dict[str, Any]]) -> str:
    """What failed, for the drain reason: `gpu1:memory.remapped_rows,…` (sinfo shows the reason)."""
    return ",".join(dict.fromkeys(f"{c['component']}:{c['check']}" for c in failing)) or "incomplete"


@click.command("health")
@click.argument("tray", required=False, metavar="[RACK/TRAY]")
@inventory_option
@click.option("--window", type=click.FloatRange(min=0.1, max=60), default=DEFAULT_WINDOW_S, show_default=True,
              help="Seconds between the two NVML readings (counter deltas are judged over it).")
@click.option("--slurm", "act_on_slurm", is_flag=True,
              help="Drain this tray's Slurm node on failure (reason: what failed); resume it when healthy, "
                   "only if this health check drained it.")
@json_option
@click.pass_context
def command(ctx: click.Context, tray: str | None, window: float, act_on_slurm: bool, as_json: bool) -> None:
    """Judge this tray (or RACK/TRAY) by the rulebook from NVML alone, with no load: exit 0
    healthy, 1 a check failed, 3 the reading was incomplete (never a pass)."""
    rack, found = find_tray(ctx, tray)
    document, code = judge_tray(rack, found, window)
    failing = failing_checks(document)
    tray_id = f"{rack.name}/{found.name}"
    containment = None
    if act_on_slurm:
        from opsctl.slurm.containment import HEALTH_ACTION, drain_parts, resume_parts  # only with --slurm
        from opsctl.slurm.scope import PartScope

        if code == EXIT_OK:
            # Only this check's own hold: a repair's drain of the tray is released by its repair.
            containment = resume_parts([tray_id], [found.slurm_node], action=HEALTH_ACTION)
        else:
            scope = PartScope(tray_id, HEALTH_ACTION, (found.slurm_node,), (found.name,))
            containment = drain_parts([(scope, None)], detail=failed_words(failing))
    verdict = {EXIT_OK: "healthy", EXIT_FAILED: "unhealthy"}.get(code, "incomplete")
    if as_json:
        print_json({"tray": tray_id, "node": found.slurm_node, "verdict": verdict, "exit_code": code,
                    "seconds": document["duration_s"], "failing": failing,
                    "slurm": containment.to_dict() if containment else None})
    else:
        out = console()
        out.print(f"{tray_id} ({found.slurm_node}): {verdict} — {len(failing)} check(s) not passed, "
                  f"{document['duration_s']:.2f} s", soft_wrap=True, markup=False)
        for c in failing:
            out.print(f"  {c['verdict']:<10} {c['component']:<6} {c['check']}: {c['reason']}", soft_wrap=True,
                      markup=False)
        for node in (containment.nodes if containment else []):
            out.print(f"slurm: {node.node}: {node.detail}", soft_wrap=True, markup=False)
    ctx.exit(code)
