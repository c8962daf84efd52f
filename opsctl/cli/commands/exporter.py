"""`opsctl exporter`: Prometheus metrics of a tray's GPUs, or of every GPU of a simulated rack;
`opsctl exporter rules`: the alert rules with runbook links for your site.

This command builds what reads the hardware — pynvml on a tray of real GPUs, the simulator
(one SimNvml per tray over one simulated rack) for a `sim` rack — and hands it to exporters/,
which cannot tell them apart.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from exporters.alert_rules import rule_file_texts
from exporters.server import Exporter
from exporters.tray_poller import TrayPoller
from opsctl.backend import sim_spec_for, topology_for, tray_nvml_for
from opsctl.cli.context import inventory_from, inventory_option, rack_from
from opsctl.cli.output import json_option, print_json
from opsctl.errors import InputError
from opsctl.input_checks import seconds
from opsctl.regular_files import InputFile, OutputFolder, check_replaceable
from opsctl.runs.atomic_file import write_bytes_atomic

if TYPE_CHECKING:
    from opsctl.inventory import Rack
    from opsctl.rack_models import RackModel
    from opsctl.topology.graph import Topology


@click.group("exporter", invoke_without_command=True)
@inventory_option
@click.option("--rack", help="A rack of the inventory. Simulated: serve all its GPUs. Real GPUs: this host is one of its trays.")
@click.option("--tray", help="The tray to serve (default for real GPUs: the inventory host named like this host).")
@click.option("--listen", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=9400, show_default=True, help="Port; 0 takes a free one (printed at start).")
@click.option("--interval", type=seconds(0.1, min_open=False), default=10.0, show_default=True, help="Seconds between two reads of a GPU.")
@click.option("--stale-after", type=seconds(0.1, min_open=False), help="A GPU whose latest reading is older is shown stale, not up [default: 3 × interval].")
@click.option("--burnin-result", type=InputFile(dir_okay=True), help="The tray probe's run document, or a directory of them (docs/probe-output.md).")
@json_option
@click.pass_context
def command(ctx: click.Context, rack: str | None, tray: str | None, listen: str, port: int, interval: float,
            stale_after: float | None, burnin_result: str | None, as_json: bool) -> int | None:
    """Serve Prometheus metrics of this tray's GPUs (or of a simulated rack) on /metrics."""
    if ctx.invoked_subcommand is not None:
        return None
    if stale_after is not None and stale_after <= interval:
        raise InputError(f"--stale-after ({stale_after} s) must be longer than --interval ({interval} s): "
                         "every GPU would show stale between two reads")
    chosen, trays = _rack_and_trays(ctx, rack, tray)
    pollers, backend = pollers_for(chosen, trays, interval, stale_after)
    exporter = Exporter(pollers, listen=listen, port=port, burnin_path=burnin_result, refresh_s=interval)
    _log_to_stderr()
    try:
        exporter.start()
    except OSError as error:
        raise InputError(f"cannot listen on {listen} port {port}: {error.strerror or error}") from None
    shown_host = f"[{listen}]" if ":" in listen else listen
    document = {
        "url": f"http://{shown_host}:{exporter.port}/metrics",
        "listen": listen,
        "port": exporter.port,
        "rack": chosen.name,
        "backend": backend,
        "trays": [p.tray for p in pollers],
        "down_trays": {p.tray: p.down_reason for p in pollers if p.down_reason},
        "interval_s": interval,
        "stale_after_s": pollers[0].stale_after_s,
        "burnin_result": burnin_result,
    }
    if as_json:
        print_json(document)
    else:
        click.echo(f"opsctl exporter: {chosen.name} ({backend}, {len(pollers)} tray(s)) on {document['url']}; Ctrl-C stops")
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, lambda *_: exporter.stop())
    try:
        while not exporter.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass  # stopping an exporter is its normal end
    finally:
        exporter.stop()
    return 0


@command.command("rules")
@click.option("-o", "--output", "directory", required=True, type=OutputFolder(), help="Directory to write the rule files into.")
@click.option("--runbook-base", help="Where runbooks/ lives for your operators, e.g. https://git.example.com/ops/opsctl/blob/main.")
@json_option
def rules(directory: str, runbook_base: str | None, as_json: bool) -> None:
    """Write the alert rule files, with runbook links under --runbook-base."""
    written: list[Path] = []
    texts = rule_file_texts(runbook_base)
    for name, _ in texts:  # a device or a FIFO named like a rule file: refused before any is written
        check_replaceable(Path(directory) / name)
    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for name, text in texts:  # each replaced whole, or left as it was
            write_bytes_atomic(Path(directory) / name, text.encode("utf-8"), make_folders=False)
            written.append(Path(directory) / name)
    except OSError as error:
        raise InputError(f"cannot write rule files into {directory}: {error.strerror or error}") from None
    if as_json:
        print_json({"directory": directory, "runbook_base": runbook_base, "files": [str(p) for p in written]})
    else:
        for path in written:
            click.echo(str(path))


def _rack_and_trays(ctx: click.Context, rack_name: str | None, tray: str | None) -> tuple[Rack, list[str]]:
    """The rack and the compute trays to serve."""
    if rack_name:
        rack = rack_from(ctx, rack_name)
    else:
        rack, tray = _this_host(ctx, tray)
    gpu_trays = rack.model.compute_tray_names()
    if tray is not None and tray not in gpu_trays:
        raise InputError(f"tray {tray!r} of {rack.name} holds no GPUs (compute trays: {gpu_trays[0]} … {gpu_trays[-1]})")
    if rack.backend == "sim":
        return rack, [tray] if tray else gpu_trays
    if tray is None:
        tray = _this_host(ctx, None, rack)[1]
    return rack, [tray]


def _this_host(ctx: click.Context, tray: str | None, only_rack: Rack | None = None) -> tuple[Rack, str]:
    """The rack and tray whose inventory host is this machine."""
    names = {socket.gethostname(), socket.gethostname().split(".")[0], socket.getfqdn()}
    inventory = inventory_from(ctx)
    racks = [only_rack] if only_rack else inventory.racks.values()
    for rack in racks:
        for candidate in rack.trays:
            if (candidate.host in names or candidate.address in names) and (tray is None or candidate.name == tray):
                return rack, candidate.name
    where = f"rack {only_rack.name}" if only_rack else "any rack"
    raise InputError(f"this host ({socket.gethostname()}) is not a tray of {where} in {inventory.source}; "
                     "say --rack RACK --tray TRAY (`--rack rack07` serves the built-in simulated rack)")


def pollers_for(rack: Rack, trays: Sequence[str], interval: float = 10.0,
                stale_after: float | None = None) -> tuple[list[TrayPoller], str]:
    """The TrayPollers of `trays` of `rack`, over what reads each tray's GPUs (opsctl.backend
    chooses: the simulator or pynvml); and which of the two."""
    topology = topology_for(rack)
    expected = rack.model.gpus_per_tray
    switches = _switch_chips(rack, topology)
    readers, backend = tray_nvml_for(rack, trays, sim_spec_for(rack, topology))
    chips = host_nvswitch_chips(rack.name, rack.model)
    pollers = [TrayPoller(rack.name, tray, nvml, interval, stale_after, expected, switches.get(tray), down_reason=down,
                          kernel_history=history, nvswitch_chips=chips)
               for tray, (nvml, down, history) in readers.items()]
    return pollers, backend


def host_nvswitch_chips(rack_name: str, model: RackModel) -> list[str] | None:
    """The NVSwitch chips whose SXids the host's kernel log holds, nvidia-nvswitchN's id at index
    N (HGX: the baseboard's nvs0 … nvs3); None on NVL72, whose switches are in switch trays."""
    if model.is_nvl72:
        return None
    return [model.switch_chip_id(rack_name, index) for index in range(model.switch_chips)]


def _switch_chips(rack: Rack, topology: Topology) -> dict[str, dict[tuple[int, int], str]]:
    """tray -> {(gpu index on the tray, port): switch chip id} from the rack's cabling."""
    model = rack.model
    chips: dict[str, dict[tuple[int, int], str]] = {}
    for rack_index in range(model.gpus):
        tray = model.gpu_tray(rack_index)
        local = rack_index % model.gpus_per_tray
        for port in range(model.nvlink_ports):
            link = topology.link_for(model.gpu_id(rack.name, rack_index), port)
            chips.setdefault(tray, {})[(local, port)] = link.switch
    return chips


def _log_to_stderr() -> None:
    logger = logging.getLogger("opsctl.exporter")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("opsctl exporter: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
