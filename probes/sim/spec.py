"""The simulated rack as data: what opsctl compiles a fault scenario and a topology into, and
what a tray's simulator reads (JSON, so it can travel to a tray over ssh).

Effects are the low-level, per-GPU and per-link consequences of the user's faults: opsctl
resolves "cartridge cart2 has bad pins" into error rates on the links through those pins, and
"link drops" into the link's state plus the XIDs every GPU of the NVLink domain logs.
"""

from dataclasses import asdict, dataclass, field

SPEC_FORMAT = "opsctl-sim-rack/1"

LINK_EFFECTS = {
    # kind: parameters (all optional; times in seconds since the simulator's epoch)
    "errors": {"crc_per_s", "replay_per_s", "recovery_per_s", "symbol_per_s", "ber", "start_s", "end_s", "ramp_s"},
    "down": {"start_s", "end_s"},
    "flap": {"start_s", "end_s", "period_s", "down_s"},
    "bandwidth": {"factor", "start_s", "end_s"},
}
GPU_EFFECTS = {
    "slow": {"factor", "start_s", "end_s"},
    "throttle": {"reason", "clock_factor", "temperature_c", "start_s", "end_s", "after_busy_s"},
    "ecc": {"corrected_per_s", "uncorrected", "start_s", "end_s"},
    "row_remap": {"corrected_rows", "uncorrected_rows", "pending", "failure", "start_s"},
    "xid": {"xid", "at_s", "repeat_s", "count"},
    "sdc": {"probability", "start_s", "end_s"},
    "lost": {"start_s"},
    "hang": {"start_s", "end_s", "nvml"},  # compute never returns (a wedged GPU); with nvml, NVML calls block too
    "not_supported": {"calls", "fields"},
    "fabric": {"state", "clique_id", "degraded_bw", "route_recovery", "route_unhealthy", "access_timeout_recovery", "start_s", "end_s"},
    # Tray depth (probes/sim/nvml_config.py, probes/sim/memory.py, probes/sim/device.py):
    "firmware": {"vbios"},  # the VBIOS the GPU was flashed with
    "ecc_mode": {"enabled"},
    "pcie": {"gen", "width"},  # the PCIe link as trained
    "hbm_bad_cells": {"offset_bytes", "size_bytes"},  # cells that do not hold what is written
    "deterministic_sdc": set(),  # one element of every GEMM (and collective) result wrong, the same way each time
    "c2c_down": set(),  # the NVLink-C2C link to the Grace CPU inactive (probes/sim/nvml.py)
}
THROTTLE_REASONS = ("thermal", "power_brake", "power_cap", "hw_slowdown")


@dataclass
class Effect:
    kind: str
    params: dict = field(default_factory=dict)
    source: str = ""  # the scenario fault this came from, for the record

    def get(self, key, default=None):
        value = self.params.get(key)
        return default if value is None else value


@dataclass
class LinkSpec:
    port: int
    remote_switch: str  # switch chip id
    remote_port: int
    effects: list = field(default_factory=list)


@dataclass
class GpuSpec:
    id: str
    local_index: int
    rack_index: int
    uuid: str
    serial: str
    pci_bus_id: str
    module_id: int
    links: list = field(default_factory=list)
    effects: list = field(default_factory=list)


@dataclass
class TraySpec:
    name: str
    slot: int
    tray_index: int
    unreachable: bool = False
    gpus: list = field(default_factory=list)


@dataclass
class RackSpec:
    rack: str
    model: str
    sku: str
    seed: int
    chassis_serial: str
    cluster_uuid: str  # 32 hex digits
    clique_id: int
    driver_version: str
    noise: dict = field(default_factory=dict)  # crc_per_s, replay_per_s, ber on every healthy link
    # The NVLink domain's software: {"imex_missing": [trays without IMEX], "nccl_fallback": true}
    domain: dict = field(default_factory=dict)
    epoch: float | None = None  # unix time of t = 0; None: when the simulator starts
    trays: list = field(default_factory=list)
    format: str = SPEC_FORMAT

    def tray(self, name):
        for tray in self.trays:
            if tray.name == name:
                return tray
        raise KeyError(f"rack {self.rack} has no simulated tray {name!r}")

    def to_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        if data.get("format") != SPEC_FORMAT:
            raise ValueError(f"not a simulated-rack spec of format {SPEC_FORMAT}: {data.get('format')!r}")
        trays = []
        for tray in data["trays"]:
            gpus = []
            for gpu in tray["gpus"]:
                links = [
                    LinkSpec(**{**link, "effects": [Effect(**e) for e in link["effects"]]}) for link in gpu["links"]
                ]
                gpus.append(GpuSpec(**{**gpu, "links": links, "effects": [Effect(**e) for e in gpu["effects"]]}))
            trays.append(TraySpec(**{**tray, "gpus": gpus}))
        return cls(**{**data, "trays": trays})
