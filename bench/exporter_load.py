"""CPU that `opsctl exporter --rack rack07` (72 simulated GPUs, read every 10 s) uses under N
concurrent scrapers that each scrape once a second, as a share of one core; beside it the same
exporter with no scraper (its reads alone), in interleaved windows so the machine's load drifts
over both alike. CPU is the exporter process's user + system time (/proc/PID/stat) over each
window; renders are counted as the distinct bodies the scrapers got. Prints the figures with the
load average and the bytecode state; docs/benchmarks.md records them.

    .venv/bin/python bench/exporter_load.py [--scrapers 10] [--window 30] [--pairs 2]
"""

import argparse
import hashlib
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exporter_scrape import bytecode_state, scrape, start, wait_for_every_gpu  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def window(pid, port, scrapers, seconds):
    """(CPU seconds / wall seconds, scrape latencies, distinct bodies) over one window."""
    latencies, bodies, stop = [], set(), time.monotonic() + seconds
    lock = threading.Lock()

    def scraper(offset):
        time.sleep(offset)  # spread over the second, as independent Prometheus servers would be
        due = time.monotonic()
        while due < stop:
            took, body, _ = scrape(port)
            with lock:
                latencies.append(took)
                bodies.add(hashlib.sha1(body).digest())
            due += 1.0
            time.sleep(max(0.0, due - time.monotonic()))

    threads = [threading.Thread(target=scraper, args=(i / max(1, scrapers),)) for i in range(scrapers)]
    cpu0, wall0 = cpu_seconds(pid), time.monotonic()
    for thread in threads:
        thread.start()
    if not threads:
        time.sleep(seconds)
    for thread in threads:
        thread.join()
    return (cpu_seconds(pid) - cpu0) / (time.monotonic() - wall0), latencies, len(bodies)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scrapers", type=int, default=10)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    exporter, port = start([sys.executable, "-m", "opsctl", "exporter", "--rack", "rack07", "--listen", "127.0.0.1",
                            "--port", "0", "--json"])
    try:
        wait_for_every_gpu(port)
        time.sleep(10)  # one whole round after the first
        load = [os.getloadavg()[0]]
        idle, loaded, latencies, renders = [], [], [], []
        for _ in range(args.pairs):
            idle.append(window(exporter.pid, port, 0, args.window)[0])
            share, lat, distinct = window(exporter.pid, port, args.scrapers, args.window)
            loaded.append(share)
            latencies += lat
            renders.append(distinct)
            load.append(os.getloadavg()[0])
    finally:
        exporter.terminate()
        exporter.wait()
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    print(f"machine: {os.cpu_count()} cores, load average (1 min) {' -> '.join(f'{x:.1f}' for x in load)}; {bytecode_state()}")
    print(f"opsctl exporter --rack rack07, reads every 10 s; {args.pairs} interleaved pairs of {args.window:.0f} s windows")
    print(f"no scraper (reads alone):        {statistics.mean(idle):.3f} core  (windows: {', '.join(f'{x:.3f}' for x in idle)})")
    print(f"{args.scrapers} scrapers at 1 Hz each:       {statistics.mean(loaded):.3f} core  (windows: {', '.join(f'{x:.3f}' for x in loaded)}); "
          f"ratio to one core {statistics.mean(loaded):.2f}")
    print(f"  of it serving the scrapes:     {statistics.mean(loaded) - statistics.mean(idle):.3f} core")
    print(f"  renders (distinct bodies) a {args.window:.0f} s window: {renders} (reading rounds of 10 s: {args.window / 10:.0f}-{args.window / 10 + 1:.0f})")
    print(f"  scrape latency over {len(latencies)} scrapes: p50 {q[49] * 1000:.0f} ms, p90 {q[89] * 1000:.0f} ms, "
          f"p99 {q[98] * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
