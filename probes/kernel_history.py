"""What the tray's GPUs recorded before this run: the NVRM Xid lines of the kernel log since the
NVIDIA driver last loaded, up to the moment the probe's own XID watch opens.

NVML delivers only the XIDs that happen after a program registers for them, so a rule that
judges its own window passes a GPU that logged XID 79 a second before it looked. NVIDIA's tools
do not: DCGM's health watch keeps the XIDs it has seen and fails the devastating ones on every
later check (DcgmHealthWatch.cpp, MonitorDevastatingXids), and NVIDIA's Health Validation XID
checks read the kernel's own log. A driver reload (or a reboot) starts the GPU afresh, so only
what came after the last "NVRM: loading NVIDIA UNIX" line is held against it.

Where the log cannot be read (no journal, no permission for dmesg) that is said, never taken as
"nothing recorded".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from probes.kernel_log import bus_key, first_readable, parse_xid_lines

if TYPE_CHECKING:
    from probes.nvml_reader import GpuReading

KernelLog = tuple[list[str], "str | None"]  # (lines, None), or ([], why the log could not be read)
KernelHistory = Callable[[float], KernelLog]  # a backend's reader: the log since the driver loaded, up to a clock time

DRIVER_LOADED = "NVRM: loading NVIDIA UNIX"  # the driver's first line when its module loads


def since_driver_load(lines: Iterable[str]) -> list[str]:
    """The lines after the last driver load (all of them when the log holds no load line)."""
    kept: list[str] = []
    for line in lines:
        if DRIVER_LOADED in line:
            kept = []
        else:
            kept.append(line)
    return kept


def read_kernel_history(until: float) -> tuple[list[str], str | None]:
    """This boot's kernel log up to unix time `until`: journald's kernel messages, else dmesg's
    ring buffer (which may have lost the oldest lines, and holds a few after `until`)."""
    return first_readable((["journalctl", "-k", "-b", "-o", "cat", "--no-pager", "--until", f"@{int(until)}"], ["dmesg"]))


def recorded_by_gpu(log: KernelLog, readings: Iterable[GpuReading]) -> tuple[dict[int, list[dict[str, Any]]] | None, str | None]:
    """(recorded_xids of the log for the GPUs of `readings`, None), or (None, why the log was not read)."""
    lines, why = log
    if why:
        return None, why
    return recorded_xids(lines, {r.index: r.pci_bus_id for r in readings if r.pci_bus_id}), None


def recorded_xids(lines: Iterable[str], pci_by_gpu: dict[int, str]) -> dict[int, list[dict[str, Any]]]:
    """{GPU index: [{"xid", "intr_info", "error_status", "line"}]} of the Xid lines logged since
    the driver loaded, matched to each GPU by its PCI bus id."""
    by_bus = {bus_key(pci): index for index, pci in pci_by_gpu.items()}
    found: dict[int, list[dict[str, Any]]] = {index: [] for index in pci_by_gpu}
    for entry in parse_xid_lines(since_driver_load(lines)):
        index = by_bus.get(entry["pci"])
        if index is not None:
            found[index].append({key: entry[key] for key in ("xid", "intr_info", "error_status", "line")})
    return found
