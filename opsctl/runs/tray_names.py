"""What an operator calls a tray: its component id without the rack in front.

That is ct03 or st1 on a GB200 NVL72 (rack07/ct03), and on an HGX server, whose one tray has
no level in component ids (docs/topology.md: hgx01/gpu0), the rack's own name: hgx01. Inside,
rack_models still names the HGX tray "node" (the inventory, the cabling map, the journal key
on it); that name is never shown — progress lines, trays/ file names and reports use this one,
as `opsctl inventory show` and fleet-summary.json (which print the tray's id) already did.
"""

from __future__ import annotations

from opsctl.rack_models import HGX_TRAY


def tray_label(rack: str, tray: str) -> str:
    """rack07, ct03 -> ct03; hgx01, node -> hgx01 (the last part of RackModel.tray_id)."""
    return rack if tray == HGX_TRAY else tray
