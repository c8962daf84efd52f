"""A throughput against its GPU model's figure and against the median of the tray's other GPUs
(the rulebook's `peers` rule): what the GEMM and memory-bandwidth families judge their figures by.
"""

from __future__ import annotations

import statistics
from typing import Any

from probes.check_record import Check, compare
from probes.sku_references import References


def throughput_checks(component: str, name: str, value: float, unit: str, sku_figure: dict[str, Any] | None, key: str,
                      peer_median: float | None, refs: References, what: str) -> list[Check]:
    checks: list[Check] = []
    if sku_figure and key in sku_figure:
        checks.append(compare(name, component, value, "<", sku_figure[key], unit, sku_figure["source"],
                              f"{what}: {value:.4g} {unit}"))
    rule = refs.rules["peers"]
    if peer_median:
        floor = round(peer_median * (1 - rule["max_below_median_pct"] / 100), 2)
        below = 100 * (1 - value / peer_median)
        checks.append(compare(f"{name}.peers", component, value, "<", floor, unit, rule["source"],
                              f"{value:.4g} {unit} is {below:.1f}% below the tray median {peer_median:.4g}" if below > 0
                              else f"{value:.4g} {unit}, at or above the tray median {peer_median:.4g}"))
    return checks


def peer_medians(gpus: list[dict[str, Any]], refs: References) -> dict[str, float]:
    """Median throughput of the tray's GPUs per measurement, where enough GPUs have one."""
    values: dict[str, list[float]] = {}
    for gpu in gpus:
        for dtype, result in (gpu.get("gemm") or {}).items():
            if result.get("tflops_median") is not None:
                values.setdefault(f"gemm.{dtype}", []).append(result["tflops_median"])
        if (gpu.get("membw") or {}).get("gbps") is not None:
            values.setdefault("membw", []).append(gpu["membw"]["gbps"])
    enough = refs.rules["peers"]["min_gpus"]
    return {name: statistics.median(found) for name, found in values.items() if len(found) >= enough}
