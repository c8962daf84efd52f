"""How fast the ledger records and measures: events recorded per second through the recording
API (each its own transaction, SQLite with its default fsyncs on this disk, or --db), and the
time `ledger stats` takes over the result.

    .venv/bin/python bench/ledger_speed.py [--racks 40] [--days 365] [--db URL]
"""

import argparse
import tempfile
import time

from opsctl.ledger import fleet_statistics, open_ledger
from fleet_history import record_history, simulate_fleet_history


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--racks", type=int, default=40)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--db", help="ledger URL (default: a new SQLite file in a temp dir on disk)")
    args = parser.parse_args()
    history = simulate_fleet_history(racks=args.racks, days=args.days, seed=1, stagger_days=2)
    with tempfile.TemporaryDirectory(dir=".") as directory:
        url = args.db or f"sqlite:///{directory}/bench.sqlite"
        with open_ledger(url) as ledger:
            record_history(history, ledger)  # warm: builds the topology once
    with tempfile.TemporaryDirectory(dir=".") as directory:
        url = args.db or f"sqlite:///{directory}/bench.sqlite"
        with open_ledger(url) as ledger:
            started = time.perf_counter()
            record_history(history, ledger)
            recording = time.perf_counter() - started
            started = time.perf_counter()
            stats = fleet_statistics(ledger, until=history.until)
            measuring = time.perf_counter() - started
    events = len(history.events)
    print(f"{args.racks} racks × {args.days} days: {events} events ({stats['failures']['total']} failures, "
          f"{stats['exposure']['gpu_days']:,.0f} GPU-days)")
    print(f"recording: {recording:.1f} s, {events / recording:.0f} events/s ({1000 * recording / events:.1f} ms each)")
    print(f"ledger stats: {measuring * 1000:.0f} ms")


if __name__ == "__main__":
    main()
