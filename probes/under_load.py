"""Clocks, power and temperature sampled while a load runs — once a window, not in a tight loop.
Its check family (`gpu_checks`): no throttling reason that fails under load, and a temperature read."""

from __future__ import annotations

import statistics
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from probes.check_record import Check, GpuContext, check
from probes.sku_references import References

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
    """The hottest and closest-to-slowdown of every sample; the median power and SM clock of the
    samples the GPU was computing in. A sample NVML flags gpu_idle (nvmlClocksEventReasonGpuIdle:
    nothing running, clocks dropping to idle) — before the first kernel, between a load's phases
    — says nothing of the clocks the load held: with a few samples one such would halve a median."""
    computing = [s for s in samples if "gpu_idle" not in (s.clocks_event_reasons or [])]

    def values(name: str, among: list[GpuReading] = samples) -> list[Any]:
        return [getattr(s, name) for s in among if getattr(s, name) is not None]

    temperatures, power, clocks = values("temperature_c"), values("power_w", computing), values("sm_clock_mhz", computing)
    memory, margins = values("memory_temperature_c"), values("thermal_margin_c")
    reasons = sorted({r for s in samples for r in (s.clocks_event_reasons or []) if r != "gpu_idle"})
    return {
        "samples": len(samples),
        "idle_samples": len(samples) - len(computing),
        "temperature_c_max": max(temperatures) if temperatures else None,
        "power_w_median": round(statistics.median(power), 1) if power else None,
        "sm_clock_mhz_median": statistics.median(clocks) if clocks else None,
        "clocks_event_reasons": reasons,
        "memory_temperature_c_max": max(memory) if memory else None,
        "thermal_margin_c_min": min(margins) if margins else None,  # the closest it came to slowing down
    }


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """Throttling under load, and a temperature that could not be read (gpu.lost or gpu.hung fail
    a GPU that stopped answering already)."""
    if not gpu.get("under_load") or gpu.get("lost") or gpu.get("hung"):
        return []
    return under_load_checks(context.component, gpu["under_load"], refs)


def under_load_checks(component: str, under_load: dict[str, Any], refs: References) -> list[Check]:
    rule = refs.rules["clocks_event_reasons"]
    seen = under_load.get("clocks_event_reasons") or []
    bad = [reason for reason in seen if reason in rule["fail"]]
    reason = (f"clocks held down under load by {', '.join(bad)} (max {under_load.get('temperature_c_max')} °C, "
              f"SM clock median {under_load.get('sm_clock_mhz_median')} MHz)" if bad
              else f"no throttling under load ({', '.join(seen) or 'no clock event reasons'})")
    checks = [check("under_load.clocks_event_reasons", component, "fail" if bad else "pass", bad, rule["fail"],
                    "clock event reasons", "any of", rule["source"], reason)]
    if under_load.get("temperature_c_max") is None and refs.sku is not None:
        # Every GPU model with a reference file reports its temperature: without it the rack
        # cannot tell a hot GPU from its siblings.
        checks.append(check("under_load.temperature", component, "incomplete", None, None, "°C", "unread",
                            "NVML nvmlDeviceGetTemperatureV / nvmlDeviceGetTemperature (NVML_TEMPERATURE_GPU)",
                            "the GPU's temperature could not be read under load (neither NVML call answered)"))
    return checks
