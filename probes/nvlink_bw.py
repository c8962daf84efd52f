"""NVLink bandwidth inside the tray: the GPU-to-GPU copy matrix, and what each link carried.

Pairs are copied one at a time (GPU i to GPU j, one direction), so each figure is that pair's
alone. Around the whole matrix, NVML's per-link byte counters say how the copies spread over
each GPU's links: a copy stripes across every active link, so a degraded link carries less
than its siblings even when the pair's total looks fine.

Its check family (`gpu_checks`): the slowest peer copy against the SKU's figure, every copy that
failed, and each link's share of the traffic against the GPU's median link.
"""

from __future__ import annotations

import statistics
import threading
from typing import TYPE_CHECKING, Any

from probes.check_record import Check, GpuContext, check, compare
from probes.compute import DeviceError
from probes.link_rules import gpu_link, per_link
from probes.sku_references import References
from probes.windows import rate_summary, timed_windows

if TYPE_CHECKING:
    from probes.compute import ComputeDevice
    from probes.nvml_reader import NvmlReader


def measure(devices: dict[int, ComputeDevice], reader: NvmlReader, seconds: float, window_s: float, stop: threading.Event,
            progress: dict[str, Any] | None = None) -> dict[str, Any]:
    """`devices`: {nvml index: device}. Returns {"results": {index: nvlink result}, "failures":
    {index: error}}, the `progress` dict if given, filled in pair by pair."""
    progress = {} if progress is None else progress
    indices = sorted(devices)
    pairs = [(i, j) for i in indices for j in indices if i != j]
    results: dict[int, dict[str, Any]] = {i: {"peer_gbps": {}, "peer_errors": {}} for i in indices}
    progress["results"] = results
    failures: dict[int, str] = {}
    progress["failures"] = failures
    if not pairs:
        return progress
    per_pair = seconds / len(pairs)
    traffic_before, started = {i: reader.read_link_traffic(i) for i in indices}, reader.now()
    for i, j in pairs:
        if stop.is_set():
            break
        if i in failures or j in failures:
            continue
        source, target = devices[i], devices[j]
        nbytes = source.default_copy_bytes
        try:
            per_iteration = source.peer_copy(target, nbytes, 1)
            windows = timed_windows(lambda n: source.peer_copy(target, nbytes, n), per_pair, window_s, stop, per_iteration)
        except DeviceError as error:
            lost = [k for k in (i, j) if reader.read_under_load(k).lost]
            for k in lost:
                failures[k] = str(error)
            if not lost:
                results[i]["peer_errors"][str(j)] = str(error)
            continue
        rates = rate_summary([nbytes * n / took / 1e9 for n, took in windows], "gbps")
        results[i]["peer_gbps"][str(j)] = rates["gbps_median"]
    window = reader.now() - started
    for i in indices:
        results[i]["link_gbps"] = link_rates(traffic_before[i], reader.read_link_traffic(i), window)
        results[i]["seconds"] = round(window, 3)
        devices[i].release()
    return progress


def link_rates(before: dict[int, dict[str, float | None]], after: dict[int, dict[str, float | None]],
               window_s: float) -> dict[str, float | None]:
    """{port: GB/s sent + received} between two traffic readings; None where NVML gave no count."""
    rates: dict[str, float | None] = {}
    for port, counts in after.items():
        moved, counted = 0.0, True
        for direction, value in counts.items():
            earlier = before.get(port, {}).get(direction)
            if value is None or earlier is None or value < earlier:
                counted = False
                break
            moved += value - earlier
        rates[str(port)] = round(moved / window_s / 1e9, 3) if counted and window_s > 0 else None
    return rates


PEER_COPY_SOURCE = "a pair of GPUs that cannot copy to each other has no NVLink path (links down, fabric not routing)"


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """The peer copies: the slowest against the SKU's figure, a copy that failed, what each link carried."""
    return peer_copy_checks(context.component, gpu["nvlink"], refs) if gpu.get("nvlink") else []


def peer_copy_checks(component: str, nvlink: dict[str, Any], refs: References) -> list[Check]:
    checks: list[Check] = []
    peers = nvlink.get("peer_gbps") or {}
    figure = (refs.sku or {}).get("nvlink_peer")
    if peers and figure:
        worst = min(peers, key=lambda peer: peers[peer])
        checks.append(compare("nvlink.peer_gbps", component, peers[worst], "<", figure["min_gbps"], "GB/s", figure["source"],
                              f"slowest peer copy: to gpu{worst} at {peers[worst]:.0f} GB/s"))
    for peer, error in sorted((nvlink.get("peer_errors") or {}).items()):
        checks.append(check("nvlink.peer_copy", component, "fail", error, None, "error", "raised", PEER_COPY_SOURCE,
                            f"copy to gpu{peer} failed: {error}"))
    traffic = [{"port": int(port), "gbps": gbps} for port, gbps in (nvlink.get("link_gbps") or {}).items()
               if gbps is not None]
    if len(traffic) >= 2:
        rule = refs.rules["link_traffic"]
        median = statistics.median(link["gbps"] for link in traffic)
        floor = round(median * rule["min_share_of_median"], 3)
        checks += per_link("nvlink.link_traffic", traffic, lambda link: link["gbps"], "<", floor, "GB/s", rule["source"],
                           lambda label, value: f"{label} carried {value:.1f} GB/s of the peer copies, the GPU's median "
                           f"link {median:.1f} GB/s", gpu_link(component), component)
    return checks
