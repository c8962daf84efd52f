"""NVLink bandwidth inside the tray: the GPU-to-GPU copy matrix, and what each link carried.

Pairs are copied one at a time (GPU i to GPU j, one direction), so each figure is that pair's
alone. Around the whole matrix, NVML's per-link byte counters say how the copies spread over
each GPU's links: a copy stripes across every active link, so a degraded link carries less
than its siblings even when the pair's total looks fine.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from probes.compute import DeviceError
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
