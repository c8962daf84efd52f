"""The XIDs a GPU logged, each ruled by NVIDIA's catalog (probes/xids.py): those of the window
(judged with the window's counters, probes/counter_checks.py) and, as a check family of its own,
those it logged before this run began, since the driver loaded (probes/kernel_history.py).
"""

from __future__ import annotations

from typing import Any

from probes import xids
from probes.check_record import Check, GpuContext, check
from probes.sku_references import References


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """The XIDs the GPU logged before this run began (the window's are the counter checks')."""
    return recorded_xid_checks(context.component, gpu.get("recorded_xids"), refs.xids)


def _logged_xids(events: list[dict[str, Any]]) -> list[tuple[int, xids.XidRuling, int]]:
    """(code, ruling, count) per distinct XID among `events`, each ruled by NVIDIA's catalog
    (probes/xids.py); an NVLink 5 event that carries its kernel log line's registers is decoded by them."""
    groups: dict[tuple[Any, ...], int] = {}
    for event in events:
        key = (event["xid"], event.get("intr_info"), event.get("error_status"), event.get("driver_major"))
        groups[key] = groups.get(key, 0) + 1
    return [(code, xids.rule(code, intr_info, status, driver), count)
            for (code, intr_info, status, driver), count in sorted(groups.items(), key=lambda item: tuple(map(str, item[0])))]


def _xid_reason(code: int, ruling: xids.XidRuling, count: int, when: str) -> str:
    name = f"{ruling.mnemonic}, {ruling.meaning}" if ruling.mnemonic else ruling.meaning
    decoded = f"; {ruling.decoded}" if ruling.decoded else ""
    return f"XID {code} ({name}{decoded}) logged {count}× {when}; action: {ruling.action}"


def xid_checks(component: str, events: list[dict[str, Any]], catalog: dict[str, Any]) -> list[Check]:
    """One check per XID code logged in the window, ruled by NVIDIA's catalog."""
    checks = [check("xid", component, ruling.verdict, code, ruling.bucket, "XID", "logged", ruling.source,
                    _xid_reason(code, ruling, count, "in the window"))
              for code, ruling, count in _logged_xids(events)]
    if not checks:
        checks.append(check("xid", component, "pass", [], None, "XID", "logged", catalog["source"], "no XID in the window"))
    return checks


RECORDED_SOURCE = ("the kernel log since the NVIDIA driver last loaded or the GPU's last reset (NVRM Xid lines, matched "
                   "by PCI bus id; a reset by the journal line NVIDIA/NVSentinel's reset job writes, gpu-reset/gpu_reset.sh): "
                   "DCGM's health watch keeps the XIDs it has seen and fails the devastating ones on every later "
                   "check (DcgmHealthWatch.cpp, MonitorDevastatingXids); NVIDIA's Health Validation XID checks read "
                   "the kernel's log")


def recorded_xid_checks(component: str, recorded: dict[str, Any] | None, catalog: dict[str, Any]) -> list[Check]:
    """One check per XID the GPU logged before this run began (probes/kernel_history.py), each
    ruled by the catalog as if it came now: a GPU that arrives with XID 79 in its log is not
    healthy because it logged it a second before the probe looked."""
    if recorded is None:
        return []
    if recorded.get("unread"):
        return [check("xid.recorded", component, "incomplete", None, None, "XID", "logged", RECORDED_SOURCE,
                      f"the kernel log could not be read ({recorded['unread']}): what the GPU logged before this run is unknown")]
    reset = recorded.get("reset")  # the journal's line of the GPU's last reset, which cleared what came before
    since = f"since the GPU's reset ({reset})" if reset else "since the driver loaded"
    checks = [check("xid.recorded", component, ruling.verdict, code, ruling.bucket, "XID", "logged",
                    f"{ruling.source}; {RECORDED_SOURCE}",
                    _xid_reason(code, ruling, count, f"before this run, {since}"))
              for code, ruling, count in _logged_xids(recorded.get("events") or [])]
    return checks or [check("xid.recorded", component, "pass", [], None, "XID", "logged", RECORDED_SOURCE,
                            f"no XID logged {since}")]
