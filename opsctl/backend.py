"""Where a command builds its view of the hardware from the inventory — the one place that
tells simulator from real GPUs apart on the operator's side.

For a `sim` rack this compiles the rack's fault scenario (or a healthy one) with its topology
into the RackSpec the tray-side simulator runs on; trays get it with the probe invocation.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, overload

from opsctl.errors import InputError
from opsctl.topology import build_topology

if TYPE_CHECKING:
    from opsctl.inventory import Rack
    from opsctl.topology.graph import Topology
    from probes.nvml_library import NvmlLibrary
    from probes.kernel_history import KernelLog
    from probes.sim import SimRack
    from probes.sim.spec import RackSpec  # the simulated rack: other modules name its type from here, the seam

# What reads one tray's GPUs (pynvml, or a SimNvml) or None, why the tray is down if so, and
# what reads its kernel log since the driver loaded, up to now (probes/kernel_history.py).
KernelHistory = Callable[[], "KernelLog"]  # up to now, on the rack's own clock
TrayReader = tuple["NvmlLibrary | None", str | None, KernelHistory]


def topology_for(rack: Rack) -> Topology:
    return build_topology(rack.name, rack.model, rack.cabling_map)


def sim_spec_for(rack: Rack, topology: Topology | None = None) -> RackSpec | None:
    """The compiled simulator spec of a `sim` rack; None for a rack of real GPUs."""
    if rack.backend != "sim":
        return None
    # the simulator's compiler (the scenario schema, the simulated hardware) only for a simulated rack
    from opsctl.simulation import compile_rack_spec, load_scenario
    from opsctl.simulation.scenario import healthy_scenario

    scenario = load_scenario(rack.scenario) if rack.scenario else healthy_scenario(f"{rack.name}-healthy")
    return compile_rack_spec(scenario, topology or topology_for(rack))


@overload
def on_one_timeline(spec: RackSpec) -> RackSpec: ...
@overload
def on_one_timeline(spec: None) -> None: ...
def on_one_timeline(spec: RackSpec | None) -> RackSpec | None:
    """The spec with its epoch set to now, unless it has one: the trays of one run then share
    a timeline, so a link that drops at t = 32 s drops at the same moment for the GPU tray and
    the switch tray at its two ends, however late each probe process starts."""
    if spec is None or spec.epoch is not None:
        return spec
    return dataclasses.replace(spec, epoch=time.time())


def tray_nvml_for(rack: Rack, trays: Sequence[str], spec: RackSpec | None) -> tuple[dict[str, TrayReader], str]:
    """What reads each tray's GPUs in this process (the exporter): tray -> (nvml, down reason).
    On a `sim` rack (`spec` given) one SimNvml per tray over one simulated rack, an unreachable
    tray None with its reason; on real GPUs pynvml for this host's one tray. And which backend."""
    if spec is not None:
        from probes.sim import SimNvml, SimRack

        sim_rack = SimRack(spec)
        readers: dict[str, TrayReader] = {}
        for tray in trays:
            unreachable = spec.tray(tray).unreachable
            history: KernelHistory = functools.partial(_sim_history, sim_rack, tray)
            readers[tray] = (None, "unreachable (simulated fault)", history) if unreachable else (SimNvml(sim_rack, tray), None, history)
        return readers, "sim"
    from probes.kernel_history import read_kernel_history

    return {trays[0]: (_real_nvml(), None, lambda: read_kernel_history(time.time()))}, "nvml"


def _sim_history(sim_rack: SimRack, tray: str) -> tuple[list[str], str | None]:
    return sim_rack.kernel_history(tray, sim_rack.clock.now())


def _real_nvml() -> NvmlLibrary:
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
