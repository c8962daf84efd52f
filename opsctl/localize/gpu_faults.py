"""What a GPU's own failed check says about it: the fault kind (which names its runbook) and the
repair context of opsctl/data/mttr.yaml (which names its action, MTTR and blast radius).

A tray judges its GPUs by the rulebook; a GPU that failed a check of its own — wrong GEMM
results, too slow, throttling, a pending row remap, a fabric it cannot join — is a fault of
that GPU, to be repaired like any other part. The burn-in's and the triage's snapshots carry
those checks (`failed_checks` of a GPU entry), and the localizer names the GPU with the repair
this table gives. Checks on a GPU's links are its links' (they never come here), and XIDs are
read by the XID catalog (evidence.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuFault:
    kind: str  # a fault kind the runbooks name (runbooks/*.md `kinds`)
    context: str  # the repair context of the `gpu` part in mttr.yaml (gpu@<context>)
    severity: int  # which repair wins when a GPU fails several ways: the highest


# Ordered: the first pattern a check name matches decides.
CHECK_FAULTS = (
    (re.compile(r"gemm\.\w+\.(mismatches|reference|golden)$"), GpuFault("sdc", "rma", 4)),
    (re.compile(r"hbm\.errors$"), GpuFault("hbm_bad_cells", "rma", 4)),
    (re.compile(r"host_link\.\w+$"), GpuFault("pcie_degraded", "host_link", 3)),
    (re.compile(r"(config\.\w+|rack\.configuration)$"), GpuFault("configuration", "configure", 2)),
    (re.compile(r"(under_load\.clocks_event_reasons|gemm\.\w+\.drop_pct|rack\.temperature_c|clocks\.violation_s"
                r"|power\.thermal_violation_s|thermal\.\w+)$"), GpuFault("thermal_throttle", "cooling", 3)),
    (re.compile(r"(power\.reached|power\.pulse\.\w+)$"), GpuFault("power_brake", "power", 3)),  # cannot hold its power target, or braked by it
    (re.compile(r"c2c\.\w+$"), GpuFault("c2c_link_down", "replace", 3)),  # GB200: GPU and Grace share the tray's board
    (re.compile(r"(fabric\.health|fabric\.clique)$"), GpuFault("fabric_degraded", "fabric", 3)),
    # A memory the GPU flags unrepairable has no spare rows left (DCGM MonitorMemUnrepairableFlag fails it).
    (re.compile(r"memory\.unrepairable$"), GpuFault("memory_unrepairable", "rma", 4)),
    # A volatile double-bit count, in the window or arrived with: a reset clears it (XID 48's workflow starts there).
    (re.compile(r"(memory\.remapped_rows|memory\.retired_pages|ecc\.uncorrected_volatile|ecc\.volatile_dbe_total)$"),
     GpuFault("row_remap", "reset", 2)),
    # GPU_IS_LOST: off the bus, out of nvidia-smi -r's reach; the catalog's XID 79 says reboot (RESTART_BM).
    (re.compile(r"gpu\.lost$"), GpuFault("gpu_lost", "reboot", 2)),
    (re.compile(r"(gpu\.hung|\w+\.device|gpu\.recovery_action)$"), GpuFault("gpu_lost", "reset", 2)),
    (re.compile(r"(gemm\.\w+\.tflops(\.peers)?|membw\.gbps(\.peers)?|rack\.\w+)$"), GpuFault("slow_gpu", "reset", 1)),
    (re.compile(r"nvlink\.link_count$"), GpuFault("gpu", "replace", 3)),
    # NVLink errors NVML counts only over all of the GPU's links (nvlink.gpu.*: its NVLink data ECC
    # total): no link is named, so the GPU's NVLink workflow starts, as for an NVLink XID alone,
    # with a GPU reset (mttr.yaml gpu@nvlink); a part is replaced only if errors return.
    (re.compile(r"nvlink\.gpu\.\w+$"), GpuFault("link_errors", "nvlink", 2)),
    # A switch tray's own check (it reaches here as a tray's failed check): its firmware, flashed (switch_tray@firmware).
    (re.compile(r"switch_tray\.firmware$"), GpuFault("switch_firmware", "firmware", 2)),
)
POWER_BRAKE = "hw_power_brake_slowdown"


def gpu_fault(check: str, value: object = None) -> GpuFault | None:
    """The GpuFault of a failed check's name (and its reading: a clocks check held only by the
    power brake is a power-delivery fault, not a cooling one), or None for a check this table
    does not know (it still fails the GPU; the repair is the GPU's default)."""
    for pattern, fault in CHECK_FAULTS:
        if pattern.search(check):
            if fault.kind == "thermal_throttle" and isinstance(value, list) and value and set(value) == {POWER_BRAKE}:
                return GpuFault("power_brake", "power", fault.severity)
            return fault
    return None


def worst_fault(failed_checks: Iterable[Mapping[str, Any]]) -> GpuFault | None:
    """The fault that decides the repair of a GPU with these failed checks: [{"check", "value"}]."""
    found = [gpu_fault(entry.get("check", ""), entry.get("value")) for entry in failed_checks]
    faults = [fault for fault in found if fault is not None]
    return max(faults, key=lambda fault: fault.severity) if faults else None
