"""Every GPU of a model runs the same seeded GEMM (probes/gemm.py) and reports its golden
result's checksum. Same driver and cuBLAS on the same GPU model give bit-identical results, so
the GPUs of a rack must agree: a GPU whose result differs from what most of its model report
computes wrongly — deterministically, which its own repeated results cannot show.
"""

from __future__ import annotations

from typing import Any

from collections import Counter

from opsctl.burnin.checks import Check
from opsctl.burnin.rack_evidence import RackEvidence, RackFindings
from probes.sku_references import load_references


def rack_checks(evidence: RackEvidence) -> RackFindings:
    return RackFindings(golden_checks(evidence.gpus))


def golden_checks(gpu_readings: dict[str, dict[str, Any]]) -> list[Check]:
    """gpu_readings: {GPU id: its run-document entry}. One check per GPU and GEMM dtype compared."""
    source = load_references().rules["golden_gemm"]["source"]
    groups: dict[tuple[Any, ...], dict[str, str]] = {}  # (model, dtype, n, seed, driver) -> {GPU id: checksum}
    for gpu_id, reading in gpu_readings.items():
        for dtype, result in (reading.get("gemm") or {}).items():
            if isinstance(result, dict) and result.get("golden_checksum"):
                key = (str(reading.get("name")), dtype, result.get("n"), result.get("seed"),
                       (reading.get("configuration") or {}).get("driver_version"))
                groups.setdefault(key, {})[gpu_id] = result["golden_checksum"]
    checks: list[Check] = []
    for (model, dtype, n, _, _), sums in sorted(groups.items(), key=lambda item: tuple(map(str, item[0]))):
        if len(sums) < 3:
            continue  # two that differ cannot say which is wrong
        (agreed, count), = Counter(sums.values()).most_common(1)
        name = f"gemm.{dtype}.golden"
        for gpu_id, checksum in sorted(sums.items()):
            if count * 2 <= len(sums):
                checks.append(Check(name, gpu_id, "incomplete", checksum, None, "checksum", "!=", source,
                                    f"no checksum held by most of the {len(sums)} {model} GPUs ({count} at most agree)"))
            elif checksum == agreed:
                checks.append(Check(name, gpu_id, "pass", checksum, agreed, "checksum", "!=", source,
                                    f"{dtype} GEMM {n}³: the same result as {count - 1} other {model} GPUs of the rack"))
            else:
                checks.append(Check(name, gpu_id, "fail", checksum, agreed, "checksum", "!=", source,
                                    f"silent data corruption: its {dtype} GEMM {n}³ result differs from the one {count} of "
                                    f"{len(sums)} {model} GPUs of the rack computed (checksum {checksum}, theirs {agreed})"))
    return checks
