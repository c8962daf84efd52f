"""The rack as a graph: every component, and every NVLink link with the parts it passes through.

Two relations make the graph: 'contains' (a tray holds a GPU, a cartridge holds a cable: each
component has at most one holder) and 'carries' (a part carries a link's signal). A component's
links are the links it carries or that a part it contains carries: a compute tray carries the
72 links of its GPUs and connectors, a switch tray the 144 links of its chips. A tree and a list
of links per part answer every question asked of it (what a part carries, what holds it), so
plain dicts hold them: no graph library to load on every command.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opsctl.rack_models import RackModel
from opsctl.topology.cabling_map import CablingRow, load_cabling_map

CABLING_DIR = Path(__file__).resolve().parent.parent / "data" / "cabling"
CABLE_LANES = ("l0-tx", "l0-rx", "l1-tx", "l1-rx")


@dataclass(frozen=True)
class Link:
    id: str
    gpu: str
    port: int
    switch: str
    switch_port: int
    gpu_index: int  # rack GPU index
    chip_index: int
    tray: str  # compute tray name (inventory tray) of the GPU end
    switch_tray: str | None  # switch tray name of the chip end (None on HGX)
    path: tuple[str, ...]  # physical parts between GPU and chip, GPU side first


@dataclass
class Component:
    id: str
    kind: str
    tray: str | None  # the inventory tray it sits in (None for rack-level parts)
    links: list[str] = field(default_factory=list)


class Topology:
    """Components and links of one rack, and which component holds which."""

    def __init__(self, rack: str, model: RackModel, cabling_map_path: str | Path) -> None:
        self.rack = rack
        self.model = model
        self.cabling_map_path = Path(cabling_map_path)
        self.holder: dict[str, str] = {}  # component -> the one that contains it
        self.components: dict[str, Component] = {}
        self.links: dict[str, Link] = {}
        self._build(load_cabling_map(self.cabling_map_path, model))

    # --- building ---------------------------------------------------------------------------
    def _add(self, component_id: str, kind: str, tray: str | None, parent: str | None = None) -> str:
        if component_id not in self.components:
            self.components[component_id] = Component(component_id, kind, tray)
            if parent is not None:
                self.holder[component_id] = parent
        return component_id

    def _carry(self, parts: Iterable[str], link_id: str) -> None:
        """The parts carry the link, and so does everything that contains one of them."""
        carriers: set[str] = set()
        for part in parts:
            if part not in carriers:
                carriers.add(part)
                carriers.update(self.holders(part))
        for part in carriers:
            self.components[part].links.append(link_id)

    def _build(self, rows: Iterable[CablingRow]) -> None:
        model, rack = self.model, self.rack
        for tray in model.compute_tray_names():
            if model.is_nvl72:
                self._add(model.tray_id(rack, tray), "compute_tray", tray)
        for tray in model.switch_tray_names():
            self._add(f"{rack}/{tray}", "switch_tray", tray)
        for gpu_index in range(model.gpus):
            tray = model.gpu_tray(gpu_index)
            parent = model.tray_id(rack, tray) if model.is_nvl72 else None
            self._add(model.gpu_id(rack, gpu_index), "gpu", tray, parent)
        for chip in range(model.switch_chips):
            switch_tray = model.switch_chip_tray(chip)
            parent = f"{rack}/{switch_tray}" if switch_tray else None
            self._add(model.switch_chip_id(rack, chip), "switch_chip", switch_tray or "node", parent)

        for row in sorted(rows, key=lambda r: (r.tray, r.gpu, r.port)):
            self._add_link(row)

    def _add_link(self, row: CablingRow) -> None:
        model, rack = self.model, self.rack
        tray_index = model.compute_tray_names().index(row.tray)
        gpu_index = tray_index * model.gpus_per_tray + row.gpu
        gpu = model.gpu_id(rack, gpu_index)
        chip = model.switch_chip_id(rack, row.switch_chip)
        switch_tray = model.switch_chip_tray(row.switch_chip)
        tray_id = model.tray_id(rack, row.tray)
        path: list[str] = []
        if row.board:
            path.append(self._add(f"{rack}/{row.board}", "baseboard", row.tray))
        if row.tray_connector:
            path.append(self._add(f"{tray_id}/{row.tray_connector}", "connector", row.tray, tray_id))
        if row.cartridge:
            cartridge = self._add(f"{rack}/{row.cartridge}", "cartridge", None)
            path.append(cartridge)
            for lane in CABLE_LANES[: row.cables]:
                cable = f"{cartridge}/{row.tray}-gpu{row.gpu}-p{row.port:02d}-{lane}"
                path.append(self._add(cable, "cable", None, cartridge))
        if row.switch_connector:
            st_id = f"{rack}/{switch_tray}"
            path.append(self._add(f"{st_id}/{row.switch_connector}", "connector", switch_tray, st_id))

        link_id = model.link_id(rack, gpu_index, row.port)
        link = Link(
            id=link_id,
            gpu=gpu,
            port=row.port,
            switch=chip,
            switch_port=row.switch_port,
            gpu_index=gpu_index,
            chip_index=row.switch_chip,
            tray=row.tray,
            switch_tray=switch_tray,
            path=tuple(path),
        )
        self.links[link_id] = link
        self._add(link_id, "link", row.tray)
        self.components[link_id].links.append(link_id)
        self._carry((gpu, *path, chip), link_id)

    # --- queries ----------------------------------------------------------------------------
    def holders(self, component_id: str) -> list[str]:
        """The components that hold `component_id` by 'contains' edges, nearest first (a GPU's
        compute tray; a cable's cartridge); empty for a part nothing holds or the rack lacks."""
        chain: list[str] = []
        node = component_id
        while node in self.holder:
            node = self.holder[node]
            chain.append(node)
        return chain

    def of_kind(self, kind: str) -> list[Component]:
        return [c for c in self.components.values() if c.kind == kind]

    def link_for(self, gpu_id: str, port: int) -> Link:
        return self.links[f"{gpu_id}/nvl{port:02d}"]

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for component in self.components.values():
            counts[component.kind] = counts.get(component.kind, 0) + 1
        return counts

    def to_json(self) -> dict[str, Any]:
        """The document of `opsctl topology show RACK --json` (docs/topology.md)."""
        return {
            "rack": self.rack,
            "model": self.model.name,
            "cabling_map": str(self.cabling_map_path),
            "components": [
                {"id": c.id, "kind": c.kind, "tray": c.tray, "links": c.links}
                for c in sorted(self.components.values(), key=lambda c: (c.kind, c.id))
            ],
            "links": [
                {
                    "id": link.id,
                    "gpu": link.gpu,
                    "port": link.port,
                    "switch": link.switch,
                    "switch_port": link.switch_port,
                    "path": list(link.path),
                }
                for link in self.links.values()
            ],
        }


def default_cabling_map(model: RackModel) -> Path:
    return CABLING_DIR / model.cabling_map


def build_topology(rack: str, model: RackModel, cabling_map_path: str | Path | None = None) -> Topology:
    return Topology(rack, model, cabling_map_path or default_cabling_map(model))
