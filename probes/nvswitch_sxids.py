"""The NVSwitch errors (SXids) an HGX host's kernel log holds since the NVIDIA driver loaded, and
the tray's check of them, per switch chip.

On HGX the NVSwitch chips sit on the GPU baseboard and the host's nvidia-nvswitch driver logs
their errors, in this form:

    nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 19084, Non-fatal, Link 29 AN1 Heartbeat Timeout Error (First)
    nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 20034, Fatal, Link 28 LTSSM Fault Up
    nvidia-nvswitch2: SXid (PCI:0000:c4:00.0): 10002, Severity 5 Engine instance 00 Sub-engine instance 00

DCGM judges them as its health watch does (DcgmHealthWatch::MonitorNvSwitchErrorCounts): any
fatal SXid (DCGM_FI_DEV_NVSWITCH_FATAL_ERRORS, whose value is the SXid) fails, any non-fatal one
(DCGM_FI_DEV_NVSWITCH_NON_FATAL_ERRORS) warns. A line that says neither is failed by opsctl's
rule: it does not say it is non-fatal. A GB200 compute tray's kernel has no NVSwitch (its
switches are in the switch trays), so the check runs only where the SKU's references say the
switches are on the host (`nvswitch_on_host`) or the log holds SXid lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from probes.check_record import Check, check
from probes.kernel_history import KernelLog, since_driver_load
from probes.sku_references import References

SXID_LINE = re.compile(r"nvidia-(?P<switch>nvswitch\d+): SXid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): (?P<sxid>\d+),\s*(?P<text>.*)")
FATAL, NON_FATAL = re.compile(r"^Fatal\b", re.IGNORECASE), re.compile(r"^Non-fatal\b", re.IGNORECASE)

SOURCE = ("the host's kernel log since the NVIDIA driver last loaded (nvidia-nvswitch SXid lines): DCGM's health watch "
          "(DcgmHealthWatch.cpp, MonitorNvSwitchErrorCounts) fails any fatal SXid (DCGM_FI_DEV_NVSWITCH_FATAL_ERRORS, "
          "DCGM_FR_NVSWITCH_FATAL_ERROR) and warns on any non-fatal one (DCGM_FI_DEV_NVSWITCH_NON_FATAL_ERRORS, "
          "DCGM_FR_NVSWITCH_NON_FATAL_ERROR)")
UNSTATED_RULE = "opsctl's rule: a line that does not say it is non-fatal is judged as fatal"


def parse_sxid_lines(lines: Iterable[str]) -> list[dict[str, Any]]:
    """[{"switch", "pci_bus_id", "sxid", "fatal", "text", "line"}] of the SXid lines among `lines`:
    `fatal` is True (Fatal), False (Non-fatal) or None where the line says neither."""
    found: list[dict[str, Any]] = []
    for line in lines:
        match = SXID_LINE.search(line)
        if not match:
            continue
        text = match.group("text").strip()
        fatal = True if FATAL.match(text) else False if NON_FATAL.match(text) else None
        found.append({"switch": match.group("switch"), "pci_bus_id": match.group("pci"), "sxid": int(match.group("sxid")),
                      "fatal": fatal, "text": text, "line": line.strip()})
    return found


def recorded_sxids(log: KernelLog, refs: References) -> dict[str, Any] | None:
    """The run document's `nvswitch` section: {"recorded_sxids": [...], "unread": why or None};
    None on a tray with no NVSwitch on its host (a GB200 compute tray) and no SXid line."""
    lines, why = log
    found = parse_sxid_lines(since_driver_load(lines))
    if not found and not (refs.sku or {}).get("nvswitch_on_host"):
        return None
    return {"recorded_sxids": found, "unread": why or None}


def switch_component(switch: str) -> str:
    """nvidia-nvswitchN is the switch chip opsctl calls nvsN on HGX (opsctl/rack_models.py): the
    driver numbers its devices in the order it probes them, by PCI bus id, and opsctl numbers the
    baseboard's chips in the same order."""
    return "nvs" + switch.removeprefix("nvswitch")


def tray_checks(document: dict[str, Any], refs: References) -> list[Check]:
    """`nvswitch.sxid.recorded` per switch chip that logged an SXid (fail for a fatal or unstated
    one, warn for non-fatal only), one pass for the host when none did, incomplete when the log
    could not be read. Nothing on a tray without the section."""
    section = document.get("nvswitch")
    if not isinstance(section, dict):
        return []
    if section.get("unread"):
        return [check("nvswitch.sxid.recorded", "tray", "incomplete", None, None, "SXid", "logged", SOURCE,
                      f"the kernel log could not be read ({section['unread']}): the NVSwitch errors since the driver "
                      f"loaded are unknown")]
    by_switch: dict[str, list[dict[str, Any]]] = {}
    for entry in section.get("recorded_sxids") or []:
        by_switch.setdefault(entry["switch"], []).append(entry)
    checks: list[Check] = []
    for switch in sorted(by_switch, key=lambda name: (len(name), name)):
        entries = by_switch[switch]
        fatal = [e for e in entries if e["fatal"] is True]
        unstated = [e for e in entries if e["fatal"] is None]
        worst = (fatal or unstated or entries)[0]
        verdict = "fail" if fatal or unstated else "warn"
        kinds = (f"{len(fatal)} fatal, " if fatal else "") + (f"{len(unstated)} not stated fatal or non-fatal, " if unstated else "") \
            + f"{len(entries) - len(fatal) - len(unstated)} non-fatal"
        rule = f"; {UNSTATED_RULE}" if unstated and not fatal else ""
        codes = sorted({e["sxid"] for e in entries})
        checks.append(check("nvswitch.sxid.recorded", switch_component(switch), verdict, codes, 0, "SXid", "logged",
                            SOURCE + (f"; {UNSTATED_RULE}" if unstated else ""),
                            f"nvidia-{switch} (PCI {worst['pci_bus_id']}) logged {len(entries)} SXid(s) since the driver "
                            f"loaded ({kinds}): {worst['sxid']}, {worst['text']}{rule}; action: the switch chip is part of "
                            f"the HGX baseboard"))
    return checks or [check("nvswitch.sxid.recorded", "tray", "pass", [], 0, "SXid", "logged", SOURCE,
                            "no NVSwitch SXid logged since the driver loaded")]
