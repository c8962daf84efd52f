"""A fleet of 228 GB200 NVL72 racks (16,416 GPUs) localized in one call.

First it takes one snapshot per rack through the simulator (every tray read by the tray's own
snapshot code; most racks healthy at one of three in-spec noise levels, some with one or two
faults of random kinds, some with an unread tray) and stores them in DIR. Then it times:

  - in process: opsctl.localize.localize_files over the 228 files, in one process and spread
    over the CPUs (its default);
  - the command a user runs: `opsctl localize --json DIR/*.json` as a new process, end to end
    (interpreter start, imports, reading 228 files, localizing, printing the JSON).

Wall time and CPU time are both printed: other work on the machine stretches wall time.

    .venv/bin/python bench/localize_fleet.py [--racks 228] [--dir /tmp/opsctl-fleet] [--workers 2] [--repeat 3]

Snapshots already in DIR are reused, so timing again is quick.
"""

import argparse
import json
import multiprocessing
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from localize_faults import NOISE_LEVELS, Generator, noise  # noqa: E402
from opsctl.localize import localize_files  # noqa: E402
from simulated_snapshots import simulated_snapshot  # noqa: E402
from opsctl.rack_models import model_named  # noqa: E402
from opsctl.simulation import compile_rack_spec, parse_scenario  # noqa: E402
from opsctl.topology import build_topology  # noqa: E402

KINDS = ("link", "link", "link", "gpu", "gpu", "connector", "switch_connector", "cartridge", "compute_tray", "switch_chip", "switch_tray")
WINDOW_S = 60.0


def make_rack(number, directory):
    path = Path(directory) / f"fleet{number:03d}.json"
    if path.exists():
        return path
    rng = random.Random(number)
    rack = f"fleet{number:03d}"
    topology = build_topology(rack, model_named("gb200-nvl72"))
    draw = rng.random()
    kinds = () if draw < 0.8 else tuple(rng.choice(KINDS) for _ in range(1 if draw < 0.95 else 2))
    faults = Generator(topology, rng, WINDOW_S).faults(kinds)[0]
    if rng.random() < 0.05:
        faults.append({"kind": "tray_unreachable", "tray": rng.choice(topology.model.compute_tray_names())})
    scenario = parse_scenario({"scenario": rack, "seed": number, "noise": noise(rng.choice(list(NOISE_LEVELS)), topology.model),
                               "faults": faults}, f"<{rack}>")
    snapshot = simulated_snapshot(compile_rack_spec(scenario, topology), WINDOW_S)
    path.write_text(json.dumps(snapshot))
    return path


def _make(args):
    return make_rack(*args)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--racks", type=int, default=228)
    parser.add_argument("--dir", default="/tmp/opsctl-fleet")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    started = time.time()
    with multiprocessing.Pool(args.workers) as pool:
        paths = pool.map(_make, [(n, args.dir) for n in range(1, args.racks + 1)])
    size = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} rack snapshots ({len(paths) * 72:,} GPUs, {len(paths) * 1296:,} links, {size / 1e6:.0f} MB of JSON) "
          f"ready in {time.time() - started:.0f} s")

    for workers, label in ((1, "one process"), (None, f"{os.cpu_count()} processes")):
        walls, cpus = [], []
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), _cpu_seconds()
            document = localize_files(paths, workers=workers)
            walls.append(time.perf_counter() - wall)
            cpus.append(_cpu_seconds() - cpu)
        faulty = sum(1 for r in document["racks"] if r["suspects"])
        incomplete = sum(1 for r in document["racks"] if r["status"] == "incomplete")
        print(f"in process, localize_files over {len(paths)} files, {label}: wall median {statistics.median(walls):.2f} s "
              f"(runs: {', '.join(f'{t:.2f}' for t in walls)}), CPU median {statistics.median(cpus):.2f} s; "
              f"{faulty} racks with suspects, {incomplete} incomplete")

    command = [sys.executable, "-m", "opsctl", "localize", "--json", *map(str, paths)]
    walls, cpus = [], []
    for _ in range(args.repeat):
        wall, cpu = time.perf_counter(), _cpu_seconds(children=True)
        proc = subprocess.run(command, capture_output=True, cwd=ROOT)
        walls.append(time.perf_counter() - wall)
        cpus.append(_cpu_seconds(children=True) - cpu)
        if proc.returncode not in (0, 1, 3):
            print(proc.stderr.decode(), file=sys.stderr)
            sys.exit(1)
    print(f"end to end, `opsctl localize --json` on {len(paths)} files as a new process: wall median "
          f"{statistics.median(walls):.2f} s (runs: {', '.join(f'{t:.2f}' for t in walls)}), CPU median "
          f"{statistics.median(cpus):.2f} s, exit {proc.returncode}")
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} (other work on the machine stretches wall time)")


def _cpu_seconds(children=False):
    """CPU time (user + system) of this process and its workers, or of finished child processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    total = usage.ru_utime + usage.ru_stime
    if not children:  # the pool's workers are children too
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        total += kids.ru_utime + kids.ru_stime
    return total


if __name__ == "__main__":
    main()
