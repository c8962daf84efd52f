"""Which rack and tray each Ansible host of the inventory is, as opsctl's inventory reads them
(a tray named by `opsctl_tray` or by the end of its host name), for the playbooks to use."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError

if TYPE_CHECKING:
    from opsctl.inventory import Inventory, Rack, Tray


def chosen_racks(inventory: Inventory, names: str | None) -> list[Rack]:
    """The racks named in a comma-separated list, or every rack of the inventory for `all`."""
    if names in (None, "", "all"):
        return list(inventory.racks.values())
    picked: dict[str, Rack] = {}
    for name in (n.strip() for n in names.split(",")):
        if name:
            picked[name] = inventory.rack(name)  # an unknown rack is an InputError naming the known ones
    if not picked:
        raise InputError(f"--racks {names!r} names no rack")
    return list(picked.values())


def tray_row(rack: Rack, tray: Tray) -> dict[str, Any]:
    return {"rack": rack.name, "tray": tray.name, "id": rack.model.tray_id(rack.name, tray.name),
            "model": rack.model.name, "backend": rack.backend, "switch_tray": tray.is_switch}


def tray_table(racks: Iterable[Rack]) -> dict[str, dict[str, Any]]:
    """Ansible host -> the rack and tray it is."""
    return {tray.host: tray_row(rack, tray) for rack in racks for tray in rack.trays}
