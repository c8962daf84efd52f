"""A simulated NVLink switch tray: its chips' ports, which are the far ends of GPU links.

A real NVL72 switch tray runs NVOS, not NVML; this is the hardware model the probes' switch
reader reads in simulation. A port sees the same link as the GPU at the other end: the same
state and the same errors over a window, with lifetime counts of its own — on the counters the
link's generation has: the data-link CRC, replay and recovery counters where the GPU's SKU reports
them (NVLink 4), the NVLink 5 error counters on Blackwell, which has no data-link counters. A link
recovery, failed or successful, is the link's: both of its ends retrain, so the port counts it too
(its drops as failed recoveries, its successful ones, and their sum as recovery events).
"""

from __future__ import annotations

from typing import Any

from probes.sim import profiles
from probes.sim.hardware import COUNTERS, NVLINK5_COUNTERS, SimRack
from probes.sim.sku_models import SimSku

# Counter names as the switch reader reports them (the GPU side's names), by generation.
DL_PORT_COUNTERS = {"crc": "crc_errors", "replay": "replay_errors", "recovery": "recovery_errors"}
NVLINK5_PORT_COUNTERS = {"rcv": "rcv_errors", "malformed": "malformed_packet_errors",
                         "buffer_overrun": "buffer_overrun_errors", "integrity": "local_link_integrity_errors",
                         "rcv_remote": "rcv_remote_errors", "rcv_general": "rcv_general_errors",
                         "recovery_successful": "recovery_successful"}


def port_counters(sku: SimSku) -> dict[str, str]:
    """{simulated counter: its name} a switch port reports for a link of a GPU of this SKU."""
    return {**(DL_PORT_COUNTERS if sku.nvlink_dl_counters else {}), "symbol": "symbol_errors",
            **(NVLINK5_PORT_COUNTERS if sku.nvlink5_fields else {})}
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
        self._counters = port_counters(rack.sku)
        self._baseline: dict[int, dict[str, int]] = {}
        for link in self.ports:
            rng = profiles.seeded_random(rack.seed, link.gpu.id, link.port, "switch-end")
            self._baseline[id(link)] = {c: rng.randrange(0, 30 if c == "crc" else 2) for c in (*COUNTERS, *NVLINK5_COUNTERS)}

    def read_ports(self) -> list[dict[str, Any]]:
        """Every port of the tray's chips that has a GPU link on it, now."""
        t = self.rack.now()
        rack_prefix = self.rack.spec.rack + "/"
        ports = []
        for link in self.ports:
            gpu = link.gpu.id.removeprefix(rack_prefix)
            counters = {name: link.counter(c, t) - link.baseline[c] + self._baseline[id(link)][c]
                        for c, name in self._counters.items()}
            counters["recovery_failed"] = link.down_events(t)
            if "recovery_successful" in counters:
                counters["recovery_events"] = counters["recovery_failed"] + counters["recovery_successful"]
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
