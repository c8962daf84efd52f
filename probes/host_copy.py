"""Host↔device bandwidth with pinned host memory, as DCGM's pcie plugin measures it (its
h2d_d2h_single_pinned subtest: copies from page-locked host memory to the GPU and back). On
HGX the copies cross the GPU's PCIe link; on GB200 they cross NVLink-C2C to the Grace CPU.

Judged on PCIe only, against the theoretical figure of the GPU's best link (its maximum
generation and width) × the rulebook's allowance: a link trained below its best, or one that
carries less than it trained at, falls under it. On GB200 the C2C figures are shown, not judged
(docs/probe-output.md says why).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from probes.compute import ComputeDevice
from probes.check_record import Check, GpuContext, compare
from probes.sku_references import References

COPY_BYTES = 256 * 2**20  # each copy: large enough that per-copy latency does not count (DCGM's Blackwell copies are 512 MiB)
ITERATIONS = 8
# PCIe per lane and direction, GB/s: the transfer rate × its line-code efficiency (8b/10b for
# Gen 1-2, 128b/130b for Gen 3-5), the PCI Express Base Specification's figures.
PCIE_LANE_GBPS = {1: 2.5 * 8 / 10 / 8, 2: 5.0 * 8 / 10 / 8, 3: 8.0 * 128 / 130 / 8, 4: 16.0 * 128 / 130 / 8,
                  5: 32.0 * 128 / 130 / 8}
DIRECTIONS = {"h2d": True, "d2h": False}  # name: to the device


def measure(device: ComputeDevice, nbytes: int = COPY_BYTES, iterations: int = ITERATIONS,
            while_copying: Callable[[], None] | None = None) -> dict[str, Any]:
    """The `host_copy` section of a GPU entry (docs/probe-output.md): GB/s each way, one copy
    way at a time, after one untimed copy that allocates and pins the buffers. `while_copying`
    runs beside the timed host-to-device copies (the host link's reading, probes/tray_depth.py)."""
    result: dict[str, Any] = {"buffer_bytes": nbytes, "iterations": iterations, "pinned": True}
    for name, to_device in DIRECTIONS.items():
        device.host_copy(to_device, nbytes, 1)
        beside = threading.Thread(target=while_copying, daemon=True) if while_copying and to_device else None
        if beside is not None:
            beside.start()
        seconds = device.host_copy(to_device, nbytes, iterations)
        if beside is not None:
            beside.join()  # bounded: the reading runs under the NVML deadline (probes/gpu_deadline.py)
        result[f"{name}_gbps"] = round(nbytes * iterations / seconds / 1e9, 3) if seconds > 0 else None
    device.release()
    return result


def pcie_gbps(generation: int | None, width: int | None) -> float | None:
    """The theoretical one-way figure of a PCIe link, GB/s; None for a link it does not know."""
    if generation not in PCIE_LANE_GBPS or not width:
        return None
    return PCIE_LANE_GBPS[generation] * width


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """The pinned copies, judged against the PCIe link the configuration reading read."""
    if not gpu.get("host_copy"):
        return []
    return checks(context.component, gpu["host_copy"], gpu.get("host_link"), refs.rules)


def checks(component: str, copy: dict[str, Any], link: dict[str, Any] | None,
           rules: dict[str, Any]) -> list[Check]:
    """host_link.h2d_bandwidth and host_link.d2h_bandwidth, where the host link is PCIe."""
    rule = rules["host_link"]["pinned_copy"]
    link = link or {}
    best = pcie_gbps(link.get("max_generation"), link.get("max_width"))
    if best is None:
        return []  # GB200 (C2C), or the link was not read: shown, not judged
    floor = round(rule["min_ratio"] * best, 2)
    found: list[Check] = []
    for name in DIRECTIONS:
        gbps = copy.get(f"{name}_gbps")
        if gbps is None:
            continue
        found.append(compare(f"host_link.{name}_bandwidth", component, gbps, "<", floor, "GB/s", rule["source"],
                             f"{gbps:g} GB/s {name.upper()} over pinned memory; the GPU's best link, "
                             f"Gen{link['max_generation']} x{link['max_width']}, carries {best:.1f} GB/s, × "
                             f"{rule['min_ratio']:g} = {floor:g} GB/s"))
    return found
