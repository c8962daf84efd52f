"""Memory bandwidth: device-to-device copies on one GPU, timed in windows.

Bytes are counted read + written (2 × the buffer per copy), as the H200 copy figure measured
for opsctl's references (about 4.3 TB/s; docs/sources.md) counts them, so the two compare directly.
Its check family (`gpu_checks`): the figure against the SKU's and the tray's median.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from probes.check_record import Check, GpuContext
from probes.peer_throughput import throughput_checks
from probes.sku_references import References
from probes.windows import rate_summary, timed_windows

if TYPE_CHECKING:
    from probes.compute import ComputeDevice


def measure(device: ComputeDevice, seconds: float, nbytes: int, window_s: float, stop: threading.Event,
            progress: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `membw` result of docs/probe-output.md; `progress` as in gemm.burn."""
    progress = {} if progress is None else progress

    def record(windows: list[tuple[int, float]], finished: bool = False) -> None:
        summary = rate_summary([2 * nbytes * iterations / took / 1e9 for iterations, took in windows], "gbps")
        progress.update({
            "gbps": summary.pop("gbps_median"),
            **summary,
            "bytes": 2 * nbytes * sum(iterations for iterations, _ in windows),
            "buffer_bytes": nbytes,
            "counting": "bytes read + written",
            "seconds": round(sum(took for _, took in windows), 3),
            "finished": finished,
        })

    per_iteration = device.copy(nbytes, 1)  # allocates the buffers; not a window
    windows = timed_windows(lambda iterations: device.copy(nbytes, iterations), seconds, window_s, stop, per_iteration,
                            on_window=record)
    device.release()
    record(windows, finished=True)
    return progress


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """membw.gbps against the SKU's figure and the tray's median."""
    if not gpu.get("membw") or gpu["membw"].get("gbps") is None:
        return []
    return throughput_checks(context.component, "membw.gbps", gpu["membw"]["gbps"], "GB/s", refs.sku and refs.sku.get("membw"),
                             "min_gbps", context.peer_medians.get("membw"), refs, "device-to-device copy")
