"""How fast `opsctl tco` prices: every preset in scenarios/ (at its point figures), a 200-point
sweep, and the Monte Carlo over a ranges preset at the default draws, in-process (no CLI
start-up), with peak Python memory. Prints its figures; docs/benchmarks.md records them.

    .venv/bin/python bench/tco_pricing.py
"""

import statistics
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from opsctl.mttr import load_mttr_model  # noqa: E402
from opsctl.tco.pricing import price  # noqa: E402
from opsctl.tco.monte_carlo import DEFAULT_DRAWS, DEFAULT_LEVEL, price_with_uncertainty  # noqa: E402
from opsctl.tco.sweep import sweep  # noqa: E402
from opsctl.tco.uncertain import load_uncertain  # noqa: E402


def load_scenario(path):
    return load_uncertain(path).point  # a ranges preset at its point figures


def main():
    mttr = load_mttr_model()
    presets = sorted((REPO / "scenarios").glob("*.yaml"))
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        for path in presets:
            price(load_scenario(path), mttr)
        timings.append(time.perf_counter() - start)
    best = min(timings)
    print(f"presets: {len(presets)}; load + price all: best {best * 1000:.1f} ms, median "
          f"{statistics.median(timings) * 1000:.1f} ms of 5 runs; {best / len(presets) * 1000:.2f} ms a scenario")
    scenario = load_scenario(REPO / "scenarios" / "llama4-16k-gb200-mtbi2000-spares-charged.yaml")
    values = [1000 + i * 20 for i in range(200)]
    start = time.perf_counter()
    sweep(scenario, "reliability.mtbi_gpu_days", values, mttr)
    elapsed = time.perf_counter() - start
    print(f"sweep of 200 points (reliability.mtbi_gpu_days): {elapsed * 1000:.1f} ms, {elapsed / 200 * 1000:.2f} ms a point")
    ranges = load_uncertain(REPO / "scenarios" / "llama4-16k-gb200-ranges-spares-charged.yaml")
    start = time.perf_counter()
    price_with_uncertainty(ranges, mttr, DEFAULT_DRAWS, 0, DEFAULT_LEVEL)
    elapsed = time.perf_counter() - start
    print(f"Monte Carlo of the GB200 ranges preset ({len(ranges.inputs)} ranges), {DEFAULT_DRAWS} draws: "
          f"{elapsed * 1000:.0f} ms, {elapsed / DEFAULT_DRAWS * 1000:.2f} ms a draw")
    tracemalloc.start()  # after the timings: tracing slows Python down
    for path in presets:
        price(load_scenario(path), mttr)
    sweep(scenario, "reliability.mtbi_gpu_days", values, mttr)
    _, peak = tracemalloc.get_traced_memory()
    print(f"peak traced Python memory over all presets and the sweep: {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
