"""What NumPy's OpenBLAS thread pool costs a process that does not need it (opsctl/__init__.py and
probes/__init__.py set OPENBLAS_NUM_THREADS=1 unless the user set it).

Interleaved pairs of fresh processes: OPENBLAS_NUM_THREADS=<the CPU count> (OpenBLAS's own
default) against =1, for three commands — importing NumPy, `opsctl burnin --help`, and one
simulated GB200 compute tray's 1 s probe run. Prints the median wall and CPU (user + system of
the child) of each and the CPU saved.

    .venv/bin/python bench/numpy_threads.py [--pairs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.child_cpu import timed_run  # noqa: E402


def one_run(argv: list[str], threads: int) -> tuple[float, float]:
    return timed_run(argv, REPO, {**os.environ, "OPENBLAS_NUM_THREADS": str(threads)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="opsctl-bench-") as folder:
        spec = Path(folder) / "rack07.json"
        subprocess.run([sys.executable, "-m", "opsctl", "sim", "spec", "rack07", "-o", str(spec)], check=True, cwd=REPO)
        commands = {
            "import numpy": [sys.executable, "-c", "import numpy"],
            "opsctl burnin --help": [sys.executable, "-m", "opsctl", "burnin", "--help"],
            "probe run, ct03, 1 s (sim)": [sys.executable, "-m", "probes", "run", "--backend", "sim", "--sim-spec", str(spec),
                                           "--tray", "ct03", "--duration", "1", "--json"],
        }
        print(f"{cores} CPUs, load average {os.getloadavg()[0]:.1f}, {args.pairs} pairs, bytecode cached")
        print(f"{'command':<28} {'threads':>7} {'wall s':>7} {'CPU s':>7}")
        for name, argv in commands.items():
            one_run(argv, 1)  # not counted: writes the .pyc files
            runs: dict[int, list[tuple[float, float]]] = {cores: [], 1: []}
            for _ in range(args.pairs):
                for threads in (cores, 1):
                    runs[threads].append(one_run(argv, threads))
            cpu = {t: statistics.median(c for _, c in r) for t, r in runs.items()}
            for threads, results in runs.items():
                print(f"{name:<28} {threads:>7} {statistics.median(w for w, _ in results):7.3f} {cpu[threads]:7.3f}")
            print(f"{'':<28} {'saved':>7} {'':>7} {cpu[cores] - cpu[1]:7.3f}")
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
