"""Where a command builds its view of the hardware from the inventory — the one place that
tells simulator from real GPUs apart on the operator's side.

For a `sim` rack this compiles the rack's fault scenario (or a healthy one) with its topology
into the RackSpec the tray-side simulator runs on; trays get it with the probe invocation.
"""

import dataclasses
import time

from opsctl.simulation import compile_rack_spec, load_scenario
from opsctl.simulation.scenario import healthy_scenario
from opsctl.topology import build_topology


def topology_for(rack):
    return build_topology(rack.name, rack.model, rack.cabling_map)


def sim_spec_for(rack, topology=None):
    """The compiled simulator spec of a `sim` rack; None for a rack of real GPUs."""
    if rack.backend != "sim":
        return None
    scenario = load_scenario(rack.scenario) if rack.scenario else healthy_scenario(f"{rack.name}-healthy")
    return compile_rack_spec(scenario, topology or topology_for(rack))


def on_one_timeline(spec):
    """The spec with its epoch set to now, unless it has one: the trays of one run then share
    a timeline, so a link that drops at t = 32 s drops at the same moment for the GPU tray and
    the switch tray at its two ends, however late each probe process starts."""
    if spec is None or spec.epoch is not None:
        return spec
    return dataclasses.replace(spec, epoch=time.time())
