"""The HBM memory test's checks (probes/hbm_test.py): enough of the free memory covered, every
pattern finished, no word read back wrong — each reason naming the ECC and remap counters of the
same run, which say whether ECC saw what the test found.
"""

from __future__ import annotations

from typing import Any

from probes.check_record import Check, GpuContext, check, compare
from probes.sku_references import References


def gpu_checks(gpu: dict[str, Any], refs: References, context: GpuContext) -> list[Check]:
    """hbm.coverage, hbm.finished and hbm.errors, where the GPU ran the memory test."""
    if not gpu.get("hbm"):
        return []
    return hbm_checks(context.component, gpu["hbm"], gpu.get("counters") or {}, refs.rules)


def hbm_checks(component: str, hbm: dict[str, Any], counters: dict[str, Any], rules: dict[str, Any]) -> list[Check]:
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
