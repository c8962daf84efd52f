"""The tray's link-health snapshot: NVLink counters read twice a window apart, deltas only,
and the XIDs each GPU logged in between (the tray's part of the link-health snapshot); and what
each GPU and link arrived with, as DCGM's health watch judges it (its failed checks); on an HGX
host, the fatal NVSwitch SXids logged since the driver loaded (the tray's failed checks, which
the localizer gives the baseboard's repair, as the burn-in does). A switch tray's snapshot is its
ports, the far ends of the same links ("side": "switch").
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any

from probes import running_totals
from probes.counters import gpu_window, snapshot_link
from probes.gpu_health import health_checks
from probes.link_rules import gpu_counter_checks, gpu_link, is_link_symptom, link_rule_checks
from probes.sku_references import References, load_references
from probes.gpu_deadline import NVML_DEADLINE_S
from probes.kernel_history import KernelHistory, recorded_by_gpu
from probes.nvswitch_sxids import recorded_sxids
from probes.nvswitch_sxids import tray_checks as sxid_checks
from probes.nvml_reader import NvmlReader, XidWatcher
from probes.switch_reader import snapshot_port, switch_window

if TYPE_CHECKING:
    from probes.check_record import Check
    from probes.nvml_library import NvmlLibrary
    from probes.nvml_reader import GpuReading
    from probes.sim.clock import Clock
    from probes.switch_reader import NvosSwitchReader, SimSwitchReader

FORMAT = "opsctl-probe/1"


def take_snapshot(nvml: NvmlLibrary, window_s: float, clock: Clock | None = None, tray: str | None = None,
                  deadline_s: float = NVML_DEADLINE_S, kernel_history: KernelHistory | None = None) -> dict[str, Any]:
    """The snapshot document body of docs/probe-output.md for the GPUs behind `nvml` (initialised).
    `clock` (now() and sleep()) measures the window and stamps the XIDs: wall time on a tray, a
    simulated clock in benchmarks. With `kernel_history` (the backend's), each GPU also lists the
    XIDs it logged before the window, since the driver loaded (probes/kernel_history.py)."""
    now, sleep = (clock.now, clock.sleep) if clock is not None else (time.time, time.sleep)
    reader = NvmlReader(nvml, now=now, deadline_s=deadline_s)
    opened = now()
    # No polling thread: the window is spent waiting on NVML's event set, so a simulated clock
    # moves only by that wait, and each XID carries the moment it came.
    watcher = XidWatcher(nvml, reader.handles, now=now, workers=reader.workers).start(poll=False)
    before = reader.read_all()
    watcher.collect_for(window_s, sleep)
    after = reader.read_all(identity=False)
    events = watcher.stop()
    refs = load_references(next((r.name for r in before if r.name), None),
                           device_id=next((r.pci_device_id for r in before if r.pci_device_id), None))
    history = kernel_history(opened) if kernel_history else None
    recorded, unread = recorded_by_gpu(history, before) if history else (None, None)
    links: list[dict[str, Any]] = []
    gpus: list[dict[str, Any]] = []
    # The window as it was, not as asked: on a loaded tray the reads and the wait run long, and
    # counts over 2.3 s divided by 2 s would overstate every rate judged against a per-second limit.
    measured = [last.time - first.time for first, last in zip(before, after)
                if not (first.hung or last.hung) and last.time > first.time]
    window = statistics.median(measured) if measured else float(window_s)
    for first, last in zip(before, after):
        hung = first if first.hung else last if last.hung else None
        reachable = not (first.lost or last.lost or hung)
        xids = [event for event in events if event["gpu"] == last.index]
        entry: dict[str, Any] = {"gpu": last.index, "reachable": reachable,
                 "xids": [{"xid": event["xid"], "time": round(event["time"], 3)} for event in xids]}
        if recorded is not None:
            entry["recorded_xids"] = [event["xid"] for event in recorded.get(last.index, [])]
        if hung:  # named as hung, and failed on its own account: the siblings are read and judged
            entry["failed_checks"] = [hung_check(hung, reader.workers.deadline_s)]
        if reachable:
            # The GPU's own rates over its own window (its reads may run late on a loaded tray).
            own = last.time - first.time if last.time > first.time else window
            entry["window_seconds"] = round(own, 3)
            counters = gpu_window(first, last, xids, own)
            arrived = arrival_failures(first, refs)
            links += [with_failed(snapshot_link(last.index, link), arrived.get(link["port"])) for link in counters["links"]]
            entry["failed_checks"] = own_failures(counters, refs) + arrived.get(None, [])
        gpus.append(entry)
    errors = [entry["error"] for entry in watcher.errors]
    if unread:
        errors.append(f"kernel log not read ({unread}): the XIDs logged before the window are unknown")
    document: dict[str, Any] = {"format": FORMAT, "kind": "snapshot", "tray": tray, "window_seconds": round(window, 3), "links": links,
                "gpus": gpus, "errors": errors}
    nvswitch = recorded_sxids(history, refs) if history else None
    if nvswitch is not None:
        document["nvswitch"] = nvswitch
        failed = [failed_check({**c, "reason": f"{c['component']}: {c['reason']}"})
                  for c in sxid_checks(document, refs) if c["verdict"] == "fail"]
        if failed:
            document["failed_checks"] = failed
    return document


def hung_check(reading: GpuReading, deadline_s: float) -> dict[str, Any]:
    """The snapshot's failed check of a GPU whose NVML calls did not return within the deadline."""
    return {"check": "gpu.hung", "value": deadline_s, "reason": reading.errors.get("deadline", "NVML calls hang")}


def arrival_failures(reading: GpuReading, refs: References) -> dict[int | None, list[dict[str, Any]]]:
    """What the GPU arrived with, read before the window (probes/running_totals.py, DCGM 4.6's
    health watch): {port: its link's failed totals, None: the GPU's own}. A window that saw
    nothing new does not hide a link that already failed its recovery, or a double-bit ECC count."""
    found: dict[int | None, list[dict[str, Any]]] = {}
    for c in running_totals.arrival_checks("gpu", reading.to_dict(), refs):
        if c["verdict"] == "fail":
            port = int(c["component"].split("/nvl")[1]) if "/nvl" in c["component"] else None
            found.setdefault(port, []).append(failed_check(c))
    return found


def failed_check(c: Check) -> dict[str, Any]:
    """A check as the snapshot's `failed_checks` carry it: what failed, on what reading, and why."""
    return {"check": c["check"], "value": c["value"], "reason": c["reason"]}


def with_failed(row: dict[str, Any], failed: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {**row, "failed_checks": failed} if failed else row


def own_failures(counters: dict[str, Any], refs: References) -> list[dict[str, Any]]:
    """The GPU's own health checks that fail with no load on it (row remap pending, ECC, fabric,
    recovery action: probes.gpu_health.health_checks) and its NVLink counters NVML gives for all
    its links together (probes.link_rules.gpu_counter_checks: no link can be named from them), as
    the snapshot's `failed_checks`. A fabric that is degraded, or an NVLink total that rose,
    because one of the GPU's links fails is that link's symptom, not the GPU's."""
    component = "gpu"
    links_fail = any(c["verdict"] == "fail" for c in link_rule_checks(counters["links"], counters["window_s"], refs.rules,
                                                                      gpu_link(component), component))
    return [failed_check(c)
            for c in health_checks(component, counters, refs) + gpu_counter_checks(component, counters, refs.rules)
            if c["verdict"] == "fail" and not (links_fail and is_link_symptom(c["check"], c["value"]))]


def take_switch_snapshot(switch: SimSwitchReader | NvosSwitchReader, window_s: float, clock: Clock | None = None,
                         tray: str | None = None) -> dict[str, Any]:
    """The snapshot document of a switch tray, from a switch reader (probes.switch_reader)."""
    now, sleep = (clock.now, clock.sleep) if clock is not None else (time.time, time.sleep)
    document: dict[str, Any] = {"format": FORMAT, "kind": "snapshot", "tray": tray, "window_seconds": float(window_s), "links": [],
                "gpus": [], "errors": []}
    if not switch.supported:
        document["switch"] = {"supported": False, "reason": switch.reason}
        return document
    started = now()
    before = switch.read()
    sleep(window_s)
    second = now()
    document["links"] = [snapshot_port(row) for row in switch_window(before, switch.read())]
    document["window_seconds"] = round(max(second - started, float(window_s)), 3)  # as it was (take_snapshot)
    return document
