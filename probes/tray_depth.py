"""The checks of a GPU's tray-depth sections (DCGM diagnostic levels 3-4): its configuration,
its host link and the HBM memory test, with the ECC, row-remap and retired-page counters of
the same run named beside the memory test's errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from probes import c2c_link, configuration, host_copy, host_links, pulse, sustained_power, thermal_margins
from probes.gpu_deadline import GpuHung, GpuWorkers
from probes.judge import References, check, compare


def depth_checks(gpu: dict[str, Any], refs: References) -> list[dict[str, Any]]:
    component = f"gpu{gpu['index']}"
    found: list[dict[str, Any]] = []
    if gpu.get("configuration"):
        found += configuration.checks(component, gpu["configuration"], refs.rules)
    if gpu.get("host_link"):
        found += host_links.checks(component, gpu["host_link"], refs.rules,
                                   required=(refs.sku or {}).get("host_link") == "pcie")
    if gpu.get("host_copy"):  # judged against the PCIe link the configuration reading read
        found += host_copy.checks(component, gpu["host_copy"], gpu.get("host_link"), refs.rules)
    if gpu.get("hbm"):
        found += hbm_checks(component, gpu["hbm"], gpu.get("counters") or {}, refs.rules)
    if "counters" in gpu and not (gpu.get("lost") or gpu.get("hung")):  # read with the counters, before and after
        found += c2c_link.checks(component, gpu.get("c2c"), refs, required=(refs.sku or {}).get("host_link") == "c2c")
    return found + sustained_power.checks(component, gpu, refs) + pulse.checks(component, gpu, refs) + \
        thermal_margins.checks(component, gpu, refs)


def hbm_checks(component: str, hbm: dict[str, Any], counters: dict[str, Any], rules: dict[str, Any]) -> list[dict[str, Any]]:
    rule = rules["hbm_test"]
    if not hbm.get("patterns"):
        return [check("hbm.errors", component, "incomplete", None, 0, "wrong words", ">", rule["source"],
                      "the memory test ran no pattern")]
    ran = ", ".join(hbm["patterns"])
    coverage = hbm.get("coverage") or 0.0
    tested_gib = (hbm.get("tested_bytes") or 0) / 2**30
    found = [compare("hbm.coverage", component, coverage, "<", rule["min_coverage"], "of free memory",
                     rule["coverage_source"], f"{tested_gib:.1f} GiB of {(hbm.get('free_bytes') or 0) / 2**30:.1f} GiB "
                     f"free tested with {ran}", bad="incomplete")]
    if not hbm.get("finished"):
        found.append(check("hbm.finished", component, "incomplete", ran, None, "patterns", "unfinished", rule["source"],
                           f"the memory test stopped after {ran}"))
    errors = hbm.get("errors") or 0
    where = "; ".join(f"{start / 2**30:.3f}–{end / 2**30:.3f} GiB" for start, end in hbm.get("error_ranges") or [])
    found.append(compare("hbm.errors", component, errors, ">", 0, "wrong words", rule["source"],
                         (f"{errors} words read back wrong at {where}" if errors else f"every word read back as written ({ran})")
                         + _memory_counters(counters)))
    return found


def _memory_counters(counters: dict[str, Any]) -> str:
    """The run's ECC and remap counters, which say whether ECC saw what the test found."""
    ecc = counters.get("ecc") or {}
    rows = counters.get("remapped_rows")
    parts = [f"{ecc[key]} {key.split('_')[0]}" for key in ("corrected_volatile", "uncorrected_volatile") if key in ecc]
    if rows is not None:
        parts.append(f"rows remapped {rows.get('corrected', 0)} + {rows.get('uncorrected', 0)}"
                     f"{', remap pending' if rows.get('pending') else ''}")
    return f"; in the same run: ECC {', '.join(parts)}" if parts else "; ECC counters not read in this run"


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
        if "configuration" not in probes:
            return
        by_index = {r.index: r for r in readings if handles[r.index] is not None and not (r.lost or r.hung)}

        def read(index: int) -> tuple[dict[str, Any], host_links.Link]:
            handle = handles[index]
            return configuration.read(nvml, handle, by_index[index], system), host_links.read(nvml, handle, now)

        for index, found in workers.call_each(list(by_index), "configuration reading", read).items():
            if not isinstance(found, GpuHung):  # a hung GPU is named by the readings that follow
                self.configs[index], self.links[index] = found

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
                gpu["host_link"] = host_links.window(self.links[index], end)
