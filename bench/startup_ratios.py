"""Issue 29's start-up and Monte Carlo figures, each a ratio against a baseline timed in the same run:

  - `opsctl --help` against `python -c "import click"`            (goal: within 5×)
  - `opsctl health rack07/ct01 --json` beyond its own --window      (goal: within 0.5 s, quiet machine)
  - `opsctl tco run RANGES --draws 100000` against `--draws 1`      (goal: within 4×)
  - `opsctl localize --json DIR/*.json` against `opsctl localize --help`, printed as "228 racks / localize
    --help" (goal: within 5×; only with --fleet DIR: the fleet of bench/localize_fleet.py, --racks of its
    racks, each snapshot made there first as that script makes it where it is missing). Its snapshots
    hold both ends of every link, as the simulator reads them; with --gpu-ends, only the GPU ends, as
    `opsctl snapshot` reads a real NVL72 today (switch trays run NVOS, which the probe does not read:
    they answer with no links, docs/probe-output.md) — half the JSON, kept in DIR-gpu-ends

Method: each figure and its baseline run as interleaved pairs of fresh processes (baseline, then the
command, --pairs times), so load that comes and goes on a shared machine falls on both alike; the
median of each, wall and CPU (user + system of the child, from getrusage) side by side, and the
ratio of the medians. The load average is printed before and after, and the bytecode state: cached
(.pyc files from an earlier run, what an installed opsctl has: PYTHONDONTWRITEBYTECODE is unset for
it) or, with --cold, none (every run compiles its modules: PYTHONPYCACHEPREFIX set to a fresh empty
folder per run).

    .venv/bin/python bench/startup_ratios.py [--pairs 11] [--cold] [--fleet /tmp/opsctl-fleet [--racks 228] [--gpu-ends]] [--only tco]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.child_cpu import timed_run  # noqa: E402
RANGES = REPO / "scenarios" / "llama4-16k-h100-ranges-spares-charged.yaml"
OPSCTL = [sys.executable, "-m", "opsctl"]
HEALTH_WINDOW_S = 1.0


def one_run(argv: list[str], cold: bool) -> tuple[float, float]:
    """(wall s, CPU s) of one fresh process."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # set where an image sets it, it would leave no bytecode cached
    with tempfile.TemporaryDirectory(prefix="opsctl-pyc-") as prefix:
        if cold:
            env["PYTHONPYCACHEPREFIX"] = prefix
        return timed_run(argv, REPO, env)


def pairs(baseline: list[str], command: list[str], count: int, cold: bool) -> tuple[list[tuple[float, float]], ...]:
    one_run(baseline, cold), one_run(command, cold)  # not counted: writes the .pyc files a cached run reads
    base, runs = [], []
    for _ in range(count):
        base.append(one_run(baseline, cold))
        runs.append(one_run(command, cold))
    return base, runs


def medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def spread(runs: list[tuple[float, float]]) -> str:
    walls = sorted(w for w, _ in runs)
    return f"{walls[0]:.3f}–{walls[-1]:.3f}"


def report(name: str, baseline_name: str, base: list, runs: list, goal: str) -> None:
    (bw, bc), (cw, cc) = medians(base), medians(runs)
    print(f"{name}")
    print(f"  baseline {baseline_name}: wall {bw:.3f} s ({spread(base)}), CPU {bc:.3f} s")
    print(f"  command:  wall {cw:.3f} s ({spread(runs)}), CPU {cc:.3f} s")
    print(f"  ratio of medians: wall {cw / bw:.2f}×, CPU {cc / bc:.2f}×   (goal: {goal})")


def bytecode_state(cold: bool) -> str:
    if cold:
        return "none (PYTHONPYCACHEPREFIX: a fresh empty folder per run)"
    import importlib.util

    cached = Path(importlib.util.cache_from_source(str(REPO / "opsctl" / "cli" / "__init__.py"))).exists()
    return "cached .pyc (written by an uncounted first run)" + ("" if cached else "; none found before it")


def fleet_files(folder: str, racks: int) -> list[str]:
    """The fleet's snapshots, fleet001.json … as bench/localize_fleet.py makes them (simulated,
    80% healthy, 15% one fault, 5% two, 5% with an unread tray), made where missing, one a CPU."""
    import multiprocessing

    Path(folder).mkdir(parents=True, exist_ok=True)
    missing = [(n, folder) for n in range(1, racks + 1) if not (Path(folder) / f"fleet{n:03d}.json").exists()]
    if missing:
        from bench.localize_fleet import _make

        print(f"making {len(missing)} rack snapshots in {folder} (bench/localize_fleet.py's fleet)…", flush=True)
        with multiprocessing.Pool() as pool:
            pool.map(_make, missing)
    return [str(Path(folder) / f"fleet{n:03d}.json") for n in range(1, racks + 1)]


def gpu_ends(files: list[str], folder: str) -> list[str]:
    """The same racks with only their GPU-end rows (made in `folder` where missing): what a real
    NVL72 gives, its switch trays answering with no links."""
    import json

    Path(folder).mkdir(parents=True, exist_ok=True)
    made = []
    for path in files:
        target = Path(folder) / Path(path).name
        if not target.exists():
            snapshot = json.loads(Path(path).read_text())
            snapshot["links"] = [link for link in snapshot["links"] if link.get("side") != "switch"]
            target.write_text(json.dumps(snapshot))
        made.append(str(target))
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=11)
    parser.add_argument("--cold", action="store_true", help="no cached bytecode: every run compiles its modules")
    parser.add_argument("--fleet", help="the folder of the fleet's rack snapshots (bench/localize_fleet.py --dir)")
    parser.add_argument("--racks", type=int, default=228, help="racks of the fleet to localize (default 228)")
    parser.add_argument("--gpu-ends", action="store_true", help="localize the fleet's racks with only their GPU ends, as a real NVL72 is read")
    parser.add_argument("--only", choices=("help", "health", "tco", "localize"), action="append")
    args = parser.parse_args()
    chosen = set(args.only or ("help", "health", "tco", "localize"))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; bytecode: {bytecode_state(args.cold)}; "
          f"{args.pairs} interleaved pairs each; wall and CPU are medians")
    if "help" in chosen:
        base, runs = pairs([sys.executable, "-c", "import click"], [*OPSCTL, "--help"], args.pairs, args.cold)
        report("opsctl --help", 'python -c "import click"', base, runs, "≤ 5×")
    if "health" in chosen:
        base, runs = pairs([sys.executable, "-c", "import click"],
                           [*OPSCTL, "health", "rack07/ct01", "--json", "--window", str(HEALTH_WINDOW_S)], args.pairs, args.cold)
        report(f"opsctl health rack07/ct01 --window {HEALTH_WINDOW_S:g} (simulated tray)", 'python -c "import click"',
               base, runs, "≤ 0.5 s beyond the window")
        print(f"  beyond its window: wall {medians(runs)[0] - HEALTH_WINDOW_S:.3f} s")
    if "tco" in chosen:
        run = [*OPSCTL, "tco", "run", str(RANGES), "--json", "--draws"]
        base, runs = pairs([*run, "1"], [*run, "100000"], args.pairs, args.cold)
        report(f"opsctl tco run {RANGES.name} --draws 100000", "--draws 1", base, runs, "≤ 4×")
    if "localize" in chosen and args.fleet:
        files = fleet_files(args.fleet, args.racks)
        if args.gpu_ends:
            files = gpu_ends(files, args.fleet.rstrip("/") + "-gpu-ends")
        base, runs = pairs([*OPSCTL, "localize", "--help"], [*OPSCTL, "localize", "--json", *files], args.pairs, args.cold)
        ends = "GPU ends only" if args.gpu_ends else "both ends"
        report(f"opsctl localize --json of {len(files)} racks' snapshots, {ends} (its default: one process a CPU)",
               "opsctl localize --help", base, runs, "≤ 5× at 228 racks")
        (bw, bc), (cw, cc) = medians(base), medians(runs)
        print(f"  {len(files)} racks / localize --help: {cw / bw:.2f}× wall, {cc / bc:.2f}× CPU "
              f"({(cc - bc) / len(files) * 1000:.1f} CPU-ms a rack beyond --help)")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
