"""Judging one tray: each GPU entry of the run document by every GPU check family, a switch tray's
ports by every switch check family, both as listed in probes/gpu_check_families.py; and the tray's
status from its checks. The families make their checks with probes/check_record.py against the
references of probes/sku_references.py; this module only calls them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from probes import gpu_check_families
from probes.check_record import Check, GpuContext
from probes.peer_throughput import peer_medians
from probes.sku_references import References


def judge_gpu(gpu: dict[str, Any], refs: References, tray: dict[str, float]) -> list[Check]:
    """The checks of one GPU entry of the run document; `tray` holds the peer medians."""
    context = GpuContext(component=f"gpu{gpu['index']}", peer_medians=tray)
    checks: list[Check] = []
    for family in gpu_check_families.GPU_CHECK_FAMILIES:
        checks += family(gpu, refs, context)
    return checks


def judge_run(document: dict[str, Any], refs: References) -> None:
    """Fill in each GPU's checks, and the tray's own."""
    tray = peer_medians(document["gpus"], refs)
    for gpu in document["gpus"]:
        gpu["checks"] = judge_gpu(gpu, refs, tray)
    for family in gpu_check_families.TRAY_CHECK_FAMILIES:
        document["checks"] += family(document, refs)


def judge_switch_tray(links: list[dict[str, Any]], window_s: float, refs: References) -> list[Check]:
    """The checks of a switch tray's ports over the window."""
    checks: list[Check] = []
    for family in gpu_check_families.SWITCH_CHECK_FAMILIES:
        checks += family(links, window_s, refs)
    return checks


# A tray's status, worst first: incomplete over fail. The probe's exit code answers "can this
# tray's result be trusted at all?": a run that did not finish (a probe crashed, a GPU hung) is
# incomplete even where something also failed, so opsctl runs it again rather than repair on half
# the evidence. The rack's verdict orders them the other way (opsctl/burnin/checks.py SEVERITY).
TRAY_STATUS_ORDER = ("incomplete", "fail", "warn", "pass")


def worst_verdict(checks: Sequence[Mapping[str, Any]]) -> str | None:
    verdicts = {c["verdict"] for c in checks}
    for verdict in TRAY_STATUS_ORDER:
        if verdict in verdicts:
            return verdict
    return None
