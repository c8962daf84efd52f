"""What a simulated tray probe costs in CPU: `python -m probes run --backend sim` on one tray,
or on every tray of rack07 at once (as `opsctl burnin rack07` runs them), for --duration seconds.

Prints, per run: wall seconds, CPU seconds (user + system of the probe process), CPU seconds per
GPU per 10 s of run, peak RSS, and the NVML read time per GPU the document reports.

    .venv/bin/python bench/probe_sim_cpu.py --duration 60            # one tray (ct03)
    .venv/bin/python bench/probe_sim_cpu.py --duration 60 --all-trays # 27 trays at once
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


def spec_file(directory):
    path = Path(directory) / "rack07.json"
    subprocess.run([sys.executable, "-m", "opsctl", "sim", "spec", "rack07", "-o", str(path)], check=True, cwd=REPO)
    return path


def launch(spec, tray, duration):
    return subprocess.Popen([sys.executable, "-m", "probes", "run", "--backend", "sim", "--sim-spec", str(spec),
                             "--tray", tray, "--duration", str(duration), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)


def wait(process):
    """(exit code, stdout, cpu seconds, peak RSS MiB) of a process, via wait4."""
    out = process.stdout.read()
    process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, out, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--tray", default="ct03")
    parser.add_argument("--all-trays", action="store_true", help="every tray of rack07 at once (18 compute + 9 switch)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        spec = spec_file(directory)
        trays = [f"ct{i:02d}" for i in range(1, 19)] + [f"st{i}" for i in range(1, 10)] if args.all_trays else [args.tray]
        started = time.monotonic()
        processes = {tray: launch(spec, tray, args.duration) for tray in trays}
        results = {tray: wait(process) for tray, process in processes.items()}
        wall = time.monotonic() - started
    compute = {t: r for t, r in results.items() if t.startswith("ct")}
    switch = {t: r for t, r in results.items() if t.startswith("st")}
    print(f"machine: {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB; "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    print(f"trays: {len(trays)} at once, --duration {args.duration:g} s; wall {wall:.1f} s for all")
    reads = []
    for tray, (code, out, cpu, rss) in compute.items():
        document = json.loads(out)
        gpus = len(document["gpus"])
        reads += [g["before"]["read_seconds"] for g in document["gpus"]]
        print(f"  {tray}: exit {code}, run {document['duration_s']:.1f} s, CPU {cpu:.2f} s = "
              f"{cpu / gpus / (args.duration / 10):.3f} CPU-s per GPU per 10 s, peak RSS {rss:.0f} MiB")
    for tray, (code, out, cpu, rss) in switch.items():
        print(f"  {tray}: exit {code}, CPU {cpu:.2f} s, peak RSS {rss:.0f} MiB")
    cpu_total = sum(r[2] for r in results.values())
    print(f"CPU in all: {cpu_total:.1f} s over {wall:.1f} s wall ({cpu_total / wall:.2f} cores busy on average)")
    if reads:
        print(f"NVML read of one GPU (identity, health, 18 links): median {statistics.median(reads) * 1000:.0f} ms, "
              f"max {max(reads) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
