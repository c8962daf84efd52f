"""The HBM memory test: every pattern of probes/compute/memory_patterns.py written over at
least 90% of the GPU's free memory and read back, every wrong word counted with the byte range
it lies in — as DCGM's diagnostic memory test and gpu-burn's memory fill do, so that a weak row
outside the few GiB the GEMM and copy probes touch is found.

The judge (probes/hbm_checks.py) ties the result to the GPU's ECC, row-remap and retired-page
counters, read before and after the run.
"""

from __future__ import annotations

import threading
from typing import Any

import time

from probes.compute.memory_patterns import PATTERNS

FRACTION = 0.95  # of the free memory the test asks for; it reaches a little less (blocks)


def run(device: Any, stop: threading.Event, progress: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """Run each pattern once; `progress` is the result dict of docs/probe-output.md (`hbm`)."""
    began = time.monotonic()
    progress.update({"patterns": {}, "errors": 0, "error_ranges": [], "finished": False})
    for pattern in PATTERNS:
        if stop.is_set():
            break
        free, tested, errors, ranges, seconds = device.memory_test(pattern, FRACTION, seed)
        progress["patterns"][pattern] = {"errors": errors, "seconds": round(seconds, 3)}
        progress["errors"] += errors
        for found in ranges:
            if found not in progress["error_ranges"]:
                progress["error_ranges"].append(found)
        progress.update({"free_bytes": free, "tested_bytes": tested, "coverage": round(tested / free, 4) if free else 0.0})
    progress["error_ranges"].sort()
    progress["seconds"] = round(time.monotonic() - began, 3)
    progress["finished"] = len(progress["patterns"]) == len(PATTERNS)
    return progress
