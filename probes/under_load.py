"""Clocks, power and temperature sampled while a load runs — once a window, not in a tight loop."""

from __future__ import annotations

import statistics
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probes.nvml_reader import GpuReading, NvmlReader


class LoadSampler:
    def __init__(self, reader: NvmlReader, indices: Iterable[int], interval_s: float) -> None:
        self.reader = reader
        self.indices = list(indices)
        self.interval_s = interval_s
        self.samples: dict[int, list[GpuReading]] = {i: [] for i in self.indices}
        self._active = set(self.indices)  # GPUs still under load: one whose load ended is not sampled idle
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-sampler", daemon=True)

    def start(self) -> LoadSampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            # All GPUs at once, each on its own NVML worker: a hung one costs one deadline, not a stalled round.
            for index, reading in self.reader.read_under_load_each(sorted(self._active)).items():
                if not (reading.lost or reading.hung):
                    self.samples[index].append(reading)

    def done(self, index: int) -> None:
        """The GPU's load ended (finished, or failed): its later samples would be idle, not load."""
        self._active.discard(index)

    def stop(self) -> dict[int, dict[str, Any]]:
        """{index: summary of the samples} (docs/probe-output.md `under_load`)."""
        self._stop.set()
        self._thread.join(timeout=10)
        return {index: summarize(samples) for index, samples in self.samples.items()}


def summarize(samples: list[GpuReading]) -> dict[str, Any]:
    def values(name: str) -> list[Any]:
        return [getattr(s, name) for s in samples if getattr(s, name) is not None]

    temperatures, power, clocks = values("temperature_c"), values("power_w"), values("sm_clock_mhz")
    memory, margins = values("memory_temperature_c"), values("thermal_margin_c")
    reasons = sorted({r for s in samples for r in (s.clocks_event_reasons or []) if r != "gpu_idle"})
    return {
        "samples": len(samples),
        "temperature_c_max": max(temperatures) if temperatures else None,
        "power_w_median": round(statistics.median(power), 1) if power else None,
        "sm_clock_mhz_median": statistics.median(clocks) if clocks else None,
        "clocks_event_reasons": reasons,
        "memory_temperature_c_max": max(memory) if memory else None,
        "thermal_margin_c_min": min(margins) if margins else None,  # the closest it came to slowing down
    }
