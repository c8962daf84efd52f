"""The readings of a GPU's tray-depth sections (DCGM diagnostic levels 3-4) taken around the run:
its configuration and its host link (probes/configuration.py, probes/host_links.py judge them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from probes import configuration, host_links
from probes.gpu_deadline import GpuHung, GpuWorkers


class DepthReading:
    """Reads the configuration and host link of every GPU NVML hands out, at the start of the run,
    and the host link again at its end (its replays and AER errors are judged over the run). Each
    GPU's calls run on its NVML worker under the reader's deadline (probes/gpu_deadline.py), so a
    GPU that hangs in one costs one deadline, and its later readings name it hung."""

    def __init__(self, nvml: Any, handles: Sequence[Any], readings: Sequence[Any], system: dict[str, Any],
                 now: Callable[[], float], probes: Sequence[str], workers: GpuWorkers) -> None:
        self.nvml, self.handles, self.now, self.workers = nvml, handles, now, workers
        self.configs: dict[int, dict[str, Any]] = {}
        self.links: dict[int, host_links.Link] = {}
        self.under_copies: dict[int, host_links.Link] = {}  # read while the host copies ran (read_during_copies)
        if "configuration" not in probes:
            return
        by_index = {r.index: r for r in readings if handles[r.index] is not None and not (r.lost or r.hung)}

        def read(index: int) -> tuple[dict[str, Any], host_links.Link]:
            handle = handles[index]
            return configuration.read(nvml, handle, by_index[index], system), host_links.read(nvml, handle, now)

        for index, found in workers.call_each(list(by_index), "configuration reading", read).items():
            if not isinstance(found, GpuHung):  # a hung GPU is named by the readings that follow
                self.configs[index], self.links[index] = found

    def read_during_copies(self, index: int) -> None:
        """Read the GPU's host link now, while its pinned host copies run (probes/host_copy.py):
        the reading its generation and width are judged from, as DCGM's pcie plugin reads them
        under its copies. A GPU that hangs here is named by the readings that follow."""
        if index not in self.links:
            return
        try:
            self.under_copies[index] = self.workers.call(index, "host link reading", host_links.read, self.nvml,
                                                         self.handles[index], self.now)
        except GpuHung:
            pass

    def finish(self, gpus: list[dict[str, Any]]) -> None:
        """Fill in each GPU entry's `configuration` and `host_link`."""
        wanted = [gpu["index"] for gpu in gpus if gpu["index"] in self.configs and not (gpu.get("lost") or gpu.get("hung"))]
        ends = self.workers.call_each(wanted, "host link reading",
                                      lambda index: host_links.read(self.nvml, self.handles[index], self.now))
        for gpu in gpus:
            index = gpu["index"]
            if index not in wanted:
                continue
            gpu["configuration"] = self.configs[index]
            end = ends[index]
            if not isinstance(end, GpuHung):
                gpu["host_link"] = host_links.window(self.links[index], end, self.under_copies.get(index))
