"""A simulated GPU's link to its host CPU: PCIe as a `pcie_degraded` fault left it trained (HGX),
or NVLink-C2C to the Grace CPU (GB200), and what a pinned host copy achieves over it.

The copy figure is the simulator's model: the link's theoretical one-way figure (PCIe: the
PCI Express Base Specification's rate per lane × the lanes trained; C2C: the SKU's per-direction
figure) × COPY_EFFICIENCY. A C2C link a `c2c_link_down` fault took down is not modelled here:
its copies run at the SKU's figure (the C2C copy figures are shown, not judged).
"""

from __future__ import annotations

from typing import Any

from probes.host_copy import pcie_gbps

COPY_EFFICIENCY = 0.85  # the simulator's model of protocol overhead; a modelled figure, not a published one


def pcie_link(gpu: Any) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """((best generation, width), (trained generation, width)); None for a GPU without PCIe to its host."""
    best = gpu.sku.pcie_max  # the SKU's record (probes/sim/sku_models.py)
    if best is None:
        return None
    found = [effect for effect in gpu.effects if effect.kind == "pcie"]
    if not found:
        return best, best
    return best, (int(found[-1].get("gen", best[0])), int(found[-1].get("width", best[1])))


def copy_gbps(gpu: Any) -> float:
    """GB/s one way of a pinned host copy on this GPU."""
    link = pcie_link(gpu)
    if link is None or gpu.sku.host_link == "c2c":
        return gpu.sku.c2c_links * gpu.sku.c2c_mbps / 1000.0 * COPY_EFFICIENCY
    best, trained = link
    theoretical = pcie_gbps(*trained) or pcie_gbps(*best) or 0.0
    return theoretical * COPY_EFFICIENCY
