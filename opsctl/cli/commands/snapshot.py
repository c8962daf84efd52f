"""`opsctl snapshot RACK -o FILE [--window S]`: the link-health snapshot of a rack, read
from every tray at once (`python -m probes snapshot` through the fan-out)."""

from __future__ import annotations

import json
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from opsctl.cli.context import rack_argument, rack_from
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import EXIT_INCOMPLETE, EXIT_OK, InputError
from opsctl.fanout import FanoutOptions, run_on_trays
from opsctl.fanout.options import ssh_config_option
from opsctl.input_checks import MAX_CONCURRENCY, seconds
from opsctl.localize.snapshot import TRAY_UNREAD, assemble_snapshot
from opsctl.regular_files import OutputFile
from opsctl.runs.atomic_file import write_bytes_atomic

if TYPE_CHECKING:
    from collections.abc import Callable

    from click.decorators import FC

    from opsctl.fanout import TrayResult
    from opsctl.inventory import Rack

DEFAULT_WINDOW_S = 60.0
RUN_TIMEOUT_MARGIN_S = 120.0  # beyond the window: start-up, two NVML readings, the way back


def fanout_options(command: FC) -> FC:
    """How the trays are reached: shared by `opsctl snapshot` and `opsctl triage`."""
    for option in reversed([
        click.option("--window", type=seconds(), default=DEFAULT_WINDOW_S, show_default=True,
                     help="Seconds between the two readings of every counter."),
        click.option("--concurrency", type=click.IntRange(min=1, max=MAX_CONCURRENCY), default=32, show_default=True, help="Trays read at once."),
        click.option("--connect-timeout", type=seconds(0.1, min_open=False), default=10.0, show_default=True,
                     help="Seconds to reach and log in to a tray (ssh)."),
        click.option("--accept-new-host-keys", is_flag=True,
                     help="ssh: trust and record the keys of hosts not yet in known_hosts (a changed key is still refused)."),
        ssh_config_option,
    ]):
        command = option(command)
    return command


def take_rack_snapshot(rack: Rack, window_s: float, concurrency: int = 32, connect_timeout_s: float = 10.0,
                       accept_new_host_keys: bool = False, ssh_config: str | None = None,
                       on_result: Callable[[TrayResult], object] | None = None) -> dict[str, Any]:
    """Read every tray of the rack over one window; the link-health snapshot, with a `trays` entry
    for each tray saying whether it answered (and why not). `on_result` hears each tray as it ends."""
    options = FanoutOptions(concurrency=concurrency, connect_timeout_s=connect_timeout_s,
                            run_timeout_s=window_s + RUN_TIMEOUT_MARGIN_S, accept_new_host_keys=accept_new_host_keys,
                            ssh_config=ssh_config)
    taken = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    with tempfile.TemporaryDirectory(prefix="opsctl-snapshot-") as workdir:
        results = run_on_trays(rack, ["snapshot", "--window", f"{window_s:g}", "--json"], options=options, workdir=workdir,
                               on_result=on_result)
    documents = {r.tray: r.document for r in results if r.complete and r.document is not None}  # a complete one has it
    failures = {r.tray: r.reason or "no reason given" for r in results if not r.complete}  # an incomplete one says why
    for tray in rack.missing_trays:
        failures[tray] = "not in the inventory"
    return assemble_snapshot(rack.name, rack.model, window_s, documents, failures, taken)


def write_atomically(path: str | Path, document: Any) -> None:
    """Write JSON so that a reader sees the old file or the whole new one, never half (and with
    the mode open() would give it); a folder that is not there is the user's to make."""
    path = Path(path)
    try:
        write_bytes_atomic(path, json.dumps(document).encode(), make_folders=False)
    except OSError as error:
        raise InputError(f"{path}: cannot write here: {error.strerror or error}") from None


def unanswered(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in snapshot["trays"] if t["status"] == TRAY_UNREAD]


@click.command("snapshot")
@rack_argument
@click.option("-o", "--output", required=True, type=OutputFile(),
              help="Where to write the snapshot (JSON); - for stdout.")
@fanout_options
@json_option
@click.pass_context
def command(ctx: click.Context, rack: str, output: str, window: float, concurrency: int, connect_timeout: float,
            accept_new_host_keys: bool, ssh_config: str | None, as_json: bool) -> int:
    """Read every tray's NVLink counters (deltas over --window) and XIDs into one link-health
    snapshot, the input of `opsctl localize`. Exit 3 if a tray did not answer."""
    chosen = rack_from(ctx, rack)
    started = time.monotonic()
    snapshot = take_rack_snapshot(chosen, window, concurrency, connect_timeout, accept_new_host_keys, ssh_config)
    missing = unanswered(snapshot)
    if output == "-":
        print_json(snapshot)
        return EXIT_INCOMPLETE if missing else EXIT_OK
    write_atomically(output, snapshot)
    sides = {"gpu": 0, "switch": 0}
    for link in snapshot["links"]:
        sides[link.get("side", "gpu")] += 1
    summary = {"rack": chosen.name, "snapshot": str(output), "window_seconds": window, "seconds": round(time.monotonic() - started, 1),
               "links_read": sides, "gpus": len(snapshot["gpus"]), "trays": snapshot["trays"]}
    if as_json:
        print_json(summary)
    else:
        out = console()
        out.print(f"[bold]{chosen.name}[/bold]: {len(snapshot['trays']) - len(missing)} of {len(snapshot['trays'])} trays read over "
                  f"{window:g} s → {output}")
        out.print(f"links read: {sides['gpu']} at the GPU end, {sides['switch']} at the switch end; {len(snapshot['gpus'])} GPUs")
        for tray in missing:
            out.print(f"[yellow]not read[/yellow]: {tray['tray']}: {tray['error']}")
        out.print(f"next: opsctl localize {output}")
    return EXIT_INCOMPLETE if missing else EXIT_OK
