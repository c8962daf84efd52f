"""Part ids in the ledger are CONTRACT's component ids; this checks them against the rack's
topology and says each part's kind and how many GPUs a repair action on it idles.

A rack's topology comes from the inventory when the rack is in it (its own cabling map), else
from the model the ledger recorded for it (the model's default cabling map), so history of a
rack that has left the inventory still validates.
"""

from dataclasses import dataclass
from functools import lru_cache

from opsctl.backend import topology_for
from opsctl.errors import InputError, OpsctlError
from opsctl.inventory import load_inventory
from opsctl.mttr import gpus_idled, load_mttr_model
from opsctl.rack_models import MODELS, NAME_PATTERN, model_named
from opsctl.topology import build_topology

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


@lru_cache(maxsize=64)
def _model_topology(rack, model):
    # Building an NVL72 topology takes about half a second; a ledger command may check many parts.
    return build_topology(rack, model_named(model))


@lru_cache(maxsize=64)
def _inventory_topology(rack):
    return topology_for(rack)


def rack_of(part_id):
    rack = str(part_id).split("/", 1)[0]
    if not NAME_PATTERN.fullmatch(rack):
        raise InputError(f"part {part_id!r}: not a component id (rack07/ct03/gpu2, rack07/st3, …)")
    return rack


class Parts:
    """Resolves part ids and racks; `inventory` None means the default ($OPSCTL_INVENTORY or built-in)."""

    def __init__(self, inventory=None, mttr_model=None):
        self._inventory = inventory
        self._inventory_loaded = inventory is not None
        self.mttr = mttr_model or load_mttr_model()

    def inventory_rack(self, name):
        if not self._inventory_loaded:
            self._inventory_loaded = True
            try:
                self._inventory = load_inventory()
            except OpsctlError:
                self._inventory = None  # an unreadable default inventory: rely on the ledger's racks
        if self._inventory is not None and name in self._inventory.racks:
            return self._inventory.racks[name]
        return None

    def rack_facts(self, name, recorded=None, model=None):
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

    def topology(self, facts):
        rack = self.inventory_rack(facts.name)
        if rack is not None and rack.model.name == facts.model:
            return _inventory_topology(rack)
        return _model_topology(facts.name, facts.model)

    def part(self, part_id, facts):
        """The Part for an id of the rack `facts` describes; an id not in its topology is refused."""
        part_id = str(part_id)
        if rack_of(part_id) != facts.name:
            raise InputError(f"part {part_id} is not in rack {facts.name}")
        if part_id == facts.name:
            return Part(part_id, facts.name, RACK_KIND)
        component = self.topology(facts).components.get(part_id)
        if component is None:
            raise InputError(f"part {part_id}: no such component in {facts.name} ({facts.model}); "
                             f"see opsctl topology show {facts.name}")
        return Part(part_id, facts.name, component.kind)

    def action(self, name):
        if name not in self.mttr.actions:
            raise InputError(f"unknown repair action {name!r} (known: {', '.join(sorted(self.mttr.actions))})")
        return self.mttr.actions[name]

    def default_action(self, part, facts):
        """The first repair the repair model names for this part."""
        if part.kind == RACK_KIND:
            raise InputError(f"{part.id} is a whole rack: say which --action repairs it")
        return self.mttr.repair(part.id, self.topology(facts)).action

    def gpus_idled(self, part, action, facts):
        """GPUs out of service while `action` repairs `part` (the action's scope, on this rack)."""
        if part.kind == RACK_KIND or action.out_of_service in ("rack", "server"):
            return facts.gpus
        topology = self.topology(facts)
        return gpus_idled(action.out_of_service, topology.components[part.id], topology)
