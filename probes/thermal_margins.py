"""Thermal margins under load: how close the GPU came to its slowdown threshold (NVML's margin
temperature, nvidia-smi's "T.Limit") and how hot its HBM ran against the HBM slowdown threshold,
from the samples taken while the GEMM load ran (the `under_load` section), not one reading.
"""

from __future__ import annotations

from typing import Any

from probes.check_record import Check, GpuContext, check, compare
from probes.sustained_power import carried_the_load
from probes.sku_references import References


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    return checks(context.component, gpu, refs)


def checks(component: str, gpu: dict[str, Any], refs: References) -> list[Check]:
    under = gpu.get("under_load")
    if not under or not carried_the_load(gpu):
        return []
    rules = refs.rules
    required = refs.sku is not None  # the GPU models opsctl knows all report both
    samples = under.get("samples", 0)
    found: list[Check] = []
    margin = under.get("thermal_margin_c_min")
    rule = rules["thermal_margin"]
    if margin is None:
        if required:
            found.append(check("thermal.margin", component, "incomplete", None, rule["min_c"], "°C", "<=", rule["source"],
                               f"the thermal margin could not be read in {samples} samples under load"))
    else:
        found.append(compare("thermal.margin", component, margin, "<=", rule["min_c"], "°C", rule["source"],
                             f"{margin:g} °C from the nearest slowdown threshold at the closest, in {samples} samples "
                             f"under load (GPU max {under.get('temperature_c_max')} °C)"))
    memory = under.get("memory_temperature_c_max")
    limit = (gpu.get("before") or {}).get("memory_slowdown_c")
    rule = rules["memory_temperature"]
    if memory is None or limit is None:
        if required:
            missing = " and ".join(what for what, value in (("the HBM temperature", memory),
                                                            ("its slowdown threshold", limit)) if value is None)
            found.append(check("thermal.memory_temperature", component, "incomplete", memory, limit, "°C", ">=",
                               rule["source"], f"{missing} could not be read"))
    else:
        found.append(compare("thermal.memory_temperature", component, memory, ">=", limit, "°C", rule["source"],
                             f"HBM at {memory:g} °C at most under load, slowdown at {limit:g} °C"))
    return found
