"""A simulated NVLink switch tray: its chips' ports, which are the far ends of GPU links.

A real NVL72 switch tray runs NVOS, not NVML; this is the hardware model the probes' switch
reader reads in simulation. A port sees the same link as the GPU at the other end: the same
state and the same errors over a window, with lifetime counts of its own.
"""

from __future__ import annotations

from typing import Any

from probes.sim import profiles
from probes.sim.hardware import COUNTERS, SimRack

# Counter names as the switch reader reports them (the GPU side's names).
PORT_COUNTERS = {"crc": "crc_errors", "replay": "replay_errors", "recovery": "recovery_errors", "symbol": "symbol_errors"}
# The firmware every simulated switch chip reports: fixed, as a simulated GPU's VBIOS is (nvml.py),
# unless the scenario flashed the tray with another (firmware_mismatch with switch_firmware).
CHIP_FIRMWARE = "35.2014.1204"


class SimSwitchTray:
    def __init__(self, rack: SimRack, tray: str) -> None:
        self.rack = rack
        self.tray = tray
        self.firmware = rack.spec.tray(tray).switch_firmware or CHIP_FIRMWARE
        prefix = f"{rack.spec.rack}/{tray}/"
        self.ports = sorted(
            (link for gpu in rack.gpus() for link in gpu.links if link.spec.remote_switch.startswith(prefix)),
            key=lambda link: (link.spec.remote_switch, link.spec.remote_port),
        )
        self._baseline: dict[int, dict[str, int]] = {}
        for link in self.ports:
            rng = profiles.seeded_random(rack.seed, link.gpu.id, link.port, "switch-end")
            self._baseline[id(link)] = {c: rng.randrange(0, 30 if c == "crc" else 2) for c in COUNTERS}

    def read_ports(self) -> list[dict[str, Any]]:
        """Every port of the tray's chips that has a GPU link on it, now."""
        t = self.rack.now()
        rack_prefix = self.rack.spec.rack + "/"
        ports = []
        for link in self.ports:
            gpu = link.gpu.id.removeprefix(rack_prefix)
            counters = {name: link.counter(c, t) - link.baseline[c] + self._baseline[id(link)][c]
                        for c, name in PORT_COUNTERS.items()}
            counters["recovery_failed"] = link.down_events(t)
            ports.append({
                "chip": link.spec.remote_switch.rsplit("/", 1)[-1],
                "switch_port": link.spec.remote_port,
                "link": f"{gpu}/nvl{link.port:02d}",
                "gpu": gpu,
                "gpu_port": link.port,
                "state": "up" if link.is_up(t) else "down",
                "firmware": self.firmware,
                "counters": counters,
                "effective_ber": link.ber(t) if link.gpu.sku.nvlink5_fields else None,
            })
        return ports
