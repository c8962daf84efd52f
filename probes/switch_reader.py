"""Reading an NVL72 switch tray: the port counters of its NVLink switch chips, which are the
far ends of the GPUs' links ("side": "switch" in the probe documents).

Real switch trays run NVOS, not NVML, so there is nothing on them this probe can read: the
nvml backend says so ("not available") instead of inventing a reading. In simulation the
switch tray's ports come from the simulated rack (probes/sim/switch.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probes.counters import SNAPSHOT_COUNTERS, counter_deltas

if TYPE_CHECKING:
    from probes.sim.switch import SimSwitchTray

NVOS_REASON = ("switch trays run NVOS, not NVML: their port counters are read through NVOS/NMX "
               "telemetry, which this probe does not speak; the GPU end of every link is read on the compute trays")


class SimSwitchReader:
    supported = True
    reason: str | None = None

    def __init__(self, switch_tray: SimSwitchTray) -> None:
        self.switch_tray = switch_tray

    def read(self) -> dict[str, Any]:
        return {"time": self.switch_tray.rack.now(), "ports": self.switch_tray.read_ports()}


class NvosSwitchReader:
    """A real switch tray: not readable from here (see NVOS_REASON)."""

    supported = False
    reason = NVOS_REASON

    def read(self) -> dict[str, Any]:
        raise NotImplementedError(NVOS_REASON)


def port_window(before: dict[str, Any], after: dict[str, Any], window_s: float) -> dict[str, Any]:
    """One switch port over a window, in the shape of the GPU side's link rows; with the
    firmware of its chip when the reader reports one (the simulator does)."""
    deltas = counter_deltas(before["counters"], after["counters"])
    row = {
        "side": "switch",
        "chip": after["chip"],
        "switch_port": after["switch_port"],
        "link": after["link"],
        "peer_gpu": after["gpu"],
        "peer_port": after["gpu_port"],
        "state": "down" if "down" in (before["state"], after["state"]) else after["state"],
        "deltas": deltas,
        "rates_per_s": {name: round(value / window_s, 6) for name, value in deltas.items()} if window_s > 0 else {},
        "effective_ber": after["effective_ber"],
    }
    if after.get("firmware"):
        row["firmware"] = after["firmware"]
    return row


def switch_window(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Every port of the tray over the window between two `read()`s."""
    window_s = max(after["time"] - before["time"], 0.0)
    by_key = {(p["chip"], p["switch_port"]): p for p in before["ports"]}
    return [port_window(by_key[(p["chip"], p["switch_port"])], p, window_s)
            for p in after["ports"] if (p["chip"], p["switch_port"]) in by_key]


def snapshot_port(row: dict[str, Any]) -> dict[str, Any]:
    """A `port_window` as a row of the snapshot document."""
    found = {key: row[key] for key in ("side", "chip", "switch_port", "link", "peer_gpu", "peer_port", "state")}
    for name, source in SNAPSHOT_COUNTERS.items():
        if source in row["deltas"]:
            found[name] = row["deltas"][source]
    return found
