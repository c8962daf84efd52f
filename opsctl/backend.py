"""Where a command builds its view of the hardware from the inventory — the one place that
tells simulator from real GPUs apart on the operator's side.

For a `sim` rack this compiles the rack's fault scenario (or a healthy one) with its topology
into the RackSpec the tray-side simulator runs on; trays get it with the probe invocation.
"""

import dataclasses
import time

from opsctl.errors import InputError
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


def tray_nvml_for(rack, trays, spec):
    """What reads each tray's GPUs in this process (the exporter): tray -> (nvml, down reason).
    On a `sim` rack (`spec` given) one SimNvml per tray over one simulated rack, an unreachable
    tray None with its reason; on real GPUs pynvml for this host's one tray. And which backend."""
    if spec is not None:
        from probes.sim import SimNvml, SimRack

        sim_rack = SimRack(spec)
        readers = {}
        for tray in trays:
            unreachable = spec.tray(tray).unreachable
            readers[tray] = (None, "unreachable (simulated fault)") if unreachable else (SimNvml(sim_rack, tray), None)
        return readers, "sim"
    return {trays[0]: (_real_nvml(), None)}, "nvml"


def _real_nvml():
    """pynvml, once we know its library loads (a driver that is not up yet is retried later)."""
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        raise InputError("no NVML library on this host (no NVIDIA driver); "
                         "`opsctl exporter --rack rack07` serves the built-in simulated rack") from None
    except pynvml.NVMLError:
        return pynvml  # the tray shows as down with the reason, and is retried
    pynvml.nvmlShutdown()
    return pynvml
