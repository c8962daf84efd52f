"""Snapshots of simulated racks taken in-process, for the benchmarks and tests of localization (not shipped: opsctl itself never needs them).

Every tray is read by the tray's own code — probes.snapshot.take_snapshot over SimNvml on a
compute tray, take_switch_snapshot over the simulated switch tray's ports on a switch tray —
all over the same window of simulated time, as the fan-out reads real trays in parallel; the
result is assembled into the rack's snapshot exactly as `opsctl snapshot` does. Only the
process boundary is skipped, so a benchmark can take thousands of snapshots.

A tray's snapshot is a deterministic function of the part of the spec it sees, the seed, the
noise and the window, so `TraySnapshotCache` reuses it when all of those are the same (a fault
on one link leaves most trays' readings untouched).
"""

import dataclasses
import json

from opsctl.localize.snapshot import assemble_snapshot
from opsctl.rack_models import model_named
from probes.sim import SimNvml, SimRack
from probes.sim.clock import ManualClock
from probes.sim.switch import SimSwitchTray
from probes.snapshot import take_snapshot, take_switch_snapshot
from probes.switch_reader import SimSwitchReader

UNREACHABLE = "unreachable: the tray did not answer (simulated)"


class TraySnapshotCache(dict):
    """key -> a tray's probe document."""


def _read_compute_tray(spec, tray, window_s):
    clock = ManualClock()
    rack = SimRack(dataclasses.replace(spec, trays=[tray]), clock=clock)  # this tray alone: same readings, less to build
    nvml = SimNvml(rack, tray.name)
    nvml.nvmlInit()
    try:
        return take_snapshot(nvml, window_s, clock=clock, tray=tray.name)
    finally:
        nvml.nvmlShutdown()


def _read_switch_tray(spec, tray, window_s):
    clock = ManualClock()
    rack = SimRack(spec, clock=clock)  # its ports are the far ends of links from every compute tray
    return take_switch_snapshot(SimSwitchReader(SimSwitchTray(rack, tray.name)), window_s, clock=clock, tray=tray.name)


def _what_a_tray_sees(spec, tray):
    """The part of the spec a tray's readings depend on."""
    if tray.gpus:
        return dataclasses.asdict(tray)
    prefix = f"{spec.rack}/{tray.name}/"
    return [[gpu.id, dataclasses.asdict(link)] for t in spec.trays for gpu in t.gpus for link in gpu.links
            if link.remote_switch.startswith(prefix)]


def simulated_snapshot(spec, window_s, cache=None):
    """The snapshot of the simulated rack `spec` (a RackSpec) over `window_s` seconds."""
    model = model_named(spec.model)
    documents, failures = {}, {}
    for tray in spec.trays:
        if tray.unreachable:
            failures[tray.name] = UNREACHABLE
            continue
        read = _read_compute_tray if tray.gpus else _read_switch_tray
        key = None
        if cache is not None:
            key = json.dumps([_what_a_tray_sees(spec, tray), spec.seed, spec.noise, spec.sku, window_s], sort_keys=True)
            if key in cache:
                documents[tray.name] = cache[key]
                continue
        documents[tray.name] = read(spec, tray, window_s)
        if key is not None:
            cache[key] = documents[tray.name]
    return assemble_snapshot(spec.rack, model, window_s, documents, failures)
