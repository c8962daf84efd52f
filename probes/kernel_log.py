"""The NVRM Xid lines of a tray's kernel log, and the registers they carry.

NVML's XID event gives the code only. For XIDs 144-150 (NVLink 5 units) NVIDIA's catalog
decides severity from the first two registers in the parentheses of the kernel log line:

    NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 13 (0x00000011 0x00000000 0x0 0x0 0x0 0x0 0x0)

`intr_info` and `error_status`. Each NVML event of such an XID is given the registers of its
GPU's matching line (same PCI bus, same code, in order), so probes/xids.py can decode it.
Reading the log may be refused (no root, no journal): then the events stay as they are and the
catalog's most severe row for the code applies.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from typing import Any

from probes.xids import catalog

# The NVLink 5 unit XIDs: those the catalog's "XID 144-150 Decode" sheet decodes.
NVLINK5_XIDS = frozenset(row["xid"] for row in catalog()["nvlink5_decode"])
XID_LINE = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>\d+),(?P<rest>.*)")
REGISTERS = re.compile(r"\((0x[0-9A-Fa-f]+) (0x[0-9A-Fa-f]+)")


def parse_xid_lines(lines: Iterable[str]) -> list[dict[str, Any]]:
    """[{"pci", "xid", "intr_info", "error_status", "line"}] for the NVRM Xid lines among
    `lines`; registers are None where a line has none."""
    found: list[dict[str, Any]] = []
    for line in lines:
        match = XID_LINE.search(line)
        if not match:
            continue
        registers = REGISTERS.search(match.group("rest"))
        found.append({"pci": bus_key(match.group("pci")), "xid": int(match.group("xid")),
                      "intr_info": int(registers.group(1), 16) if registers else None,
                      "error_status": int(registers.group(2), 16) if registers else None,
                      "line": line.strip()})
    return found


def bus_key(pci: str) -> tuple[int, ...] | tuple[str, ...]:
    """Domain, bus and device of a PCI address, as the kernel log and NVML both can spell it:
    "0008:01:00", "00000008:01:00.0" -> (8, 1, 0)."""
    parts = pci.split(".")[0].split(":")
    try:
        return tuple(int(part, 16) for part in parts[-3:])
    except ValueError:
        return tuple(parts)


def attach_registers(events: list[dict[str, Any]], entries: list[dict[str, Any]], pci_by_gpu: dict[int, str],
                     driver_version: str | None = None) -> int:
    """Give each NVLink 5 XID event the registers of its kernel log line: the k-th event of a
    GPU and code takes the k-th line of that GPU's bus and code. Returns how many were matched."""
    driver_major = driver_branch(driver_version)
    lines: dict[tuple[Any, int], list[dict[str, Any]]] = {}
    for entry in entries:
        if entry["intr_info"] is not None:
            lines.setdefault((entry["pci"], entry["xid"]), []).append(entry)
    matched = 0
    for event in sorted(events, key=lambda e: (e.get("time") or 0.0)):
        pci = pci_by_gpu.get(event["gpu"])
        if event["xid"] not in NVLINK5_XIDS or pci is None:
            continue
        queue = lines.get((bus_key(pci), event["xid"]))
        if queue:
            entry = queue.pop(0)
            event.update(intr_info=entry["intr_info"], error_status=entry["error_status"], driver_major=driver_major,
                         kernel_log=entry["line"])
            matched += 1
    return matched


def driver_branch(version: str | None) -> int | None:
    try:
        return int(str(version).split(".")[0])
    except (TypeError, ValueError):
        return None


def read_kernel_log(since: float) -> tuple[list[str], str | None]:
    """The kernel log since unix time `since`: (lines, None), or ([], why it could not be read).
    journald where there is one, else dmesg (all of the ring buffer: matching by code and bus
    keeps old lines from mattering much)."""
    return first_readable((["journalctl", "-k", "-o", "cat", "--no-pager", "--since", f"@{int(since)}"], ["dmesg"]))


def first_readable(commands: Iterable[list[str]]) -> tuple[list[str], str | None]:
    """The output lines of the first of `commands` that succeeds, or ([], why each failed)."""
    why: list[str] = []
    for command in commands:
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as error:
            why.append(f"{command[0]}: {error}")
            continue
        if proc.returncode == 0:
            return proc.stdout.splitlines(), None
        why.append(f"{command[0]}: {(proc.stderr.strip().splitlines() or ['exit ' + str(proc.returncode)])[-1]}")
    return [], "; ".join(why)
