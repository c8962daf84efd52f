"""Each GPU against the other GPUs of its SKU in the same rack, under the same load.

A GPU that meets its SKU's reference figures can still be the slowest of 72 — a weak part, a
bad cold plate, a throttling VRM — and a training job runs at the pace of its slowest GPU.
The rack is the reference here: robust statistics (median, and MAD scaled to a standard
deviation) so that the outliers being looked for do not move the bar.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opsctl.burnin.checks import Check
from opsctl.burnin.rack_evidence import RackEvidence, RackFindings

if TYPE_CHECKING:
    from opsctl.acceptance.criteria import Criteria, RelativeRule

MAD_TO_SIGMA = 1.4826  # MAD × this estimates σ of normally spread readings


@dataclass(frozen=True)
class Metric:
    label: str
    unit: str
    path: tuple  # where the reading is in a probe document's GPU entry


def _reading(gpu: Any, path: Sequence[str]) -> Any:
    value = gpu
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _mean_peer_gbps(gpu: dict[str, Any]) -> float | None:
    peers = _reading(gpu, ("nvlink", "peer_gbps"))
    if not isinstance(peers, dict):
        return None
    values = [v for v in peers.values() if isinstance(v, (int, float))]
    return statistics.fmean(values) if values else None


METRICS = {
    "gemm_bf16_tflops": Metric("bf16 GEMM throughput", "TFLOPS", ("gemm", "bf16", "tflops_median")),
    "gemm_fp8_tflops": Metric("fp8 GEMM throughput", "TFLOPS", ("gemm", "fp8", "tflops_median")),
    "membw_gbps": Metric("memory bandwidth", "GB/s", ("membw", "gbps")),
    "nvlink_gbps": Metric("NVLink bandwidth to peers (mean)", "GB/s", ()),
    "sm_clock_mhz": Metric("SM clock under load (median)", "MHz", ("under_load", "sm_clock_mhz_median")),
    "temperature_c": Metric("temperature under load (max)", "°C", ("under_load", "temperature_c_max")),
    "power_w": Metric("power under load (median)", "W", ("under_load", "power_w_median")),
}


def metric_value(name: str, gpu: dict[str, Any]) -> float | None:
    if name == "nvlink_gbps":
        return _mean_peer_gbps(gpu)
    value = _reading(gpu, METRICS[name].path)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class RackGpu:
    id: str  # rack07/ct03/gpu2
    sku: str  # what the GPU calls itself ("NVIDIA GB200"): only like is compared with like
    reading: dict  # the GPU's entry of its tray's probe document


def limit_for(rule: RelativeRule, median: float, sigma: float) -> float:
    """The bar a GPU must not cross: the wider of the fixed margin and the spread margin."""
    spread = rule.robust_sigmas * sigma
    margin = median * rule.pct / 100.0 if rule.pct is not None else rule.delta
    assert margin is not None  # the criteria file gives exactly one of pct and delta (criteria.py)
    if rule.worse == "lower":
        return median - max(margin, spread)
    return median + max(margin, spread)


def rack_checks(evidence: RackEvidence) -> RackFindings:
    """Every GPU that answered against the others of its SKU (one lost has no readings to compare)."""
    gpus = [RackGpu(gpu_id, str(reading.get("name") or evidence.rack.model.sku), reading)
            for gpu_id, reading in evidence.gpus.items() if not reading.get("lost")]
    checks, notes = judge_rack_relative(gpus, evidence.criteria)
    return RackFindings(checks, notes)


def judge_rack_relative(gpus: Sequence[RackGpu], criteria: Criteria) -> tuple[list[Check], list[str]]:
    """Checks for every GPU and rule, and notes on what could not be compared."""
    checks: list[Check] = []
    notes: list[str] = []
    by_sku: dict[str, list[RackGpu]] = {}
    for gpu in gpus:
        by_sku.setdefault(gpu.sku, []).append(gpu)
    for sku, members in sorted(by_sku.items()):
        for rule in criteria.rules:
            metric = METRICS[rule.metric]
            read = [(gpu, metric_value(rule.metric, gpu.reading)) for gpu in members]
            readings = [(gpu, value) for gpu, value in read if value is not None]
            if not readings:
                continue  # the probe did not measure it (fp8 on a GPU without fp8, a probe left out)
            if len(readings) < criteria.min_gpus:
                notes.append(f"{metric.label}: only {len(readings)} {sku} GPU(s) measured, fewer than "
                             f"{criteria.min_gpus}: not compared across the rack")
                continue
            values = [value for _, value in readings]
            median = statistics.median(values)
            sigma = MAD_TO_SIGMA * statistics.median(abs(v - median) for v in values)
            limit = limit_for(rule, median, sigma)
            op = "<" if rule.worse == "lower" else ">"
            margin = f"{rule.pct:g}%" if rule.pct is not None else f"{rule.delta:g} {metric.unit}"
            source = (f"criteria {criteria.name} {criteria.version}, rack_relative: {rule.worse} than the median of "
                      f"the rack's {len(values)} {sku} GPUs ({median:.1f} {metric.unit}) by more than {margin} and "
                      f"{rule.robust_sigmas:g} robust σ (σ = 1.4826 × MAD = {sigma:.2f} {metric.unit})")
            for gpu, value in readings:
                bad = value < limit if rule.worse == "lower" else value > limit
                deviation = (value - median) / median * 100.0 if median else 0.0
                reason = (f"{metric.label} {value:.1f} {metric.unit} is {abs(deviation):.1f}% "
                          f"{'below' if deviation < 0 else 'above'} the rack median {median:.1f}")
                checks.append(Check(
                    check=f"rack.{rule.metric}", component=gpu.id, verdict=rule.verdict if bad else "pass",
                    value=round(value, 3), threshold=round(limit, 3), unit=metric.unit, op=op, source=source,
                    reason=reason,
                ))
    return checks, notes
