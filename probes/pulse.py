"""The pulse test: load steps on and off on every GPU of the tray at once, to see that the
power delivery holds them — as DCGM's pulse test does. DCGM's pulse test is closed source (its
public strings name only total_iterations, test_duration and patterns), so this one judges only
what NVIDIA publishes a meaning for: NVML's clocks-event reasons read during and right after the
steps. HW Power Brake Slowdown is "an indicator of External Power Brake Assertion being triggered
(e.g. by the system power supply)" (NVML API reference, nvmlClocksEventReasons): a tray whose
power shelf cannot follow the steps brakes its GPUs. The power of each step is read and reported,
not judged: a 1 s step is far shorter than the 30 s DCGM's targeted power takes to reach its
target (sustained_power judges power on the long GEMM load). A GPU lost or an XID during the
steps is judged by the run's own checks (gpu.lost, pulse.device, the XID catalog), whose window
holds the steps; the section lists the XIDs that came during them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from probes.compute import DTYPES, ComputeDevice, DeviceError
from probes.check_record import Check, GpuContext, check
from probes.sku_references import References

READ_AT = 0.8  # of a load step: when it is read
STEP_S = 1.0  # one load step, and one idle step: NVML's power reading averages over 1 s (nvmlDeviceGetPowerUsage)
MIN_CYCLES = 2  # a step up and down at least twice, however short the run
BRAKE = "hw_power_brake_slowdown"
SLOWDOWN = "hw_slowdown"

Reader = Callable[[list[int]], dict[int, Any]]  # NvmlReader.read_under_load_each


def cycles_for(seconds: float) -> int:
    """Load-and-idle cycles of STEP_S each that fit the pulse test's share of the run."""
    return max(MIN_CYCLES, int(seconds // (2 * STEP_S)))


def run(devices: dict[int, ComputeDevice], read: Reader, sleep: Callable[[float], None], now: Callable[[], float],
        seconds: float, stop: threading.Event, progress: dict[str, Any]) -> dict[str, Any]:
    """{"results": {index: the GPU's `pulse` section}, "failures": {index: error}}; `progress`
    holds the same while it runs (a timed-out pulse keeps the steps it made)."""
    results: dict[int, dict[str, Any]] = {}
    failures: dict[int, str] = {}
    progress.update({"results": results, "failures": failures})
    loads: dict[int, tuple[ComputeDevice, Any, Any, int]] = {}
    for index, device in devices.items():
        try:
            loads[index] = _prepare(device)
        except DeviceError as error:
            failures[index] = str(error)
    began = now()
    cycles = cycles_for(seconds)
    for index in loads:
        results[index] = {"step_s": STEP_S, "cycles_planned": cycles, "cycles_run": 0, "steps": [],
                          "started": round(began, 3), "finished": False}
    with ThreadPoolExecutor(max_workers=max(1, len(loads)), thread_name_prefix="pulse") as pool:
        for cycle in range(cycles):
            if stop.is_set() or not loads:
                break
            # Every GPU steps up at once: the tray's power shelf sees the whole step.
            running = {index: pool.submit(_step, *load) for index, load in loads.items()}
            # The loaded step is read while it runs, near its end: read after it, a busy host's
            # delay would put the reading in the idle that follows (the power averages the last second).
            wait(running.values(), timeout=STEP_S * READ_AT)
            loaded = read(list(loads)), now()
            for index, future in running.items():
                try:
                    future.result()
                except DeviceError as error:
                    failures[index] = str(error)
                    del loads[index]
            _record(loaded, list(loads), results, cycle, "on", began)
            sleep(STEP_S)
            _record((read(list(loads)), now()), list(loads), results, cycle, "off", began)
            for index in loads:
                results[index]["cycles_run"] = cycle + 1
    for index, section in results.items():
        section["seconds"] = round(now() - began, 3)
        section["finished"] = index in loads and section["cycles_run"] == cycles
    return progress


def _prepare(device: ComputeDevice) -> tuple[ComputeDevice, Any, Any, int]:
    """The GEMM of a load step, and how many of them fill STEP_S (timed once: it warms up too)."""
    dtype = next((d for d in DTYPES if device.unsupported_reason(d) is None), DTYPES[0])
    ops = device.gemm_operands(dtype, device.default_gemm_n, seed=0)
    golden = device.matmul(ops)
    _, _, took = device.matmul_checked(ops, golden, 1)
    return device, ops, golden, max(1, round(STEP_S / took)) if took > 0 else 1


def _step(device: ComputeDevice, ops: Any, golden: Any, iterations: int) -> None:
    device.matmul_checked(ops, golden, iterations)


def _record(sample: tuple[dict[int, Any], float], indices: list[int], results: dict[int, dict[str, Any]], cycle: int,
            load: str, began: float) -> None:
    """One NVML reading of each GPU of `indices` near the end of a step, and when it was taken: its
    power (the last second's average, so the step's own) and the clocks-event reasons in force."""
    readings, taken = sample
    for index in indices:
        reading = readings[index]
        results[index]["steps"].append({
            "cycle": cycle, "load": load, "t_s": round(taken - began, 3), "power_w": reading.power_w,
            "clocks_event_reasons": reading.clocks_event_reasons,
            **({"unread": "the GPU's NVML reading hung"} if reading.hung else {}),
        })


def xids_during(section: dict[str, Any], xids: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's XID events of the GPU that came during the pulse steps."""
    start = section.get("started")
    if start is None:
        return []
    end = start + (section.get("seconds") or 0.0)
    return [event for event in xids if start <= event.get("time", -1.0) <= end + STEP_S]


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    return checks(context.component, gpu, refs)


def checks(component: str, gpu: dict[str, Any], refs: References) -> list[Check]:
    """power.pulse.clocks_event_reasons: no power brake (fail) and no HW slowdown (warn: NVML says
    it may also show at a clock change) in any reading of the steps."""
    section = gpu.get("pulse")
    if not section or gpu.get("lost") or gpu.get("hung"):
        return []
    rule = refs.rules["pulse"]
    steps = section.get("steps") or []
    read = [step for step in steps if step.get("clocks_event_reasons") is not None]
    name = "power.pulse.clocks_event_reasons"
    if not read or not section.get("finished"):
        return [check(name, component, "incomplete", None, [], "reasons", "in", rule["source"],
                      f"{section.get('cycles_run', 0)} of {section.get('cycles_planned')} load steps made, "
                      f"{len(read)} of {len(steps)} readings with clocks-event reasons: not enough to judge the power delivery")]
    braked = [step for step in read if BRAKE in step["clocks_event_reasons"]]
    slowed = [step for step in read if SLOWDOWN in step["clocks_event_reasons"]]
    seen = sorted({reason for step in braked + slowed for reason in step["clocks_event_reasons"]} & {BRAKE, SLOWDOWN})
    power = "; power per step " + ", ".join(
        f"{step['load']} {step['power_w']:.0f}" if step.get("power_w") is not None else f"{step['load']} unread"
        for step in steps[:8]) + (" …" if len(steps) > 8 else "") + " W (reported, not judged: steps of "
    power += f"{section.get('step_s', STEP_S):g} s, shorter than DCGM's 30 s to reach target power)"
    steps_made = f"{section['cycles_run']} load steps of {section.get('step_s', STEP_S):g} s on every GPU of the tray at once"
    if braked:
        return [check(name, component, "fail", seen, [], "reasons", "in", rule["source"],
                      f"power brake engaged in {len(braked)} of {len(read)} readings of {steps_made}: the power "
                      f"supply asserted the brake" + power)]
    if slowed:
        return [check(name, component, "warn", seen, [], "reasons", "in", rule["hw_slowdown_source"],
                      f"HW slowdown in {len(slowed)} of {len(read)} readings of {steps_made}" + power)]
    return [check(name, component, "pass", [], [], "reasons", "in", rule["source"],
                  f"no power brake or HW slowdown in {len(read)} readings of {steps_made}" + power)]
