"""Which Slurm nodes a fault takes out of service: the repair model's out-of-service unit
(opsctl/mttr.py) — a GPU or a compute tray is its tray's node; a switch tray, a cartridge or a
rack-wide fault is every compute tray of the rack — mapped to the inventory's
`opsctl_slurm_node` of each tray. No second table: the GPUs a repair idles decide it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from opsctl.errors import InputError
from opsctl.mttr import gpus_out

if TYPE_CHECKING:
    from opsctl.inventory import Rack
    from opsctl.mttr import MttrModel
    from opsctl.topology.graph import Topology


@dataclass(frozen=True)
class PartScope:
    part: str  # the component id (or the rack's name)
    action: str  # the repair model's action, e.g. reseat_compute_tray
    nodes: tuple[str, ...]  # Slurm node names, in rack order
    trays: tuple[str, ...]  # the trays those nodes are


def _node_of(rack: Rack, tray_name: str) -> str:
    try:
        return rack.tray(tray_name).slurm_node
    except KeyError:
        raise InputError(f"{rack.source}: rack {rack.name} has no host for tray {tray_name}, so no Slurm node "
                         "to drain for it") from None


def nodes_of_rack(rack: Rack) -> PartScope:
    """Every node of the rack that runs jobs: its GPU trays (switch trays run none)."""
    trays = [tray.name for tray in rack.trays if not tray.is_switch]
    return PartScope(rack.name, "drain_rack", tuple(_node_of(rack, t) for t in trays), tuple(trays))


def nodes_of_part(rack: Rack, part_id: str, topology: Topology, mttr: MttrModel,
                  action: str | None = None) -> PartScope:
    """The nodes the repair of `part_id` takes out of service. `action`: the repair the triage
    chose (a name in the repair model); default the model's own for this kind of part."""
    if part_id == rack.name:
        return nodes_of_rack(rack)
    if part_id not in topology.components:
        raise InputError(f"{part_id}: no such part in rack {rack.name} (opsctl topology show {rack.name})")
    repair = mttr.repair(part_id, topology)
    gpus: set[str] | frozenset[str]
    if action and action != repair.action.name:
        if action not in mttr.actions:
            raise InputError(f"{part_id}: unknown repair action {action!r}")
        gpus = gpus_out(mttr.actions[action].out_of_service, topology.components[part_id], topology)
    else:
        action, gpus = repair.action.name, repair.gpu_ids
    held = {topology.components[gpu].tray for gpu in gpus}
    trays = [tray for tray in rack.model.tray_names() if tray in held]
    return PartScope(part_id, action, tuple(_node_of(rack, t) for t in trays), tuple(trays))
