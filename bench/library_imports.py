"""What the ledger's and the report's libraries (issue 19: scipy.stats, SQLAlchemy, Jinja2) cost:
the import time of the ledger's database and intervals modules and of the HTML report module
(python -X importtime, the module's cumulative figure, median of --runs), and what each library
costs the first time a command uses it; and `opsctl --help`, wall and CPU (user + system) time of
a fresh process — the CPU time is what a busy machine disturbs least. Given several checkouts
(--tree DIR …), runs them in turn, interleaved, so a busy machine slows all alike.

    .venv/bin/python bench/library_imports.py --runs 5
    .venv/bin/python bench/library_imports.py --runs 5 --tree /tmp/before --tree .
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

MODULES = ("opsctl.ledger.database", "opsctl.ledger.intervals", "opsctl.reports.html_report")
# The libraries as the code loads them on first use (lazily, inside the functions).
FIRST_USE = {"scipy.stats": "scipy.stats", "sqlalchemy (text, psycopg dialect)": "sqlalchemy.dialects.postgresql.psycopg",
             "jinja2": "jinja2"}


def cumulative_ms(tree: Path, module: str) -> float | None:
    """The cumulative import time python -X importtime reports for `module` imported on its own."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], cwd=tree, capture_output=True,
                            text=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    if result.returncode != 0:
        return None
    for line in reversed(result.stderr.splitlines()):
        fields = line.split("|")
        if len(fields) == 3 and fields[2].strip() == module:
            return int(fields[1]) / 1000
    return None


def help_seconds(tree: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one `opsctl --help` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "opsctl", "--help"], cwd=tree, check=True, stdout=subprocess.DEVNULL,
                   env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", action="append", type=Path, help="a checkout to time (default: this one)")
    args = parser.parse_args()
    trees = [tree.resolve() for tree in (args.tree or [Path(__file__).resolve().parent.parent])]
    names = [*MODULES, *FIRST_USE]
    times: dict[tuple[Path, str], list[float]] = {(tree, name): [] for tree in trees for name in names}
    for _ in range(args.runs):
        for name in names:
            for tree in trees:
                found = cumulative_ms(tree, FIRST_USE.get(name, name))
                if found is not None:
                    times[tree, name].append(found)
        for tree in trees:
            wall, cpu = help_seconds(tree)
            times.setdefault((tree, "opsctl --help wall"), []).append(wall * 1000)
            times.setdefault((tree, "opsctl --help CPU"), []).append(cpu * 1000)
    for (tree, name), runs in times.items():
        shown = f"median {statistics.median(runs):7.1f} ms  (min {min(runs):.1f}, max {max(runs):.1f}, {len(runs)} runs)" if runs else "—"
        print(f"{tree}  {name if name.startswith('opsctl --') else 'import ' + name:47s} {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
