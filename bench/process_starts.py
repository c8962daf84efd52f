"""What the suite's most frequent processes cost, one source tree against another: a compute tray's
1 s simulated probe run, a switch tray's, a compute tray's preflight, 1 s snapshot (triage) and IMEX
probe (the NVLink domain test), and (with --burnin) a whole 1 s `opsctl burnin rack07` with its 54
probe processes, and (with --health) `opsctl health` of a simulated tray over a 1 s window.

Each tree is a folder holding opsctl/ and probes/ (`git archive REV | tar -x -C DIR`), run from that
folder with this checkout's Python, so its own modules load; `TREE:nobytecode` runs it with
PYTHONDONTWRITEBYTECODE=1 and its `__pycache__` folders removed first (a clean clone where the
environment sets the variable: every process compiles the modules again). The trees take turns,
round by round; prints the mean user+system CPU of each command per tree, and its median wall time.

    git archive 9a6cb1b | tar -x -C /tmp/old; git archive HEAD | tar -x -C /tmp/new
    .venv/bin/python bench/process_starts.py --tree /tmp/old:nobytecode --tree /tmp/new --rounds 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.child_cpu import timed_run  # noqa: E402

PROBES = "gemm,membw,nvlink,pulse,hbm,configuration,counters"


def commands(spec: Path, out: Path, burnin: bool, health: bool) -> dict[str, list[str]]:
    probe = [sys.executable, "-m", "probes"]
    found = {
        "compute tray probe (1 s)": [*probe, "run", "--duration", "1", "--probes", PROBES, "--json", "--backend", "sim",
                                     "--tray", "ct01", "--sim-spec", str(spec)],
        "switch tray probe (1 s)": [*probe, "run", "--duration", "1", "--probes", PROBES, "--json", "--backend", "sim",
                                    "--tray", "st1", "--sim-spec", str(spec)],
        "compute tray preflight": [*probe, "preflight", "--probes", PROBES, "--json", "--backend", "sim",
                                   "--tray", "ct01", "--sim-spec", str(spec)],
        "compute tray snapshot (1 s)": [*probe, "snapshot", "--window", "1", "--json", "--backend", "sim",
                                        "--tray", "ct01", "--sim-spec", str(spec)],
        "compute tray IMEX probe": [*probe, "imex", "--json", "--backend", "sim", "--tray", "ct01", "--sim-spec", str(spec)],
    }
    if burnin:
        found["opsctl burnin rack07 (1 s)"] = [sys.executable, "-m", "opsctl", "burnin", "rack07", "--duration", "1",
                                               "--out", str(out), "--no-ledger"]
    if health:
        found["opsctl health rack07/ct01 (1 s)"] = [sys.executable, "-m", "opsctl", "health", "rack07/ct01", "--json",
                                                    "--window", "1"]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="DIR or DIR:nobytecode (give two or more)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--burnin", action="store_true", help="also a whole 1 s rack07 burn-in (about 20 s each)")
    parser.add_argument("--health", action="store_true", help="also `opsctl health rack07/ct01 --window 1`")
    args = parser.parse_args()
    trees = [(Path(t.split(":")[0]).resolve(), t.endswith(":nobytecode")) for t in args.tree]
    with tempfile.TemporaryDirectory() as scratch:
        spec = Path(scratch) / "rack07.json"
        subprocess.run([sys.executable, "-m", "opsctl", "sim", "spec", "rack07", "-o", str(spec)], check=True,
                       cwd=trees[0][0])
        runs = commands(spec, Path(scratch) / "run", args.burnin, args.health)
        spent: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.rounds):
            for tree, no_bytecode in trees:
                env = dict(os.environ)
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                if no_bytecode:
                    env["PYTHONDONTWRITEBYTECODE"] = "1"
                    for cache in tree.rglob("__pycache__"):
                        shutil.rmtree(cache, ignore_errors=True)
                for name, argv in runs.items():
                    shutil.rmtree(Path(scratch) / "run", ignore_errors=True)
                    spent.setdefault((name, f"{tree}{' (no bytecode)' if no_bytecode else ''}"), []).append(
                        timed_run(argv, tree, env))
    for (name, tree), runs_spent in spent.items():
        cpu, wall = statistics.mean(c for _, c in runs_spent), statistics.median(w for w, _ in runs_spent)
        print(f"{name:<32} {tree:<30} {cpu:6.3f} CPU-s  (mean of {len(runs_spent)}), wall {wall:.3f} s (median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
