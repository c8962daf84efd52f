"""Running a timed operation for a while, in windows of about the same length.

Each window is one call of `batch(iterations)`, which returns the seconds those iterations took
on the device (measured on a GPU, modelled in simulation); the next window's iteration count
follows from the last one's pace. A per-window figure shows throttling that an average hides.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable, Sequence
from typing import Any


def timed_windows(batch: Callable[[int], float], seconds: float, window_s: float, stop: threading.Event,
                  per_iteration: float,
                  on_window: Callable[[list[tuple[int, float]]], None] | None = None) -> list[tuple[int, float]]:
    """[(iterations, seconds)] of windows until `seconds` of device time or `stop` is set.
    `on_window(windows)` sees the list after each window (to keep progress if a later one hangs)."""
    windows: list[tuple[int, float]] = []
    elapsed = 0.0
    while elapsed < seconds and not stop.is_set():
        iterations = max(1, int(min(window_s, seconds - elapsed) / max(per_iteration, 1e-12)))
        took = batch(iterations)
        windows.append((iterations, took))
        elapsed += took
        per_iteration = took / iterations
        if on_window is not None:
            on_window(windows)
    return windows


def window_length(seconds: float) -> float:
    """About a dozen windows a probe, between a quarter second and five seconds each."""
    return min(5.0, max(0.25, seconds / 12))


def rate_summary(rates: Sequence[float], unit: str) -> dict[str, Any]:
    """Median, minimum and the drop from the first to the last quarter of the windows: a GPU
    that throttles as it heats shows a drop, where one that is merely slow does not."""
    if not rates:
        return {f"{unit}_median": None, f"{unit}_min": None, f"{unit}_windows": [], "drop_pct": None}
    quarter = max(1, len(rates) // 4)
    first, last = statistics.median(rates[:quarter]), statistics.median(rates[-quarter:])
    return {
        f"{unit}_median": significant(statistics.median(rates)),
        f"{unit}_min": significant(min(rates)),
        f"{unit}_windows": [significant(rate) for rate in rates],
        "drop_pct": round(100.0 * (1.0 - last / first), 2) if first > 0 else None,
    }


def significant(value: float, digits: int = 5) -> float:
    """Rounded to `digits` significant figures: 1951.2 TFLOPS on a GPU, 0.0021 on a CPU."""
    return float(f"{value:.{digits}g}")
