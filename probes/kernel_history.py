"""What the tray's GPUs recorded before this run: the NVRM Xid lines of the kernel log since the
NVIDIA driver last loaded, up to the moment the probe's own XID watch opens.

NVML delivers only the XIDs that happen after a program registers for them, so a rule that
judges its own window passes a GPU that logged XID 79 a second before it looked. NVIDIA's tools
do not: DCGM's health watch keeps the XIDs it has seen and fails the devastating ones on every
later check (DcgmHealthWatch.cpp, MonitorDevastatingXids), and NVIDIA's Health Validation XID
checks read the kernel's own log. A driver reload (or a reboot) starts the GPU afresh, so only
what came after the last "NVRM: loading NVIDIA UNIX" line is held against it.

A GPU reset (`nvidia-smi -r`, the catalog's RESET_GPU) dealt with what the GPU logged before it
too, but neither the driver nor DCGM records one (NVIDIA's NVSentinel says so, and has its reset
job write a syslog line instead: NVIDIA/NVSentinel gpu-reset/gpu_reset.sh, `logger -t
nvsentinel-gpu-reset "GPU reset executed: <UUID>, success: true"`). The journal is read for
those lines beside the kernel's, in time order, and a GPU's XIDs before its last successful reset
are not held against it. An operator who resets by hand writes the same line (runbooks/gpu.md).

Where the log cannot be read (no journal, no permission for dmesg) that is said, never taken as
"nothing recorded".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from probes.kernel_log import bus_key, first_readable, parse_xid_lines

if TYPE_CHECKING:
    from probes.nvml_reader import GpuReading

KernelLog = tuple[list[str], "str | None"]  # (lines, None), or ([], why the log could not be read)
KernelHistory = Callable[[float], KernelLog]  # a backend's reader: the log since the driver loaded, up to a clock time

DRIVER_LOADED = "NVRM: loading NVIDIA UNIX"  # the driver's first line when its module loads
# The syslog identifiers whose "GPU reset executed" lines are read: NVSentinel's reset job's, and
# the one an operator's own reset writes (runbooks/gpu.md).
RESET_IDENTIFIERS = ("nvsentinel-gpu-reset", "opsctl-gpu-reset")
GPU_RESET = re.compile(r"GPU reset executed: (GPU-[0-9A-Fa-f-]+), success: true\b")


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
    """This boot's kernel log up to unix time `until`, with the GPU reset lines among it:
    journald's kernel messages and those of RESET_IDENTIFIERS (one query, so in time order), else
    dmesg's ring buffer (which may have lost the oldest lines, holds a few after `until`, and has
    no reset lines: there every XID since the driver loaded stands)."""
    # journalctl's matches: "+" is or; two values of one field are or; two fields are and. A reset
    # line counts only from root (who alone can reset a GPU): anyone may run `logger`.
    matches = ["_TRANSPORT=kernel", "+", *[f"SYSLOG_IDENTIFIER={name}" for name in RESET_IDENTIFIERS], "_UID=0"]
    journal, journal_why = first_readable(
        (["journalctl", "-b", "-o", "cat", "--no-pager", "--until", f"@{int(until)}", *matches],))
    if journal:
        return journal, None
    # No journal, or one with nothing of this boot's kernel (journald not reading it; a boot's log is
    # never empty): that is no evidence of a clean history, so the kernel's ring buffer decides.
    ring, ring_why = first_readable((["dmesg"],))
    if ring_why is None:
        return ring, None
    return [], f"{journal_why or 'journalctl: no kernel message of this boot'}; {ring_why}"


def recorded_by_gpu(log: KernelLog, readings: Iterable[GpuReading]) -> tuple[dict[int, list[dict[str, Any]]] | None, str | None]:
    """(recorded_xids of the log for the GPUs of `readings`, None), or (None, why the log was not read)."""
    lines, why = log
    if why:
        return None, why
    readings = list(readings)
    return recorded_xids(lines, {r.index: r.pci_bus_id for r in readings if r.pci_bus_id},
                         {r.index: r.uuid for r in readings if r.uuid}), None


def recorded_xids(lines: Iterable[str], pci_by_gpu: dict[int, str],
                  uuid_by_gpu: dict[int, str] | None = None) -> dict[int, list[dict[str, Any]]]:
    """{GPU index: [{"xid", "intr_info", "error_status", "line"}]} of the Xid lines logged since
    the driver loaded and since the GPU's last successful reset (matched by UUID), each matched
    to its GPU by PCI bus id."""
    by_bus = {bus_key(pci): index for index, pci in pci_by_gpu.items()}
    by_uuid = _by_uuid(uuid_by_gpu or {})
    found: dict[int, list[dict[str, Any]]] = {index: [] for index in pci_by_gpu}
    for line in since_driver_load(lines):
        reset = _reset_uuid(line)
        if reset is not None:
            index = by_uuid.get(reset)
            if index in found:
                found[index] = []  # the reset dealt with what the GPU logged before it
            continue
        for entry in parse_xid_lines((line,)) if "NVRM: Xid" in line else ():
            index = by_bus.get(entry["pci"])
            if index is not None:
                found[index].append({key: entry[key] for key in ("xid", "intr_info", "error_status", "line")})
    return found


def last_resets(lines: Iterable[str], uuid_by_gpu: dict[int, str]) -> dict[int, str]:
    """{GPU index: its last successful reset's line} since the driver loaded, for the GPUs that had one."""
    by_uuid = _by_uuid(uuid_by_gpu)
    found: dict[int, str] = {}
    for line in since_driver_load(lines):
        index = by_uuid.get(_reset_uuid(line) or "")
        if index is not None:
            found[index] = line.strip()
    return found


def _by_uuid(uuid_by_gpu: dict[int, str]) -> dict[str, int]:
    return {uuid.lower(): index for index, uuid in uuid_by_gpu.items()}


def _reset_uuid(line: str) -> str | None:
    """The UUID (lower case) of the GPU a successful reset line names; None for any other line."""
    reset = GPU_RESET.search(line) if "GPU reset executed" in line else None
    return reset.group(1).lower() if reset else None
