"""How long `opsctl health` takes on a simulated tray (Slurm's HealthCheckProgram runs it every
HealthCheckInterval), and what a `--via slurm` burn-in of rack07 costs over the local one.

    .venv/bin/python bench/slurm_health.py [--repeats 5] [--burnin]

Health: wall time of the whole command as slurmd would run it (a new process: start-up, the
inventory, the simulator spec, two NVML readings a --window apart, the tray judge), and the
judge's own seconds (what a real tray would spend, without the simulator's start-up).
--burnin starts a throwaway Slurm cluster (tests/slurm_cluster.py: munged, slurmctld, 18
slurmd) and burns rack07 in locally and through Slurm, 4 s of load a tray. Prints figures; the
results go in docs/benchmarks.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def timed(argv, env=None):
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    return time.monotonic() - started, done


def health(repeats):
    opsctl = [sys.executable, "-m", "opsctl"]
    for tray in ("rack07/ct01", "rack07/ct17"):
        walls, judged, codes = [], [], set()
        for _ in range(repeats):
            wall, done = timed([*opsctl, "health", tray, "--json"])
            walls.append(wall)
            judged.append(json.loads(done.stdout)["seconds"])
            codes.add(done.returncode)
        print(f"opsctl health {tray}: exit {sorted(codes)}, wall median {statistics.median(walls):.2f} s "
              f"(min {min(walls):.2f}, max {max(walls):.2f}); the tray judge itself median "
              f"{statistics.median(judged):.2f} s, over {repeats} runs")


def burnin():
    from tests.slurm_cluster import start_slurm
    from tests.test_slurm_burnin import rack07

    root = Path(tempfile.mkdtemp(prefix="bench-slurm-"))
    cluster = start_slurm(root / "cluster")
    try:
        inventory = rack07(root)
        env = {**os.environ, "SLURM_CONF": str(cluster.conf)}
        for via in ([], ["--via", "slurm"]):
            argv = [sys.executable, "-m", "opsctl", "burnin", "rack07", "--inventory", str(inventory), "--duration",
                    "4", "--no-ledger", "--json", "--out", str(root / ("slurm" if via else "local")), *via]
            wall, done = timed(argv, env)
            summary = json.loads(done.stdout)
            print(f"burnin rack07 {' '.join(via) or '(local)'}: exit {done.returncode}, {summary['verdict']}, "
                  f"{wall:.1f} s wall, failing parts {sorted(summary['failing_parts'])}")
    finally:
        cluster.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--burnin", action="store_true", help="also time a --via slurm burn-in against the local one")
    args = parser.parse_args()
    health(args.repeats)
    if args.burnin:
        burnin()


if __name__ == "__main__":
    main()
