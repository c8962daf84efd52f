"""Part ids in the ledger are opsctl's component ids (docs/topology.md); this checks them against
the rack's topology and says each part's kind and how many GPUs a repair action on it idles.

A rack's topology is its model's, with the rack's own cabling map when the inventory names one,
else the model's default — so history of a rack that has left the inventory still validates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from opsctl.errors import InputError, OpsctlError
from opsctl.inventory import load_inventory
from opsctl.mttr import MTTR_CONFIG_ENV, gpus_idled, load_mttr_model
from opsctl.rack_models import MODELS, NAME_PATTERN, model_named
from opsctl.topology import build_topology

if TYPE_CHECKING:
    from pathlib import Path

    from opsctl.inventory import Inventory, Rack
    from opsctl.mttr import MttrModel, RepairAction
    from opsctl.topology.graph import Topology

RACK_KIND = "rack"  # the whole rack, when no finer part is known


@dataclass(frozen=True)
class RackFacts:
    name: str
    model: str
    gpus: int


@dataclass(frozen=True)
class Part:
    id: str
    rack: str
    kind: str


TEMPLATE_RACK = "rack"  # every rack of one model and cabling map has the same parts, under its own name


@lru_cache(maxsize=16)
def _template_topology(model: str, cabling_map: Path | None) -> Topology:
    # Building an NVL72 topology takes about half a second; a fleet of racks shares one build.
    return build_topology(TEMPLATE_RACK, model_named(model), cabling_map)


@lru_cache(maxsize=4)
def _mttr_model(path: str | None) -> MttrModel:
    # Parsing mttr.yaml costs a quarter of a second here; one command may check many parts.
    return load_mttr_model(path)


def rack_of(part_id: str) -> str:
    rack = str(part_id).split("/", 1)[0]
    if not NAME_PATTERN.fullmatch(rack):
        raise InputError(f"part {part_id!r}: not a component id (rack07/ct03/gpu2, rack07/st3, …)")
    return rack


class Parts:
    """Resolves part ids and racks; `inventory` None means the default ($OPSCTL_INVENTORY or built-in)."""

    def __init__(self, inventory: Inventory | None = None, mttr_model: MttrModel | None = None) -> None:
        # loaded when first needed: most racks are in the ledger already; False: the default is unreadable
        self._inventory: Inventory | Literal[False] | None = inventory
        self._mttr = mttr_model

    @property
    def mttr(self) -> MttrModel:
        if self._mttr is None:
            self._mttr = _mttr_model(os.environ.get(MTTR_CONFIG_ENV))
        return self._mttr

    def inventory_rack(self, name: str) -> Rack | None:
        if self._inventory is None:
            try:
                self._inventory = load_inventory()
            except OpsctlError:
                self._inventory = False  # an unreadable default inventory: rely on the ledger's racks
        if self._inventory and name in self._inventory.racks:
            return self._inventory.racks[name]
        return None

    def rack_facts(self, name: str, recorded: dict[str, Any] | None = None, model: str | None = None) -> RackFacts:
        """Model and GPU count of a rack: as recorded in the ledger, else the inventory, else `model`."""
        if recorded:
            return RackFacts(name, recorded["model"], recorded["gpus"])
        rack = self.inventory_rack(name)
        if rack is not None:
            return RackFacts(name, rack.model.name, rack.model.gpus)
        if model:
            if model not in MODELS:
                raise InputError(f"rack {name}: unknown model {model!r} (known: {', '.join(sorted(MODELS))})")
            return RackFacts(name, model, MODELS[model].gpus)
        raise InputError(f"rack {name} is neither in the ledger nor in the inventory; say its model "
                         f"(opsctl ledger rack {name} --model …)")

    def cohort(self, name: str) -> dict[str, str]:
        """The rack's cohort fields the inventory sets (opsctl_vendor, opsctl_batch, opsctl_firmware), as text."""
        from opsctl.ledger.store import COHORT_COLUMNS

        rack = self.inventory_rack(name)
        if rack is None:
            return {}
        return {field: str(rack.vars[f"opsctl_{field}"]) for field in COHORT_COLUMNS
                if rack.vars.get(f"opsctl_{field}") is not None}

    def _template(self, facts: RackFacts) -> Topology:
        """The model's topology under TEMPLATE_RACK (the rack's own cabling map when the inventory has one)."""
        rack = self.inventory_rack(facts.name)
        cabling_map = rack.cabling_map if rack is not None and rack.model.name == facts.model else None
        return _template_topology(facts.model, cabling_map)

    @staticmethod
    def _template_id(part_id: str) -> str:
        return TEMPLATE_RACK + part_id[part_id.index("/"):]

    def part(self, part_id: str, facts: RackFacts) -> Part:
        """The Part for an id of the rack `facts` describes; an id not in its topology is refused."""
        part_id = str(part_id)
        if rack_of(part_id) != facts.name:
            raise InputError(f"part {part_id} is not in rack {facts.name}")
        if part_id == facts.name:
            return Part(part_id, facts.name, RACK_KIND)
        component = self._template(facts).components.get(self._template_id(part_id))
        if component is None:
            raise InputError(f"part {part_id}: no such component in {facts.name} ({facts.model}); "
                             f"see opsctl topology show {facts.name}")
        return Part(part_id, facts.name, component.kind)

    def enclosing(self, part_id: str, facts: RackFacts) -> list[str]:
        """The parts that hold `part_id`, nearest first, by the topology's 'contains' edges (a
        compute tray holds its GPUs and connectors, a switch tray its chips, a cartridge its
        cables); a link is part of its GPU; the rack holds every part."""
        if part_id == facts.name:
            return []
        topology = self._template(facts)
        node = self._template_id(part_id)
        chain = []
        if node in topology.links:
            node = topology.links[node].gpu
            chain.append(node)
        chain += topology.holders(node)  # (an imported part another cabling map had is held by the rack only)
        return [facts.name + template[len(TEMPLATE_RACK):] for template in chain] + [facts.name]

    def related(self, a: str, b: str, facts: RackFacts) -> bool:
        """One part is the other, holds it, or is held by it: a repair of one is a repair of
        the other's fault (a connector triage suspected, fixed by replacing its tray)."""
        return a == b or a in self.enclosing(b, facts) or b in self.enclosing(a, facts)

    def action(self, name: str) -> RepairAction:
        if name not in self.mttr.actions:
            raise InputError(f"unknown repair action {name!r} (known: {', '.join(sorted(self.mttr.actions))})")
        return self.mttr.actions[name]

    def default_action(self, part: Part, facts: RackFacts) -> RepairAction:
        """The first repair the repair model names for this part."""
        if part.kind == RACK_KIND:
            raise InputError(f"{part.id} is a whole rack: say which --action repairs it")
        return self.mttr.repair(self._template_id(part.id), self._template(facts)).action

    def gpus_idled(self, part: Part, action: RepairAction, facts: RackFacts) -> int:
        """GPUs out of service while `action` repairs `part` (the action's scope, on this rack)."""
        if part.kind == RACK_KIND or action.out_of_service in ("rack", "server"):
            return facts.gpus
        topology = self._template(facts)
        return gpus_idled(action.out_of_service, topology.components[self._template_id(part.id)], topology)
