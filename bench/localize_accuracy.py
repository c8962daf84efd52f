"""Fault-injection benchmark of the localizer, through the simulator.

Every trial compiles a fault scenario onto a rack (opsctl.simulation), reads every tray with
the tray's own snapshot code over the simulated NVML (bench/simulated_snapshots.py), and
localizes the snapshot. Trials cover every part kind the topology models, three noise levels
(all in spec: DCGM fails CRC only at 100/s), parts that show symptoms on only some of their
links, two and three faults at once (on parts that share no link and no tray: both chips of a
switch tray failing is that tray's fault), unread trays, a fault on an unread compute tray
(seen from the switch end of its links), a fault no tray could see (whose downstream XIDs
every other GPU still logs: nothing may be blamed), and healthy racks.

Printed per kind: trials, top-1 (the first suspects are exactly the injected parts), top-3
(each injected part is among the first n + 2 suspects, n = number injected) and false alarms
(trials where a declared fault is not an injected part). Run:

    .venv/bin/python bench/localize_accuracy.py [--trials-per-kind N] [--workers N] [--window S] [--seed N]

--snapshot-cache DIR keeps each trial's snapshot on disk and reuses it on the next run, which
re-times and re-scores the localizer without reading the simulator again.
"""

import argparse
import gzip
import hashlib
import json
import multiprocessing
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from localize_faults import NOISE_LEVELS, RACKS, SEEDS, Generator, noise  # noqa: E402
from opsctl.localize import localize_snapshot  # noqa: E402
from simulated_snapshots import TraySnapshotCache, simulated_snapshot  # noqa: E402
from opsctl.mttr import load_mttr_model  # noqa: E402
from opsctl.rack_models import model_named  # noqa: E402
from opsctl.simulation import compile_rack_spec, parse_scenario  # noqa: E402
from opsctl.topology import build_topology  # noqa: E402

def trial_list(args):
    """Every trial: (model, category, kinds, seed, noise, unread-tray count, hidden, rng seed)."""
    rng = random.Random(args.seed)
    trials = []
    nvl72_kinds = ("link", "gpu", "connector", "switch_connector", "cartridge", "compute_tray", "switch_chip", "switch_tray")
    hgx_kinds = ("link", "gpu", "switch_chip")

    def add(model, category, kinds, unread=0, hidden=""):
        trials.append((model, category, kinds, rng.choice(SEEDS), rng.choice(list(NOISE_LEVELS)), unread, hidden, rng.randrange(10**9)))

    for kind in nvl72_kinds:
        for _ in range(args.trials_per_kind):
            add("gb200-nvl72", "single", (kind,))
    for kind in hgx_kinds:
        for _ in range(max(1, args.trials_per_kind // 2)):
            add("hgx-h100", "single", (kind,))
    for _ in range(args.trials_per_kind * 4):
        add("gb200-nvl72", "double", tuple(rng.choice(nvl72_kinds) for _ in range(2)))
    for _ in range(args.trials_per_kind * 2):
        add("gb200-nvl72", "triple", tuple(rng.choice(nvl72_kinds) for _ in range(3)))
    for _ in range(args.trials_per_kind * 2):
        add("gb200-nvl72", "unread trays", (rng.choice(nvl72_kinds),), unread=rng.randint(1, 2))
    for _ in range(args.trials_per_kind):
        add("gb200-nvl72", "fault on an unread compute tray, seen from its switch end", (rng.choice(["link", "connector"]),),
            unread=1, hidden="compute tray")
    for _ in range(args.trials_per_kind):
        add("gb200-nvl72", "fault no tray could see (its compute tray and the switch trays unread)",
            (rng.choice(["link", "gpu", "connector"]),), unread=1, hidden="all")
    for _ in range(args.trials_per_kind * 2):
        add("gb200-nvl72", "healthy", (), unread=rng.choice([0, 0, 1]))
    for _ in range(max(1, args.trials_per_kind // 2)):
        add("hgx-h100", "healthy", ())
    return trials


_TOPOLOGIES = {}
_CACHE = TraySnapshotCache()
_MTTR = None


def run_trial(trial, window_s, snapshot_dir=None):
    global _MTTR
    model_name, category, kinds, seed, level, unread, hidden, rng_seed = trial
    if model_name not in _TOPOLOGIES:
        _TOPOLOGIES[model_name] = build_topology(RACKS[model_name], model_named(model_name))
    _MTTR = _MTTR or load_mttr_model()
    topology = _TOPOLOGIES[model_name]
    rng = random.Random(rng_seed)
    faults, truths, labels, used_links = Generator(topology, rng, window_s).faults(kinds)
    trays = [t for t in topology.model.compute_tray_names() if t != "node"]
    fault_trays = {topology.links[link].tray for link in used_links}
    if hidden:  # the fault's own compute tray goes unread: its switch ends still see its links…
        unread_trays = sorted(fault_trays)[:1]
        if hidden == "all":  # …unless the switch trays are unread too: then nothing may be blamed
            unread_trays += topology.model.switch_tray_names()
            truths = []
    else:
        spare = [t for t in trays if t not in fault_trays]
        # A part that spans every tray (a cartridge, a switch chip) stays in view through the others.
        unread_trays = rng.sample(spare if len(spare) >= unread else trays, unread) if unread else []
    faults += [{"kind": "tray_unreachable", "tray": tray} for tray in unread_trays]
    raw = {"scenario": f"bench-{rng_seed}", "seed": seed, "noise": noise(level, topology.model), "faults": faults}
    scenario = parse_scenario(raw, f"<bench trial {rng_seed}>")
    stored = None
    if snapshot_dir:  # keyed on what is simulated, so a changed generator never reads a stale snapshot
        key = hashlib.sha256(json.dumps([model_name, raw, window_s], sort_keys=True).encode()).hexdigest()[:20]
        stored = Path(snapshot_dir) / f"{key}.json.gz"
    if stored is not None and stored.exists():
        snapshot = json.loads(gzip.decompress(stored.read_bytes()))
    else:
        spec = compile_rack_spec(scenario, topology)
        snapshot = simulated_snapshot(spec, window_s, _CACHE)
        if stored is not None:
            stored.write_bytes(gzip.compress(json.dumps(snapshot).encode()))
    started = time.perf_counter()
    result = localize_snapshot(snapshot, topology, _MTTR)
    elapsed = time.perf_counter() - started
    declared = [s["component"] for s in result["suspects"] if "alternative_to" not in s]
    ranked = [s["component"] for s in result["suspects"]]
    n = len(truths)
    return {
        "category": category,
        "model": model_name,
        "kinds": kinds,
        "labels": labels,
        "noise": level,
        "truths": truths,
        "top1": set(ranked[:n]) == set(truths) and len(declared) == n,
        "topk": all(t in ranked[: n + 2] for t in truths),
        "false_alarm": any(c not in truths for c in declared),
        "declared": declared,
        "scored": [(s["score"], s["component"] in truths) for s in result["suspects"]],
        "status": result["status"],
        "seconds": elapsed,
    }


def _worker(work):
    chunk, window_s, snapshot_dir = work
    return [run_trial(trial, window_s, snapshot_dir) for trial in chunk]


def summarize(results):
    rows = defaultdict(list)
    for r in results:
        if r["category"] == "single":
            rows[(r["model"], f"single: {r['kinds'][0]}")].append(r)
        else:
            rows[(r["model"], r["category"])].append(r)
        rows[(r["model"], f"noise {r['noise']}")].append(r)
    lines = ["| rack | trials | n | top-1 | top-3 | false alarms |", "|---|---|---|---|---|---|"]
    for (model, label), found in sorted(rows.items(), key=lambda kv: (kv[0][0] != "gb200-nvl72", kv[0][1])):
        n = len(found)
        scored = [r for r in found if r["truths"]]
        top1 = f"{100 * sum(r['top1'] for r in scored) / len(scored):.1f}%" if scored else "–"
        topk = f"{100 * sum(r['topk'] for r in scored) / len(scored):.1f}%" if scored else "–"
        false_alarms = sum(r["false_alarm"] for r in found)
        lines.append(f"| {model} | {label} | {n} | {top1} | {topk} | {false_alarms} ({100 * false_alarms / n:.1f}%) |")
    singles = [r for r in results if r["category"] == "single"]
    doubles = [r for r in results if r["category"] == "double"]
    healthy = [r for r in results if r["category"] == "healthy"]
    lines.append("")
    lines.append(f"all single faults: top-1 {100 * sum(r['top1'] for r in singles) / len(singles):.1f}% of {len(singles)}; "
                 f"double faults: top-1 {100 * sum(r['top1'] for r in doubles) / max(1, len(doubles)):.1f}% of {len(doubles)}; "
                 f"healthy racks with a false alarm: {sum(r['false_alarm'] for r in healthy)} of {len(healthy)}")
    lines.append("")
    lines.append("calibration — every suspect listed (faults and runners-up), by score: how many were an injected part")
    lines.append("| score | suspects | injected | share |")
    lines.append("|---|---|---|---|")
    edges = (0.0, 0.05, 0.5, 0.9, 0.99, 1.0001)
    for low, high in zip(edges, edges[1:]):
        found = [right for r in results for score, right in r["scored"] if low <= score < high]
        if found:
            lines.append(f"| {low:g}–{min(high, 1):g} | {len(found)} | {sum(found)} | {100 * sum(found) / len(found):.1f}% |")
    seconds = sorted(r["seconds"] for r in results)
    lines.append(f"localize per rack: median {1000 * seconds[len(seconds) // 2]:.1f} ms, max {1000 * seconds[-1]:.1f} ms")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials-per-kind", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--window", type=float, default=60.0, help="snapshot window, seconds (default 60)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--snapshot-cache", metavar="DIR", help="keep and reuse the trials' snapshots here")
    args = parser.parse_args()
    trials = trial_list(args)
    # Trials of one seed and noise level go to one worker, whose tray cache they share.
    groups = defaultdict(list)
    for trial in trials:
        groups[(trial[0], trial[3], trial[4])].append(trial)
    if args.snapshot_cache:
        Path(args.snapshot_cache).mkdir(parents=True, exist_ok=True)
    chunks = [(group, args.window, args.snapshot_cache) for group in groups.values()]
    started = time.time()
    with multiprocessing.Pool(args.workers) as pool:
        results = [r for chunk in pool.imap_unordered(_worker, chunks) for r in chunk]
    print(f"{len(results)} trials, window {args.window:g} s, seed {args.seed}, {time.time() - started:.0f} s wall on {args.workers} worker(s)")
    print(summarize(results))
    if args.show_misses:
        for r in results:
            if (r["truths"] and not r["top1"]) or r["false_alarm"]:
                print("MISS", r["category"], r["labels"], r["noise"], "truth", r["truths"], "declared", r["declared"])


if __name__ == "__main__":
    main()
