"""Fan-out overhead over ssh: a whole simulated GB200 NVL72 rack (18 compute + 9 switch trays,
each behind a real sshd on 127.0.0.2–28) against the slowest of its trays run alone.

    .venv/bin/python bench/fanout_ssh.py [--duration 20 60 ...] [--repeat 2]

For each duration of load it runs `python -m probes run` on all 27 trays at once through
opsctl's fan-out (paramiko, host keys verified), then the tray that was slowest in that run
by itself, and prints the wall times, the overhead (rack ÷ slowest tray − 1; the goal is at
most 10%) and the CPU the fan-out itself used in this process. The probes' own CPU is counted
apart: on a small machine 27 probe processes compete for its cores, which no fan-out can hide.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opsctl.backend import sim_spec_for  # noqa: E402
from opsctl.fanout import run_on_trays  # noqa: E402
from opsctl.inventory import load_inventory  # noqa: E402
from tests.sshd import start_sshd  # noqa: E402  (the test suite's throwaway sshd)

SCENARIO = Path(__file__).resolve().parent.parent / "opsctl" / "data" / "scenarios" / "rack07-seeded.yaml"


def cpu_seconds(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def sshd_children_cpu_seconds(server):
    """CPU of everything the sshd listeners have reaped: the sessions and the probes in them."""
    ticks = 0
    for process in server.processes:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime (fields 16 and 17 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def timed(rack, args, trays, spec, workdir):
    own_cpu = cpu_seconds(resource.RUSAGE_SELF)
    started = time.monotonic()
    results = run_on_trays(rack, args, trays=trays, sim_spec=spec, workdir=workdir)
    wall = time.monotonic() - started
    incomplete = [r.tray for r in results if not r.complete]
    if incomplete:
        raise SystemExit(f"trays did not complete: {incomplete}: {results[0].reason}")
    return wall, cpu_seconds(resource.RUSAGE_SELF) - own_cpu, results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, nargs="+", default=[20.0, 60.0], help="seconds of load per tray")
    parser.add_argument("--repeat", type=int, default=1, help="runs per duration (the median is printed)")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="opsctl-bench-fanout-"))
    server = start_sshd(root / "sshd")
    try:
        inventory = server.inventory(root / "inventory.yaml", scenario=SCENARIO,
                                     known_hosts=server.write_known_hosts(root / "known_hosts"))
        rack = load_inventory(inventory).rack("rack07")
        spec = sim_spec_for(rack)
        print(f"machine: {os.cpu_count()} cores; rack07 over ssh: {len(rack.trays)} trays behind a real sshd on loopback")
        print(f"{'load s':>7} {'rack s':>8} {'slowest tray':>13} {'alone s':>8} {'overhead':>9} "
              f"{'fan-out CPU s':>14} {'probe CPU s':>12}")
        rows = []
        for duration in args.duration:
            probe_args = ["run", "--duration", f"{duration:g}", "--json"]
            walls, singles, fanout_cpu, probe_cpu, slowest = [], [], [], [], None
            for _ in range(args.repeat):
                probes_before = sshd_children_cpu_seconds(server)
                wall, cpu, results = timed(rack, probe_args, None, spec, root)
                slowest = max(results, key=lambda r: r.seconds).tray
                walls.append(wall)
                fanout_cpu.append(cpu)
                single, _, _ = timed(rack, probe_args, [slowest], spec, root)
                singles.append(single)
                probe_cpu.append(sshd_children_cpu_seconds(server) - probes_before)
            wall, single = statistics.median(walls), statistics.median(singles)
            row = {"duration_s": duration, "rack_s": round(wall, 2), "slowest_tray": slowest, "alone_s": round(single, 2),
                   "overhead_pct": round(100 * (wall / single - 1), 1), "fanout_cpu_s": round(statistics.median(fanout_cpu), 2),
                   "probe_cpu_s": round(statistics.median(probe_cpu), 1)}
            rows.append(row)
            print(f"{duration:>7g} {wall:>8.1f} {slowest:>13} {single:>8.1f} {row['overhead_pct']:>8.1f}% "
                  f"{row['fanout_cpu_s']:>14.2f} {row['probe_cpu_s']:>12.1f}")
        print(json.dumps(rows))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
