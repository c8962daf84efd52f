"""Sustained power: did the GPU hold its power target through the GEMM load, and did thermal
limits pull its clocks down meanwhile? Judged from NVML's counters read at the load's start and
its end — the energy counter (every joule of the load, not one power sample a window) and the
power and thermal violation time — as DCGM's targeted-power diagnostic judges its load.

The target: DCGM's public diag SKU file (nvvs/diag-skus.yaml.in) gives `targeted_power` figures
for older SKUs only, none for H100, H200, B200 or GB200. So the target is the GPU's own default
power limit as NVML reports it (its TDP), and the reference file's datasheet TDP cross-checks it.
"""

from __future__ import annotations

from typing import Any

from probes.counters import counter_deltas, delta
from probes.check_record import Check, GpuContext, check, compare
from probes.sku_references import References


def window(start: Any, end: Any) -> dict[str, Any]:
    """The `sustained_power` section of a GPU entry (docs/probe-output.md) from two power-window
    readings (NvmlReader.read_power_window_each) taken as the GEMM load starts and ends."""
    seconds = max(0.0, end.time - start.time)
    energy = delta(start.energy_j, end.energy_j)
    unread = {**{call: "not supported" for call in start.unsupported + end.unsupported}, **start.errors, **end.errors}
    return {
        "load_s": round(seconds, 3),
        "energy_j": None if energy is None else round(energy, 1),
        "power_w_mean": round(energy / seconds, 1) if energy is not None and seconds > 0 else None,
        "default_power_limit_w": end.default_power_limit_w if end.default_power_limit_w is not None else start.default_power_limit_w,
        "enforced_power_limit_w": end.power_limit_w if end.power_limit_w is not None else start.power_limit_w,
        "violation_s": {kind: round(value, 3) for kind, value in counter_deltas(start.violation_s, end.violation_s).items()},
        "unread": unread,
    }


def carried_the_load(gpu: dict[str, Any]) -> bool:
    """Did the GEMM load run on the GPU to the end? One lost, hung or failed under it is failed by
    gpu.lost, gpu.hung or gemm.device already, and its power and temperatures say nothing of a load."""
    return not (gpu.get("lost") or gpu.get("hung") or any(f["probe"] == "gemm" for f in gpu.get("failures", [])))


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    return checks(context.component, gpu, refs)


def checks(component: str, gpu: dict[str, Any], refs: References) -> list[Check]:
    """power.reached, power.thermal_violation_s and the TDP cross-check (power.default_limit)."""
    section = gpu.get("sustained_power")
    if not section or not carried_the_load(gpu):
        return []
    rule = refs.rules["sustained_power"]
    required = refs.sku is not None  # every GPU model with a reference file reports its power
    unread = "; ".join(f"{call}: {why}" for call, why in sorted(section.get("unread", {}).items())) or "no reading"
    load_s = section.get("load_s") or 0.0
    found: list[Check] = []
    power, target = section.get("power_w_mean"), section.get("default_power_limit_w")
    if power is None or target is None:
        if required:
            found.append(check("power.reached", component, "incomplete", power, None, "W", "<", rule["source"],
                               f"the power over the load or its target could not be read ({unread})"))
    else:
        floor = round(rule["min_ratio"] * target, 1)
        enforced = section.get("enforced_power_limit_w")
        violations = section.get("violation_s") or {}
        reason = (f"{power:g} W on average over the {load_s:.0f} s GEMM load (energy counter), target {target:g} W "
                  f"(the default power limit), {rule['min_ratio']:g} × target = {floor:g} W; "
                  f"held at the power limit {violations.get('power', 0):.2f} s")
        if enforced is not None and enforced <= floor:
            found.append(check("power.reached", component, "incomplete", power, floor, "W", "<", rule["enforced_limit_source"],
                               f"{reason}; the enforced power limit {enforced:g} W is at or below {floor:g} W, so the "
                               f"target cannot be reached (config.power_limit judges the limit)"))
        elif power < floor and load_s < rule["min_load_s"]:
            pass  # no evidence either way (min_load_source): not judged, rather than a quick burn-in made incomplete
        else:
            found.append(compare("power.reached", component, power, "<", floor, "W", rule["source"], reason))
    tdp = (refs.sku or {}).get("tdp")
    if tdp and target is not None:
        found.append(compare("power.default_limit", component, target, "!=", tdp["watts"], "W", tdp["source"],
                             f"default power limit {target:g} W, datasheet TDP {tdp['watts']:g} W", bad="warn"))
    thermal = (section.get("violation_s") or {}).get("thermal")
    if thermal is None:
        if required:
            found.append(check("power.thermal_violation_s", component, "incomplete", None, 0, "s", ">",
                               rule["thermal_violation_source"], f"thermal violation time could not be read ({unread})"))
    else:
        under = gpu.get("under_load") or {}
        clocks = (f"; SM clock median {under.get('sm_clock_mhz_median')} MHz, max "
                  f"{(gpu.get('before') or {}).get('sm_clock_max_mhz')} MHz")
        found.append(compare("power.thermal_violation_s", component, thermal, ">", 0, "s", rule["thermal_violation_source"],
                             (f"thermal limits held the clocks down {thermal:.2f} s of the {load_s:.0f} s load" if thermal > 0
                              else f"clocks held through the {load_s:.0f} s load: no thermal violation") + clocks))
    return found
