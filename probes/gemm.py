"""Burn-in GEMM: sustained matrix multiplies on one GPU, timed in windows and verified.

Verification, two ways:
- gpu-burn's method: every result is compared, element by element on the device, with the
  first result (the golden one); a GPU that computes the same product differently from one
  iteration to the next has silent data corruption, and the count of wrong elements names it.
- The golden result itself is checked against a float64 reference computed independently on
  the host for a grid of its elements spread over the whole result (rows and columns evenly
  apart, not only its corner), within a tolerance derived from the result's dtype.
- Its checksum goes into the result: every GPU of a model runs the same seeded GEMM, and the
  rack compares their golden results (opsctl/burnin/golden_results.py) — a GPU that computes
  the same wrong result every time passes both checks above but not that one.

Its check family (`gpu_checks`): the results verified, enough timed windows, the throughput
against the SKU's figure and the tray's median, and its drop over the burn.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from probes.check_record import Check, GpuContext, check, compare
from probes.compute import UNIT_ROUNDOFF
from probes.peer_throughput import throughput_checks
from probes.sku_references import References
from probes.windows import rate_summary, timed_windows

if TYPE_CHECKING:
    from probes.compute import ComputeDevice, GemmOperands

REFERENCE_BLOCK = 16  # rows × columns of the golden result checked against float64, spread over it
TOLERANCE_SOURCE = (
    "4 units of roundoff of the result dtype relative to the block's largest element (bf16 keeps 8 "
    "significant bits: 2^-8; binary32: 2^-24) covering the final rounding and reduced-precision split-K "
    "reductions, plus Higham's bound K·u for the float32 accumulation of K products "
    "(Accuracy and Stability of Numerical Algorithms, 2002, eq. 3.5)"
)
GPU_BURN_SOURCE = ("gpu-burn's check: every result compared element by element with the first; cuBLAS "
                   "results are bit-wise reproducible on one GPU (cuBLAS documentation, Results reproducibility)")


def flops(n: int) -> float:
    return 2.0 * n**3


def spread(n: int, k: int) -> slice:
    """k row (or column) indices evenly apart over 0…n-1, as a slice: the first, then every
    n/k-th, so the checked elements reach the far end of the result, not only its corner."""
    return slice(0, n, max(1, n // k))


def reference_check(device: ComputeDevice, ops: GemmOperands, golden: Any) -> tuple[float, float]:
    """(max error relative to the largest element, tolerance) of a block of the golden result
    against a float64 product of the very same (rounded) inputs."""
    import numpy as np  # here, not at the top: a switch tray's probe runs no GEMM and need not load numpy

    k = min(REFERENCE_BLOCK, ops.real_n)
    block = spread(ops.real_n, k)
    every = slice(None)
    a = device.to_host(ops.a, block, every)  # k × n
    b = device.to_host(ops.b, every, block)  # n × k
    expected = a @ b
    bound = np.abs(a) @ np.abs(b)  # Σ|a||b|: what accumulation error scales with
    got = device.to_host(golden, block, block)
    largest = float(np.max(np.abs(expected))) or 1.0
    error = float(np.max(np.abs(got - expected))) / largest
    tolerance = (4 * UNIT_ROUNDOFF[ops.result_dtype]
                 + ops.real_n * UNIT_ROUNDOFF[ops.accumulate_dtype] * float(np.max(bound)) / largest)
    return error, tolerance


def burn(device: ComputeDevice, dtype: str, seconds: float, n: int, window_s: float, stop: threading.Event, seed: int = 0,
         progress: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run GEMMs of `dtype` for `seconds` of device time in windows of about `window_s`.
    Returns the result dict of docs/probe-output.md (`gemm.<dtype>`); `progress`, if given, is
    that dict kept up to date window by window ("finished": false until the end)."""
    progress = {} if progress is None else progress
    reason = device.unsupported_reason(dtype)
    if reason is not None:
        progress["skipped"] = reason
        return progress
    ops = device.gemm_operands(dtype, n, seed)
    golden = device.matmul(ops)
    max_rel_error, tolerance = reference_check(device, ops, golden)
    checksum = device.checksum(golden)
    verified = {"mismatches": 0, "corrupted_results": 0, "checks": 0}

    def batch(iterations: int) -> float:
        wrong, bad, took = device.matmul_checked(ops, golden, iterations)
        verified["mismatches"] += wrong
        verified["corrupted_results"] += bad
        verified["checks"] += iterations
        return took

    def record(windows: list[tuple[int, float]], finished: bool = False) -> None:
        progress.update({
            **rate_summary([flops(n) * iterations / took / 1e12 for iterations, took in windows], "tflops"),
            "n": n,
            "seconds": round(sum(took for _, took in windows), 3),
            "verified": verified["mismatches"] == 0 and max_rel_error <= tolerance,
            **verified,
            "max_rel_error": max_rel_error,
            "tolerance": tolerance,
            "tolerance_source": TOLERANCE_SOURCE,
            "seed": seed,
            "golden_checksum": checksum,
            "finished": finished,
        })

    # Warm-up (cuBLAS picks its kernel, clocks ramp): verified, not counted as a window.
    per_iteration = batch(2) / 2
    record([])
    windows = timed_windows(batch, seconds, window_s, stop, per_iteration, on_window=record)
    device.release()
    record(windows, finished=True)
    return progress


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """Each dtype's GEMM burn: verified results, throughput against the SKU and the tray."""
    found: list[Check] = []
    for dtype, result in (gpu.get("gemm") or {}).items():
        found += gemm_checks(context.component, dtype, result, refs, context.peer_medians)
    return found


def gemm_checks(component: str, dtype: str, result: dict[str, Any], refs: References,
                tray: dict[str, float]) -> list[Check]:
    if "skipped" in result:
        return []
    name = f"gemm.{dtype}"
    enough = refs.rules["min_evidence"]
    windows = len(result.get("tflops_windows") or [])
    if "checks" not in result:  # stopped before its first verified result: nothing of it to judge
        return [check(f"{name}.windows", component, "incomplete", 0, enough["gemm_windows"], "timed windows", "<",
                      enough["gemm_source"], f"{dtype} GEMM stopped before its first verified result")]
    checks = [] if windows >= enough["gemm_windows"] else [
        check(f"{name}.windows", component, "incomplete", windows, enough["gemm_windows"], "timed windows", "<",
              enough["gemm_source"], f"{windows} timed window(s) of {dtype} GEMM ({result['checks']} results verified) "
              f"in {result.get('seconds', 0):g} s: too short a load for a verdict, at least {enough['gemm_windows']} "
              f"windows needed (a longer --duration)")]
    checks += [
        compare(f"{name}.mismatches", component, result["mismatches"], ">", 0, "wrong elements", GPU_BURN_SOURCE,
                _corruption(result) if result["mismatches"] else f"all {result['checks']} results identical"),
        compare(f"{name}.reference", component, result["max_rel_error"], ">", result["tolerance"],
                "relative to the largest element", TOLERANCE_SOURCE,
                f"result differs from a float64 reference by {result['max_rel_error']:.3g} (tolerance {result['tolerance']:.3g})"),
    ]
    median = result.get("tflops_median")
    if median is None:
        return checks
    sku = (refs.sku or {}).get("gemm", {}).get(dtype)
    checks += throughput_checks(component, f"{name}.tflops", median, "TFLOPS", sku, "min_tflops", tray.get(name), refs,
                                 f"{dtype} GEMM {result['n']}³, median of {len(result['tflops_windows'])} windows")
    rule = refs.rules["gemm_drop"]
    if result.get("drop_pct") is not None:
        checks.append(compare(f"{name}.drop_pct", component, result["drop_pct"], ">", rule["max_pct"], "%", rule["source"],
                              f"throughput fell {result['drop_pct']:.1f}% from the first to the last quarter of the burn "
                              f"(min window {result['tflops_min']:.0f} TFLOPS)"))
    return checks


def _corruption(result: dict[str, Any]) -> str:
    reason = (f"silent data corruption: {result['mismatches']} wrong elements in {result['corrupted_results']} of "
              f"{result['checks']} results")
    if result["corrupted_results"] == result["checks"]:
        reason += "; every result differs from the first, so the first (golden) result was itself wrong"
    return reason
