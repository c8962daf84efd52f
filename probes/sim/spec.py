"""The simulated rack as data: what opsctl compiles a fault scenario and a topology into, and
what a tray's simulator reads (JSON, so it can travel to a tray over ssh).

Effects are the low-level, per-GPU and per-link consequences of the user's faults: opsctl
resolves "cartridge cart2 has bad pins" into error rates on the links through those pins, and
"link drops" into the link's state plus the XIDs every GPU of the NVLink domain logs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SPEC_FORMAT = "opsctl-sim-rack/1"


@dataclass
class Effect:
    kind: str  # what the simulator does (opsctl/simulation/compiler.py writes it, probes/sim/hardware.py reads it)
    params: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the scenario fault this came from, for the record

    def get(self, key: str, default: Any = None) -> Any:
        value = self.params.get(key)
        return default if value is None else value


@dataclass
class LinkSpec:
    port: int
    remote_switch: str  # switch chip id
    remote_port: int
    effects: list[Effect] = field(default_factory=list)


@dataclass
class GpuSpec:
    id: str
    local_index: int
    rack_index: int
    uuid: str
    serial: str
    pci_bus_id: str
    module_id: int
    links: list[LinkSpec] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)


@dataclass
class TraySpec:
    name: str
    slot: int
    tray_index: int
    unreachable: bool = False
    gpus: list[GpuSpec] = field(default_factory=list)
    switch_firmware: str | None = None  # a switch tray flashed with another NVSwitch firmware (firmware_mismatch)
    effects: list[Effect] = field(default_factory=list)  # the host's own: an HGX baseboard switch chip's SXids (`sxid`)


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
    trays: list[TraySpec] = field(default_factory=list)
    format: str = SPEC_FORMAT

    def tray(self, name: str) -> TraySpec:
        for tray in self.trays:
            if tray.name == name:
                return tray
        raise KeyError(f"rack {self.rack} has no simulated tray {name!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RackSpec:
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
            trays.append(TraySpec(**{**tray, "gpus": gpus, "effects": [Effect(**e) for e in tray.get("effects") or []]}))
        return cls(**{**data, "trays": trays})
