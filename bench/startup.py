"""Start-up time of the two entry points a person or a tray starts most: `opsctl --help` and
`python -m probes --help` — wall time of a fresh process, median of --runs. Given several
checkouts (--tree DIR …), runs them in turn, interleaved, so a busy machine slows all alike:
the way to compare before and after a change.

    .venv/bin/python bench/startup.py --runs 15
    .venv/bin/python bench/startup.py --runs 15 --tree /tmp/before --tree .
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {"opsctl --help": ["-m", "opsctl", "--help"], "python -m probes --help": ["-m", "probes", "--help"]}


def one_run(tree: Path, arguments: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *arguments], cwd=tree, check=True, stdout=subprocess.DEVNULL,
                   env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tree", action="append", type=Path, help="a checkout to time (default: this one)")
    args = parser.parse_args()
    trees = [tree.resolve() for tree in (args.tree or [Path(__file__).resolve().parent.parent])]
    times: dict[tuple[Path, str], list[float]] = {(tree, name): [] for tree in trees for name in COMMANDS}
    for _ in range(args.runs):
        for name, arguments in COMMANDS.items():
            for tree in trees:
                times[tree, name].append(one_run(tree, arguments))
    for (tree, name), runs in times.items():
        quartiles = statistics.quantiles(runs, n=4)
        print(f"{tree}  {name:24s} median {statistics.median(runs):.3f} s  (quartiles {quartiles[0]:.3f}–{quartiles[2]:.3f}, {len(runs)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
