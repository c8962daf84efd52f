"""Where `opsctl localize` spends its CPU on each rack of a fleet, stage by stage, in one process.

The stages are those of opsctl.localize.localize_files for one file: reading it (the file, the JSON,
the checks on repeated keys and nesting and against the snapshot schema, which msgspec does in one
pass), resolving its readings onto the rack model, and localizing (the evidence, the search, the
result document). Each is timed in CPU seconds over every rack, the best of --rounds passes (another
process's load only ever adds), and printed per rack; then the whole of localize_files in one
process, for comparison.

    .venv/bin/python bench/localize_stages.py [--dir /tmp/opsctl-fleet] [--racks 228] [--rounds 3]

The fleet is bench/localize_fleet.py's (made there first where missing, as bench/startup_ratios.py
makes it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.startup_ratios import fleet_files  # noqa: E402
from opsctl.localize import _localize_observation, localize_files  # noqa: E402
from opsctl.localize.parts import part_index_for  # noqa: E402
from opsctl.localize.snapshot import parse_snapshot, read_snapshot_file, snapshot_model  # noqa: E402
from opsctl.mttr import load_mttr_model  # noqa: E402

STAGES = ("read the file (JSON, repeated keys, nesting, schema)", "resolve onto the rack model",
          "localize (evidence, search, result)")


def one_pass(files: list[str], mttr) -> list[float]:
    spent = [0.0] * len(STAGES)
    for path in files:
        started = time.process_time()
        [(_, snapshot)] = read_snapshot_file(path)
        marks = [time.process_time()]
        index = part_index_for(snapshot_model(snapshot))
        observation = parse_snapshot(snapshot, path, index)
        marks.append(time.process_time())
        _localize_observation(observation, index, mttr)
        marks.append(time.process_time())
        for stage, (before, after) in enumerate(zip([started, *marks], marks)):
            spent[stage] += after - before
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/opsctl-fleet")
    parser.add_argument("--racks", type=int, default=228)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    files = fleet_files(args.dir, args.racks)
    mttr = load_mttr_model()
    localize_files(files[:1], mttr=mttr, workers=1)  # the model's part index and the runbooks, built once
    best = [min(stage) for stage in zip(*(one_pass(files, mttr) for _ in range(args.rounds)))]
    whole = []
    for _ in range(args.rounds):
        started = time.process_time()
        localize_files(files, mttr=mttr, workers=1)
        whole.append(time.process_time() - started)
    print(f"{len(files)} racks of {args.dir}, best of {args.rounds} rounds, CPU ms a rack; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for name, spent in zip(STAGES, best):
        print(f"  {name:52s} {spent / len(files) * 1000:6.2f}")
    print(f"  {'the three':52s} {sum(best) / len(files) * 1000:6.2f}")
    print(f"  {'localize_files, one process':52s} {min(whole) / len(files) * 1000:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
