"""The rack models opsctl knows: how many trays, GPUs, switch chips and NVLink ports each has,
and the stable component ids (docs/topology.md) built from them.

Everything that spells a component id goes through this module, so ids stay the same in
every output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# An HGX server is one tray, the host itself; inside opsctl it is named "node" (component ids
# have no HGX tray level: hgx01/gpu0; operators see the rack name, opsctl/runs/tray_names.py).
HGX_TRAY = "node"

NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class RackModel:
    name: str
    sku: str  # key into the per-SKU reference figures (probes/references)
    compute_trays: int
    gpus_per_tray: int
    switch_trays: int
    chips_per_switch_tray: int
    nvlink_ports: int  # NVLink ports per GPU
    cabling_map: str  # default cabling map, a CSV under opsctl/data/cabling/
    description: str

    @property
    def gpus(self) -> int:
        return self.compute_trays * self.gpus_per_tray

    @property
    def is_nvl72(self) -> bool:
        return self.switch_trays > 0

    @property
    def switch_chips(self) -> int:
        return self.switch_trays * self.chips_per_switch_tray if self.is_nvl72 else self.chips_per_switch_tray

    # --- tray names -------------------------------------------------------------------------
    def compute_tray_names(self) -> list[str]:
        if not self.is_nvl72:
            return [HGX_TRAY]
        return [f"ct{t:02d}" for t in range(1, self.compute_trays + 1)]

    def switch_tray_names(self) -> list[str]:
        return [f"st{t}" for t in range(1, self.switch_trays + 1)]

    def tray_names(self) -> list[str]:
        return self.compute_tray_names() + self.switch_tray_names()

    def is_switch_tray(self, tray: str | None) -> bool:
        return tray in self.switch_tray_names()

    # --- component ids (docs/topology.md) ----------------------------------------------------
    def tray_id(self, rack: str, tray: str) -> str:
        return rack if tray == HGX_TRAY else f"{rack}/{tray}"

    def gpu_id(self, rack: str, rack_gpu_index: int) -> str:
        """Rack GPU index = gpus_per_tray × (tray − 1) + local index."""
        if not self.is_nvl72:
            return f"{rack}/gpu{rack_gpu_index}"
        tray, local = divmod(rack_gpu_index, self.gpus_per_tray)
        return f"{rack}/ct{tray + 1:02d}/gpu{local}"

    def gpu_tray(self, rack_gpu_index: int) -> str:
        """The compute tray name that holds a rack GPU index."""
        if not self.is_nvl72:
            return HGX_TRAY
        return f"ct{rack_gpu_index // self.gpus_per_tray + 1:02d}"

    def switch_chip_id(self, rack: str, chip_index: int) -> str:
        """Chip index = 2 × (switch tray − 1) + local index on NVL72; nvsN on HGX."""
        if not self.is_nvl72:
            return f"{rack}/nvs{chip_index}"
        tray, local = divmod(chip_index, self.chips_per_switch_tray)
        return f"{rack}/st{tray + 1}/sw{local}"

    def switch_chip_tray(self, chip_index: int) -> str | None:
        return f"st{chip_index // self.chips_per_switch_tray + 1}" if self.is_nvl72 else None

    def link_id(self, rack: str, rack_gpu_index: int, port: int) -> str:
        return f"{self.gpu_id(rack, rack_gpu_index)}/nvl{port:02d}"


MODELS = {
    m.name: m
    for m in (
        RackModel(
            name="gb200-nvl72",
            sku="gb200",
            compute_trays=18,
            gpus_per_tray=4,
            switch_trays=9,
            chips_per_switch_tray=2,
            nvlink_ports=18,
            cabling_map="gb200-nvl72.csv",
            description="GB200 NVL72: 18 compute trays × 4 GPUs, 9 NVLink switch trays × 2 chips",
        ),
        RackModel(
            name="hgx-h100",
            sku="h100",
            compute_trays=1,
            gpus_per_tray=8,
            switch_trays=0,
            chips_per_switch_tray=4,
            nvlink_ports=18,
            cabling_map="hgx-8gpu.csv",
            description="HGX H100: 8 GPUs and 4 NVSwitch chips on one baseboard",
        ),
        RackModel(
            name="hgx-h200",
            sku="h200",
            compute_trays=1,
            gpus_per_tray=8,
            switch_trays=0,
            chips_per_switch_tray=4,
            nvlink_ports=18,
            cabling_map="hgx-8gpu.csv",
            description="HGX H200: 8 GPUs and 4 NVSwitch chips on one baseboard",
        ),
    )
}


def model_named(name: str) -> RackModel:
    """The RackModel called `name`, or KeyError with the known names."""
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}") from None
