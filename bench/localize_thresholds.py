"""The localizer at the rulebook's limits: faults placed at and around each limit, one, two and
three at once, in GPU-end-only snapshots (what a real NVL72 gives without its switch trays),
over in-spec noise, for 60 and 600 s windows.

Each rule is tried on the generation that has its counter: the data-link CRC, replay and recovery
rules on an HGX H100 (NVLink 4; CRC noise on every healthy link drawn up to 50/s, half of DCGM's
100/s fail limit), the NVLink 5 rules of DCGM 4.6's MonitorNVLink5Fields (each counter, the
recovery events, the effective BER and the symbol BER against DCGM's floor) on a GB200 NVL72
(which has no data-link counter; an effective BER drawn up to 5e-13 on every healthy link, half of
DCGM's 1e-12). Each trial puts k faulty links (1-3; 1-2 on HGX) on links of different trays (HGX:
GPUs) and switch chips, each at `level` × its rule's limit (the symbol BER: at a packed value around
DCGM's floor), and localizes the snapshot. Above the limit every faulty link should be named; below
it nothing should be. Printed per rule and level: trials, the share whose named faults are
exactly the injected links (detected), and the share that named anything not injected (false alarms).

    .venv/bin/python bench/localize_thresholds.py [--trials N] [--seed N]
"""

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opsctl.localize import localize_snapshot  # noqa: E402
from opsctl.rack_models import model_named  # noqa: E402
from opsctl.topology import build_topology  # noqa: E402

NOISE_CRC_PER_S = 50.0  # NVLink 4
NOISE_BER = 5e-13  # NVLink 5
WINDOWS = (60.0, 600.0)
RACKS = {"hgx-h100": "hgx01", "gb200-nvl72": "rack07"}
# Faults at once: on an HGX three bad links are one baseboard's fault (every link crosses it, and
# one part explains them better than three), so it is tried with one and two.
FAULT_COUNTS = {"hgx-h100": (1, 2), "gb200-nvl72": (1, 2, 3)}
NVLINK5_COUNTERS = ("symbol_errors", "rcv_errors", "rcv_remote_errors", "rcv_general_errors", "malformed_packet_errors",
                    "buffer_overrun_errors", "local_link_integrity_errors", "effective_errors", "link_down_events",
                    "recovery_successful", "recovery_events")
# rule: (the rack model whose links have the counter, the snapshot field, its limit, per second?)
RULES = {
    "crc_errors ≥ 100/s": ("hgx-h100", "crc_errors", 100.0, True),
    "replay_errors ≥ 1": ("hgx-h100", "replay_errors", 1, False),
    "recovery_errors ≥ 1": ("hgx-h100", "recovery_errors", 1, False),
    "symbol_errors ≥ 1": ("gb200-nvl72", "symbol_errors", 1, False),
    "rcv_errors ≥ 1": ("gb200-nvl72", "rcv_errors", 1, False),
    "rcv_remote_errors ≥ 1": ("gb200-nvl72", "rcv_remote_errors", 1, False),
    "rcv_general_errors ≥ 1": ("gb200-nvl72", "rcv_general_errors", 1, False),
    "malformed_packet_errors ≥ 1": ("gb200-nvl72", "malformed_packet_errors", 1, False),
    "buffer_overrun_errors ≥ 1": ("gb200-nvl72", "buffer_overrun_errors", 1, False),
    "local_link_integrity_errors ≥ 1": ("gb200-nvl72", "local_link_integrity_errors", 1, False),
    "effective_errors ≥ 1": ("gb200-nvl72", "effective_errors", 1, False),
    "link_down_events ≥ 1": ("gb200-nvl72", "link_down_events", 1, False),
    "recovery_successful ≥ 1": ("gb200-nvl72", "recovery_successful", 1, False),
    "recovery_events ≥ 1": ("gb200-nvl72", "recovery_events", 1, False),
    "effective_ber > 1e-12": ("gb200-nvl72", "effective_ber", 1e-12, False),
    "symbol BER worse than 15e-238": ("gb200-nvl72", "symbol_ber_raw", None, False),
}
# Multiples of the limit: below (nothing may be named), at, and above (every fault named).
CRC_LEVELS = (0.5, 0.9, 0.99, 1.0, 1.01, 2.0, 3.0)
COUNT_LEVELS = (0, 1, 2, 3)
BER_LEVELS = (0.5, 1.0, 1.01, 2.0, 3.0)
# The symbol BER as NVML packs it (mantissa in bits 11:8, exponent in bits 7:0), around DCGM's floor
# (exponent 238, mantissa 15, the largest four bits hold: at the floor's exponent nothing fails):
# the level is the BER, mantissa × 10^-exponent. A mantissa of 0 passes whatever the exponent.
SYMBOL_BER_LEVELS = {  # level: (exponent, mantissa, fails)
    "9e-239": (239, 9, False), "15e-238": (238, 15, False), "0e-237": (237, 0, False), "1e-237": (237, 1, True),
    "15e-200": (200, 15, True),
}

def pick_links(topology, rng, k):
    """k links on k different compute trays and switch trays (an HGX's one tray: on k different
    GPUs and switch chips): k independent faults."""
    nvl72 = topology.model.is_nvl72
    links = sorted(topology.links)
    chosen, trays, switches = [], set(), set()
    while len(chosen) < k:
        link = topology.links[rng.choice(links)]
        tray, switch = (link.tray, link.switch_tray) if nvl72 else (link.gpu, link.switch)
        if tray not in trays and switch not in switches:
            chosen.append(link.id)
            trays.add(tray)
            switches.add(switch)
    return chosen


def fault_value(rule, level, window_s):
    _, field, limit, per_second = RULES[rule]
    if field == "symbol_ber_raw":
        exponent, mantissa, _ = SYMBOL_BER_LEVELS[level]
        return field, mantissa << 8 | exponent
    if field == "effective_ber":
        return field, limit * level
    if per_second:
        return field, round(limit * level * window_s)
    return field, int(level)


def is_above(rule, level):
    _, field, _, per_second = RULES[rule]
    if field == "symbol_ber_raw":
        return SYMBOL_BER_LEVELS[level][2]
    if field == "effective_ber":
        return level > 1.0
    return level >= 1.0 if per_second else level >= 1


def snapshot(topology, rng, window_s, faulty, field, value):
    rows = []
    for link_id, link in sorted(topology.links.items()):
        row = {"gpu": link.gpu, "port": link.port, "state": "up"}
        if topology.model.is_nvl72:  # NVLink 5: its own counters and BER, no data-link counter
            row.update({**dict.fromkeys(NVLINK5_COUNTERS, 0), "effective_ber": rng.uniform(0, NOISE_BER)})
        else:
            row.update({"crc_errors": int(rng.uniform(0, NOISE_CRC_PER_S) * window_s), "replay_errors": 0, "recovery_errors": 0})
        if link_id in faulty:
            row[field] = value
        rows.append(row)
    return {"rack": topology.rack, "model": topology.model.name, "window_seconds": window_s, "links": rows, "gpus": []}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4, help="trials per rule, level, fault count and window")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    topologies = {model: build_topology(rack, model_named(model)) for model, rack in RACKS.items()}
    rng = random.Random(args.seed)
    started = time.perf_counter()
    total = 0
    print(f"{'rule':34} {'level':>6} {'faults':>6} {'trials':>6} {'detected':>9} {'false alarms':>13}")
    for rule in RULES:
        model, field, _, per_second = RULES[rule]
        topology = topologies[model]
        levels = (SYMBOL_BER_LEVELS if field == "symbol_ber_raw" else BER_LEVELS if field == "effective_ber"
                  else CRC_LEVELS if per_second else COUNT_LEVELS)
        for level in levels:
            for k in FAULT_COUNTS[model]:
                exact = alarms = trials = 0
                for window_s in WINDOWS:
                    for _ in range(args.trials):
                        faulty = pick_links(topology, rng, k)
                        name, value = fault_value(rule, level, window_s)
                        result = localize_snapshot(snapshot(topology, rng, window_s, set(faulty), name, value), topology)
                        found = {s["component"] for s in result["suspects"] if "alternative_to" not in s}
                        truth = set(faulty) if is_above(rule, level) else set()
                        exact += found == truth
                        alarms += bool(found - truth)
                        trials += 1
                total += trials
                print(f"{rule:34} {level:>6} {k:>6} {trials:>6} {exact / trials:>9.0%} {alarms / trials:>13.0%}")
    print(f"{total} snapshots (an HGX's 144 links, an NVL72's 1,296) localized in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
