"""`python -m probes run`: burn in one tray and judge it (the `run` document of docs/probe-output.md).

The order: read every GPU (identity, counters) and start collecting XIDs; run the load probes
one after another — GEMM on all GPUs at once, then memory bandwidth, then the NVLink copy
matrix; read every GPU again; judge. Counters are judged on the deltas between the readings.

`--duration` is the load time of the whole run, shared out 4 : 1 : 1 : 1 among gemm, membw,
nvlink and pulse (a probe run alone gets all of it). A probe past its timeout is stopped and reported
incomplete; what finished stays in the document. A GPU that fails under load is failed with
its reason while the others finish.
"""

from __future__ import annotations

import functools
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from probes import c2c_link, gemm, hbm_test, host_copy, membw, nvlink_bw, pulse, sustained_power
from probes.compute import DTYPES, ComputeDevice, DeviceError
from probes.compute.bounded import bounded_devices
from probes.gpu_deadline import COMPUTE_DEADLINE_S, NVML_DEADLINE_S
from probes.counters import gpu_window
from probes.exit_codes import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from probes.check_record import check
from probes.sku_references import load_references
from probes.tray_judge import judge_run, judge_switch_tray, worst_verdict
from probes.kernel_history import KernelLog, last_resets, recorded_by_gpu
from probes.nvswitch_sxids import recorded_sxids
from probes.kernel_log import NVLINK5_XIDS, attach_registers, driver_branch, parse_xid_lines
from probes.nvml_reader import NvmlReader, XidWatcher
from probes.probe_names import DEFAULT_DURATION_S, PROBES
from probes.snapshot import FORMAT
from probes.switch_reader import switch_window
from probes.under_load import LoadSampler
from probes.tray_depth import DepthReading
from probes.windows import window_length

if TYPE_CHECKING:
    from probes.backend import TrayBackend
    from probes.nvml_reader import GpuReading
    from probes.switch_reader import NvosSwitchReader, SimSwitchReader

LOAD_SHARE = {"gemm": 4, "membw": 1, "nvlink": 1, "pulse": 1}
UNSHARED = ("hbm",)  # runs its passes once, after the shared load: no share of --duration
TIMEOUT_SOURCE = "--timeout (default: twice the probe's share of --duration, plus 60 s)"


@dataclass
class RunOptions:
    duration_s: float = DEFAULT_DURATION_S
    probes: tuple = PROBES
    timeout_s: float | None = None  # per probe; None: twice its share of the duration + 60 s
    references: str | None = None
    gemm_n: int | None = None  # None: the device's own default size
    nvml_deadline_s: float = NVML_DEADLINE_S  # a GPU whose NVML reading takes longer is hung (probes.gpu_deadline)
    compute_deadline_s: float = COMPUTE_DEADLINE_S  # …and one whose compute call takes longer


@dataclass
class ProbeOutcome:
    results: dict = field(default_factory=dict)  # {gpu index: result}
    failed: dict = field(default_factory=dict)  # {gpu index: what went wrong on the GPU}
    unfinished: list = field(default_factory=list)  # GPU indices whose work did not end in time
    crashed: dict = field(default_factory=dict)  # {gpu index or "tray": error} — a bug, not the GPU
    timed_out: bool = False
    extra: dict = field(default_factory=dict)  # {gpu index: more fields of its entry}


def plan(probes: Iterable[str], duration_s: float) -> dict[str, float]:
    """Seconds of load for each selected load probe."""
    loads = [p for p in probes if p in LOAD_SHARE]
    total = sum(LOAD_SHARE[p] for p in loads)
    shares = {p: duration_s * LOAD_SHARE[p] / total for p in loads}
    return {**shares, **{p: 0.0 for p in UNSHARED if p in probes}}


def run_tasks(tasks: dict[Any, Callable[[dict[str, Any]], Any]], limit_s: float, stop: threading.Event,
              grace_s: float) -> ProbeOutcome:
    """Run {key: task(progress)} in threads; past `limit_s` set `stop`, give them `grace_s` to
    hand back what they have, and leave the ones that still hang (daemon threads) behind with
    the progress they recorded as their result."""
    outcome = ProbeOutcome()
    progress: dict[Any, dict[str, Any]] = {key: {} for key in tasks}

    def work(key: Any, task: Callable[[dict[str, Any]], Any]) -> None:
        try:
            outcome.results[key] = task(progress[key])
        except DeviceError as error:
            outcome.failed[key] = str(error)
        except Exception as error:  # a bug in a probe: the probe is incomplete, never a pass
            outcome.crashed[key] = f"{type(error).__name__}: {error}"

    threads = {key: threading.Thread(target=work, args=(key, task), daemon=True, name=f"probe-{key}")
               for key, task in tasks.items()}
    for thread in threads.values():
        thread.start()
    deadline = time.monotonic() + limit_s
    for thread in threads.values():
        thread.join(max(0.0, deadline - time.monotonic()))
    if any(thread.is_alive() for thread in threads.values()):
        outcome.timed_out = True
        stop.set()
        deadline = time.monotonic() + grace_s
        for thread in threads.values():
            thread.join(max(0.0, deadline - time.monotonic()))
    outcome.unfinished = [key for key, thread in threads.items() if thread.is_alive()]
    for key in outcome.unfinished:
        if progress[key]:
            outcome.results[key] = progress[key]
    return outcome


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class TrayRun:
    def __init__(self, backend: TrayBackend, options: RunOptions | None = None) -> None:
        self.backend = backend
        self.options = options or RunOptions()
        self.plan = plan(self.options.probes, self.options.duration_s)
        self.hung = False  # a probe thread never came back: the caller must not wait for it
        self._depth: DepthReading | None = None  # the run's tray-depth readings, once it has begun

    def limit(self, seconds: float) -> float:
        return self.options.timeout_s if self.options.timeout_s is not None else 2 * seconds + 60

    def execute(self) -> tuple[dict[str, Any], int]:
        """(document, exit code)."""
        started, clock_start = utc_now(), time.monotonic()
        document: dict[str, Any] = {"format": FORMAT, "kind": "run", "tray": self.backend.tray, "hostname": socket.gethostname(),
                    "backend": self.backend.kind, "started": started, "finished": None, "duration_s": None,
                    "status": "complete", "system": {}, "probes": {}, "gpus": [], "checks": [], "skipped": [],
                    "errors": []}
        if self.backend.switch is not None:
            self._switch_tray(document, self.backend.switch)
        else:
            self._compute_tray(document)
        document["finished"] = utc_now()
        document["duration_s"] = round(time.monotonic() - clock_start, 3)
        every_check = document["checks"] + [c for gpu in document["gpus"] for c in gpu["checks"]]
        incomplete = any(p["status"] != "complete" for p in document["probes"].values()) or \
            worst_verdict(every_check) == "incomplete"
        document["status"] = "incomplete" if incomplete else "complete"
        if incomplete:
            return document, EXIT_INCOMPLETE
        return document, EXIT_FAILED if any(c["verdict"] == "fail" for c in every_check) else EXIT_OK

    # --- a compute tray ------------------------------------------------------------------------------
    def _compute_tray(self, document: dict[str, Any]) -> None:
        backend, options = self.backend, self.options
        assert backend.nvml is not None  # open_backend gives a GPU tray its NVML, a switch tray its reader
        # First: a tray that cannot load fails fast. Each GPU's compute calls run on its own worker
        # under a deadline, so a wedged GPU fails alone and the others' loads finish.
        devices, compute = bounded_devices(backend.open_devices() if self.plan else {}, options.compute_deadline_s)
        reader = NvmlReader(backend.nvml, now=backend.clock.now, deadline_s=options.nvml_deadline_s)
        # XIDs from the start: the window opens before the first reading, not after it.
        started = backend.clock.now()
        watcher = XidWatcher(backend.nvml, reader.handles, workers=reader.workers).start() if "counters" in options.probes else None
        document["system"] = reader.system()
        before = reader.read_all()
        gpu_name = next((r.name for r in before if r.name), None)
        device_id = next((r.pci_device_id for r in before if r.pci_device_id), None)
        refs = load_references(gpu_name, options.references, device_id=device_id)
        document["system"]["references"] = refs.sku_source
        if refs.sku is None:
            document["skipped"].append({"component": "tray", "what": "reference figures",
                                        "reason": f"no reference file for {gpu_name!r} (PCI device {device_id}): throughput is judged against "
                                                  f"the tray's other GPUs only"})
        gpus = [self._gpu_entry(reading) for reading in before]
        if watcher:  # what the GPUs logged before the watch opened: the state they arrive in
            history = backend.kernel_history(started)  # read once: the GPUs' XIDs and, on HGX, the switches' SXids
            self._read_recorded_xids(gpus, before, history, document["system"].get("driver_version"))
            nvswitch = recorded_sxids(history, refs)
            if nvswitch is not None:
                document["nvswitch"] = nvswitch
        # Kept on the run: the host copies read each GPU's host link as they run.
        self._depth = DepthReading(backend.nvml, reader.handles, before, document["system"], backend.clock.now,
                                   options.probes, reader.workers)
        self._load(document, gpus, devices, reader)
        after = reader.read_all(identity=False)
        self._depth.finish(gpus)
        events = watcher.stop() if watcher else []
        self._decode_nvlink5_xids(document, events, before, started)
        for gpu, first, last in zip(gpus, before, after):
            gpu["after"] = last.to_dict()
            gpu["lost"] = first.lost or last.lost
            gpu["hung"] = first.hung or last.hung
            if gpu["hung"]:
                gpu["hung_reason"] = (first if first.hung else last).errors.get("deadline")
                gpu["hung_deadline_s"] = reader.workers.deadline_s
            if gpu["lost"]:
                gpu["lost_reason"] = next((f["error"] for f in gpu["failures"]), "the GPU stopped answering NVML (GPU_IS_LOST)")
            if watcher:
                gpu["counters"] = gpu_window(first, last, [e for e in events if e["gpu"] == gpu["index"]])
                gpu["c2c"] = c2c_link.window(first, last)
                if gpu.get("pulse"):
                    gpu["pulse"]["xids"] = pulse.xids_during(gpu["pulse"], gpu["counters"]["xids"])
            for dtype, result in (gpu.get("gemm") or {}).items():
                if "skipped" in result:
                    document["skipped"].append({"component": f"gpu{gpu['index']}", "what": f"gemm.{dtype}",
                                                "reason": result["skipped"]})
        document["errors"] += [entry["error"] for entry in (watcher.errors if watcher else [])]
        document["gpus"] = gpus
        # A call still stuck in a wedged GPU's driver: the process must not wait for it at exit.
        self.hung = self.hung or any(map(reader.workers.stuck, range(reader.count))) or \
            any(map(compute.stuck, devices))
        judge_run(document, refs)
        for gpu in gpus:
            for unfinished in gpu.pop("incomplete"):
                gpu["checks"].append(check(f"{unfinished['probe']}.finished", f"gpu{gpu['index']}", "incomplete", None,
                                           None, "", "", unfinished["source"], unfinished["reason"]))

    def _load(self, document: dict[str, Any], gpus: list[dict[str, Any]], devices: dict[int, ComputeDevice],
              reader: NvmlReader) -> None:
        """The load probes one after another, each on the GPUs that have not failed or hung."""
        if not self.plan:
            self.backend.clock.sleep(self.options.duration_s)  # counters alone: a window of --duration
            return
        for index, gpu in enumerate(gpus):
            if index not in devices:
                gpu["incomplete"].append({"probe": "load", "reason": "the GPU is not visible to the compute backend "
                                          "(CUDA_VISIBLE_DEVICES, or CUDA cannot open it)",
                                          "source": "a GPU the load probes cannot reach is not judged a pass"})
        runners = {"gemm": self._gemm, "membw": self._membw, "nvlink": self._nvlink, "pulse": self._pulse, "hbm": self._hbm}
        for probe, seconds in self.plan.items():
            alive = {i: d for i, d in devices.items()
                     if not gpus[i]["failures"] and not gpus[i]["incomplete"] and not gpus[i]["hung"]}
            began = time.monotonic()
            outcome = runners[probe](alive, seconds, reader) if alive else ProbeOutcome()
            self._record(document, gpus, probe, seconds, outcome, time.monotonic() - began)

    def _decode_nvlink5_xids(self, document: dict[str, Any], events: list[dict[str, Any]], readings: list[GpuReading],
                             started: float) -> None:
        """NVLink 5 XIDs (144-150) get their kernel log line's registers, which decide their
        severity (NVIDIA's XID catalog); where the log cannot be read, say so."""
        if not any(event["xid"] in NVLINK5_XIDS for event in events):
            return
        lines, why = self.backend.kernel_log(started)
        if why:
            document["skipped"].append({"component": "tray", "what": "kernel log (XID 144-150 sub-codes)",
                                        "reason": f"{why}: each NVLink 5 XID is judged by its most severe catalog row"})
            return
        attach_registers(events, parse_xid_lines(lines), {r.index: r.pci_bus_id for r in readings if r.pci_bus_id},
                         document["system"].get("driver_version"))

    def _read_recorded_xids(self, gpus: list[dict[str, Any]], readings: list[GpuReading], history: KernelLog,
                            driver_version: str | None) -> None:
        found, why = recorded_by_gpu(history, readings)
        resets = last_resets(history[0], {r.index: r.uuid for r in readings if r.uuid}) if not why else {}
        driver_major = driver_branch(driver_version)
        for gpu in gpus:
            events = (found or {}).get(gpu["index"], [])
            for event in events:
                event["driver_major"] = driver_major
            gpu["recorded_xids"] = {"events": events, "unread": why, "reset": resets.get(gpu["index"])}

    @staticmethod
    def _gpu_entry(reading: GpuReading) -> dict[str, Any]:
        return {
            "index": reading.index, "id_hint": f"gpu{reading.index}", "uuid": reading.uuid, "name": reading.name,
            "serial": reading.serial, "pci_bus_id": reading.pci_bus_id, "pci_device_id": reading.pci_device_id,
            "platform": reading.platform,
            "vbios": reading.vbios, "inforom": reading.inforom, "lost": reading.lost, "hung": reading.hung,
            "before": reading.to_dict(), "failures": [], "incomplete": [],
        }

    def _record(self, document: dict[str, Any], gpus: list[dict[str, Any]], probe: str, seconds: float, outcome: ProbeOutcome,
                took: float) -> None:
        for index, result in outcome.results.items():
            gpus[index][probe] = result
        for index, fields in outcome.extra.items():
            gpus[index].update(fields)
        for index, error in outcome.failed.items():
            gpus[index]["failures"].append({"probe": probe, "error": error})
        for index in outcome.unfinished:
            gpus[index]["incomplete"].append({"probe": probe, "source": TIMEOUT_SOURCE, "reason": f"{probe} did not "
                                              f"finish within its {self.limit(seconds):.0f} s timeout (the GPU or its "
                                              f"driver hangs?)"})
            self.hung = True
        error = None
        if outcome.timed_out:
            error = f"stopped at its {self.limit(seconds):.0f} s timeout"
        if outcome.crashed:
            error = "; ".join(f"{'gpu' if isinstance(k, int) else ''}{k}: {e}" for k, e in outcome.crashed.items())
        status = "incomplete" if error else "complete"
        document["probes"][probe] = {"status": status, "duration_s": round(took, 3), "planned_s": round(seconds, 3),
                                     "error": error}
        if error:
            document["checks"].append(check(f"probe.{probe}", "tray", "incomplete", round(took, 3), self.limit(seconds),
                                            "seconds", ">", TIMEOUT_SOURCE, f"{probe}: {error}"))

    # --- the load probes ----------------------------------------------------------------------------
    def _gemm(self, devices: dict[int, ComputeDevice], seconds: float, reader: NvmlReader) -> ProbeOutcome:
        window = window_length(seconds / len(DTYPES))
        stop = threading.Event()
        # Energy and violation counters at the load's start and end: the whole load judged, not samples.
        started = reader.read_power_window_each(list(devices))
        sampler = LoadSampler(reader, devices, window).start()

        ended: dict[int, GpuReading] = {}

        def burn_all_dtypes(index: int, device: ComputeDevice, progress: dict[str, Any]) -> dict[str, Any]:
            try:
                supported = [d for d in DTYPES if device.unsupported_reason(d) is None]
                for dtype in DTYPES:
                    if stop.is_set():
                        progress[dtype] = {"skipped": "not run: gemm was stopped at its timeout"}
                        continue
                    n = self.options.gemm_n or device.default_gemm_n
                    share = seconds / max(1, len(supported))
                    progress[dtype] = {}
                    gemm.burn(device, dtype, share, n, window, stop, progress=progress[dtype])
                return progress
            finally:  # its own load's end, not the slowest sibling's: a GPU that waits idle is not judged under load
                sampler.done(index)
                ended.update(reader.read_power_window_each([index]))

        outcome = run_tasks({i: functools.partial(burn_all_dtypes, i, d) for i, d in devices.items()},
                            self.limit(seconds), stop, grace_s=2 * window + 1)
        ended = {**reader.read_power_window_each([i for i in devices if i not in ended]), **ended}
        outcome.extra = {index: {"under_load": summary,
                                 "sustained_power": sustained_power.window(started[index], ended[index])}
                         for index, summary in sampler.stop().items()}
        return outcome

    def _membw(self, devices: dict[int, ComputeDevice], seconds: float, reader: NvmlReader) -> ProbeOutcome:
        window = window_length(seconds)
        stop = threading.Event()
        host = {}  # the pinned host↔device copies (probes/host_copy.py), after each GPU's own copies

        def copies(index: int, device: ComputeDevice, progress: dict) -> dict:
            result = membw.measure(device, seconds, device.default_copy_bytes, window, stop, progress)
            depth = self._depth
            host[index] = host_copy.measure(device, while_copying=(lambda: depth.read_during_copies(index)) if depth else None)
            return result

        outcome = run_tasks({i: functools.partial(copies, i, d) for i, d in devices.items()},
                            self.limit(seconds), stop, grace_s=2 * window + 1)
        outcome.extra = {index: {"host_copy": found} for index, found in host.items()}
        return outcome

    def _hbm(self, devices: dict[int, ComputeDevice], seconds: float, reader: NvmlReader) -> ProbeOutcome:
        stop = threading.Event()
        return run_tasks({i: functools.partial(hbm_test.run, d, stop) for i, d in devices.items()},
                         self.limit(seconds), stop, grace_s=5.0)

    def _nvlink(self, devices: dict[int, ComputeDevice], seconds: float, reader: NvmlReader) -> ProbeOutcome:
        window = window_length(seconds / max(1, len(devices) * (len(devices) - 1)))
        stop = threading.Event()
        return self._tray_task(devices, lambda progress: nvlink_bw.measure(devices, reader, seconds, window, stop, progress),
                               self.limit(seconds), stop, grace_s=2 * window + 1)

    def _pulse(self, devices: dict[int, ComputeDevice], seconds: float, reader: NvmlReader) -> ProbeOutcome:
        stop = threading.Event()
        clock = self.backend.clock
        return self._tray_task(devices, lambda progress: pulse.run(devices, reader.read_under_load_each, clock.sleep,
                                                                   clock.now, seconds, stop, progress),
                               self.limit(seconds), stop, grace_s=4 * pulse.STEP_S + 1)

    @staticmethod
    def _tray_task(devices: dict[int, ComputeDevice], task: Callable[[dict[str, Any]], Any], limit_s: float,
                   stop: threading.Event, grace_s: float) -> ProbeOutcome:
        """A probe that drives every GPU of the tray from one task, which returns
        {"results": {index: …}, "failures": {index: error}}."""
        holder = run_tasks({"tray": task}, limit_s, stop, grace_s=grace_s)
        outcome = ProbeOutcome(timed_out=holder.timed_out, crashed=holder.crashed)
        found = holder.results.get("tray") or {}
        outcome.results, outcome.failed = found.get("results", {}), found.get("failures", {})
        if holder.unfinished:
            outcome.unfinished = list(devices)
        return outcome

    # --- a switch tray -----------------------------------------------------------------------------------
    def _switch_tray(self, document: dict[str, Any], switch: SimSwitchReader | NvosSwitchReader) -> None:
        document["system"] = {"switch_tray": True, "supported": switch.supported}
        if not switch.supported:
            document["switch"] = {"supported": False, "reason": switch.reason}
            document["skipped"].append({"component": "tray", "what": "switch ports", "reason": switch.reason})
            return
        refs = load_references(None, self.options.references)
        began = time.monotonic()
        before = switch.read()
        self.backend.clock.sleep(self.options.duration_s)  # the compute trays' load runs meanwhile
        after = switch.read()
        links = switch_window(before, after)
        window = after["time"] - before["time"]
        document["switch_links"] = links
        document["probes"]["switch_counters"] = {"status": "complete", "duration_s": round(time.monotonic() - began, 3),
                                                 "planned_s": self.options.duration_s, "error": None}
        document["checks"] += judge_switch_tray(links, window, refs)
