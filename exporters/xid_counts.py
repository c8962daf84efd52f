"""XIDs as counters: an XidWatcher runs for the exporter's whole life, and every event it
delivers adds one to its GPU's count for that code and moves the code's last-seen time.

dcgm-exporter publishes the last XID as a gauge, which sticks at the old code and hides a
second event of the same code; a counter per code shows every event, `increase()` works on it,
and a restart of the exporter is a counter reset Prometheus already understands.

A code has a counter only once the GPU has logged it: 172 catalog codes at 0 on every GPU were a
third of a rack's series and carried nothing. Each GPU's total over every code starts at 0, so
"any XID" is an increase Prometheus sees from the first event (docs/alerting.md: querying them).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from probes.nvml_reader import XidWatcher

if TYPE_CHECKING:
    from probes.gpu_deadline import GpuWorkers


class XidCounts:
    def __init__(self, nvml: Any, handles: Sequence[Any], poll_ms: int = 200,
                 workers: GpuWorkers | None = None) -> None:
        self._watcher = XidWatcher(nvml, handles, poll_ms=poll_ms, workers=workers)
        self._lock = threading.Lock()
        self._gpus = len(handles)
        # (gpu index, xid) -> [count, last seen unix time]: only the codes a GPU logged
        self._counts: dict[tuple[int, int], list[Any]] = {}
        self.watch_errors = 0
        self.unattributed = 0  # events NVML delivered for a device the watcher could not name

    def start(self) -> XidCounts:
        self._watcher.start()
        return self

    def stop(self) -> None:
        self._watcher.stop()

    @property
    def running(self) -> bool:
        return self._watcher.alive

    def _take_new(self) -> None:
        """Move what the watcher collected since last time into the counts (draining it keeps
        its lists from growing for as long as the exporter runs)."""
        new, errors = self._watcher.drain()
        self.watch_errors += sum(error.get("repeats", 1) for error in errors)
        for event in new:
            if event["gpu"] is None:
                self.unattributed += 1
                continue
            entry = self._counts.setdefault((event["gpu"], event["xid"]), [0, None])
            entry[0] += 1
            entry[1] = event["time"]

    def snapshot(self) -> dict[int, dict[int, tuple[int, float | None]]]:
        """{gpu index: {xid: (count, last seen or None)}}; safe to call from any scrape."""
        with self._lock:
            self._take_new()
            by_gpu: dict[int, dict[int, tuple[int, float | None]]] = {gpu: {} for gpu in range(self._gpus)}
            for (gpu, code), (count, last) in self._counts.items():
                by_gpu.setdefault(gpu, {})[code] = (count, last)
            return by_gpu
