"""The XIDs the exporter knows by name: their alert tier and the runbook that handles them.

Every XID is counted, known or not. The known ones are also published at 0 from the start, so
that the first event of a code is an increase Prometheus can see (a series that is born at 1
shows no `increase()`). The alert rules in exporters/rules/xid.yml group these codes by tier and
runbook; a test checks that the rules and this table agree.

Source of meanings and actions: NVIDIA's XID catalog and resolution buckets
(shared/reference/NVML_AND_XID.md). Tiers: critical are the XIDs whose action is a GPU reset,
a reboot or a hardware workflow (issue 6 names them); warning need a look but not a page;
info are application faults that a restarted job clears, counted and never alerted.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Xid:
    code: int
    meaning: str
    tier: str  # critical | warning | info
    runbook: str  # file under runbooks/


def _xids(*rows):
    return {row[0]: Xid(*row) for row in rows}


XIDS = _xids(
    (13, "graphics engine exception", "info", "gpu.md"),
    (31, "GPU memory page fault", "info", "gpu.md"),
    (43, "GPU stopped processing", "info", "gpu.md"),
    (48, "double-bit ECC error", "critical", "xid-memory.md"),
    (62, "internal micro-controller halt", "critical", "gpu.md"),
    (63, "row remap event", "warning", "xid-memory.md"),
    (64, "row remap failure", "critical", "xid-memory.md"),
    (74, "NVLink error", "critical", "xid-74-nvlink.md"),
    (79, "GPU fell off the bus", "critical", "xid-79-fell-off-bus.md"),
    (92, "high single-bit ECC rate", "warning", "xid-memory.md"),
    (94, "contained memory error", "warning", "xid-memory.md"),
    (95, "uncontained memory error", "critical", "xid-memory.md"),
    (119, "GSP RPC timeout", "critical", "xid-gsp.md"),
    (120, "GSP error", "critical", "xid-gsp.md"),
    (121, "C2C error", "warning", "gpu.md"),
    (136, "NVLink training failed", "warning", "link.md"),
    (140, "unrecovered ECC error", "warning", "xid-memory.md"),
    (144, "NVLink 5 unit error", "critical", "xid-nvlink5.md"),
    (145, "NVLink 5 unit error (downstream of a link fault)", "critical", "xid-nvlink5.md"),
    (146, "NVLink 5 unit error", "critical", "xid-nvlink5.md"),
    (147, "NVLink 5 unit error", "critical", "xid-nvlink5.md"),
    (148, "NVLink 5 unit error", "critical", "xid-nvlink5.md"),
    (149, "NVLink 5 NETIR link down", "critical", "xid-149-link-down.md"),
    (150, "NVLink 5 unit error", "critical", "xid-nvlink5.md"),
    (154, "GPU recovery action changed", "warning", "xid-154-recovery-action.md"),
    (155, "NVLink software-defined error", "warning", "gpu.md"),
)
