"""How often the ledger's 95 % intervals contain the injected truth, over many seeded fleet
histories (8 GB200 NVL72 racks, 200 days each). A good interval holds about 95 % of the time;
each history is recorded through the recording API into a fresh SQLite ledger.

    .venv/bin/python bench/ledger_coverage.py [--seeds 40]
"""

import argparse
import tempfile
import time

from opsctl.ledger import fleet_statistics, open_ledger
from fleet_history import record_history, simulate_fleet_history


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=40)
    args = parser.parse_args()
    hits, trials = {}, {}
    started = time.perf_counter()
    for seed in range(1, args.seeds + 1):
        history = simulate_fleet_history(racks=8, days=200, seed=seed)
        with tempfile.TemporaryDirectory(dir="/dev/shm") as directory, open_ledger(f"sqlite:///{directory}/l.sqlite") as ledger:
            record_history(history, ledger)
            stats = fleet_statistics(ledger, until=history.until)
        checks = {"MTBI overall": (stats["mtbi"]["overall"]["interval"], history.injected.mtbi_gpu_days)}
        for mode in history.injected.modes:
            checks[f"MTBI {mode.kind}"] = (stats["mtbi"]["by_kind"].get(mode.kind, {"interval": [None, None]})["interval"],
                                           mode.mtbi_gpu_days)
        for action, truth in history.injected.repair_median_hours.items():
            row = stats["mttr"]["by_action"].get(action)
            if row and row["interval_coverage"] >= 0.95:
                checks[f"median restore {action}"] = (row["interval"], truth)
        burnin = stats["burnin"]
        checks["burn-in failure share"] = (burnin["interval"], history.injected.burnin_failure_probability)
        for name, ((low, high), truth) in checks.items():
            trials[name] = trials.get(name, 0) + 1
            hits[name] = hits.get(name, 0) + ((low or 0) <= truth <= (high if high is not None else float("inf")))
    elapsed = time.perf_counter() - started
    print(f"{args.seeds} simulated fleets in {elapsed:.0f} s; share of 95 % intervals that contain the injected value:")
    for name in trials:
        print(f"  {name:36s} {hits[name] / trials[name]:6.1%}  ({hits[name]}/{trials[name]})")


if __name__ == "__main__":
    main()
