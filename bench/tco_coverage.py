"""How often `opsctl tco run --from-ledger`'s interval for the effective $/M tokens contains the
true price, over many synthetic ledgers drawn from a known truth. A good interval at level L holds
about L of the time.

The truth is a fleet whose parts fail each at its own rate (bench/fleet_history.py's part kinds and
MTBIs, GB200 NVL72 of the order the published operator figures give) and whose repairs take
lognormal times around the MTTR model's figure for their action. Each trial is one fleet's
history: racks in service for some days (exposure in GPU-days), each kind's failures a Poisson
count, each failure repaired in a drawn time. The counts and repair times become the ledger's
failure classes exactly as --from-ledger makes them (opsctl/tco/from_ledger.py: a class per part
kind, its MTBI `poisson_mtbi` with prior ½ / kinds, its action's restore `lognormal_mean`; a kind
of the preset's failure_mix with no failure in the ledger, a class with none over the exposure),
the Llama 4 GB200 preset is priced
over them by the same Monte Carlo as `tco run`, and the true price is the preset priced with every
kind at its true MTBI and mean restore (software restarts, which no ledger records, as the preset
gives them in both).

    .venv/bin/python bench/tco_coverage.py [--trials 100] [--draws 400] [--prior 0.5] [--fleets 8x90,32x180]

--prior 0.5 gives every kind Jeffreys' prior (the sum of five adds 2.5 failures to the total).
"""

import argparse
import math
import sys
import time
from collections import Counter
from pathlib import Path

import numpy

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.fleet_history import DEFAULT_MODES  # noqa: E402
from opsctl.ledger.fleet_stats import ReliabilityInputs  # noqa: E402
from opsctl.ledger.intervals import poisson_interval  # noqa: E402
from opsctl.mttr import load_mttr_model  # noqa: E402
from opsctl.tco.from_ledger import LedgerRepairs, with_measured_reliability  # noqa: E402
from opsctl.tco.monte_carlo import figures_over_draws, summary  # noqa: E402
from opsctl.tco.pricing import price  # noqa: E402
from opsctl.tco.uncertain import UncertainScenario, load_uncertain  # noqa: E402

PRESET = REPO / "scenarios" / "llama4-16k-gb200-mtbi2000-spares-charged.yaml"
REPAIR_SIGMA = 0.5  # lognormal spread of restore times around the MTTR model's figure (as bench/fleet_history.py)
LEVELS = (0.5, 0.8, 0.9, 0.95)
FLEETS = {"2 racks × 60 days": (2, 60), "8 racks × 90 days": (8, 90), "32 racks × 180 days": (32, 180)}


def true_scenario(uncertain, mttr):
    """The preset with its hardware classes at the truth: each part kind at its MTBI and its action's mean restore."""
    data = {**uncertain.data, "reliability": dict(uncertain.data["reliability"])}
    software = [c for c in data["reliability"]["failure_mix"] if "blast_radius_gpus" in c]
    hardware = [{"name": m.kind, "action": m.action, "mtbi_gpu_days": m.mtbi_gpu_days,
                 "repair_hours": mttr.actions[m.action].mttr_hours * math.exp(REPAIR_SIGMA ** 2 / 2)}
                for m in DEFAULT_MODES]
    data["reliability"]["failure_mix"] = software + hardware
    data["sources"] = {k: v for k, v in data["sources"].items() if not k.startswith("reliability.failure_mix")}
    return UncertainScenario(data, uncertain.source).point


def synthetic_ledger(generator, exposure, mttr):
    """What a ledger of this exposure would measure: (ReliabilityInputs, LedgerRepairs)."""
    by_kind, hours, actions = {}, {}, {}
    for mode in DEFAULT_MODES:
        failures = int(generator.poisson(exposure / mode.mtbi_gpu_days))
        if not failures:
            continue
        low, high = poisson_interval(failures)
        by_kind[mode.kind] = {"failures": failures, "gpu_days": exposure, "mtbi_gpu_days": exposure / failures,
                              "interval": [exposure / high, exposure / low]}
        median = mttr.actions[mode.action].mttr_hours
        hours[mode.action] = list(median * numpy.exp(REPAIR_SIGMA * generator.standard_normal(failures)))
        actions[mode.kind] = Counter({mode.action: failures})
    measured = ReliabilityInputs({}, "synthetic ledger", {"mtbi_by_kind": by_kind, "confidence": 0.95,
                                                          "mtbi": {"gpu_days": exposure}})
    return measured, LedgerRepairs(hours, actions)


def trial(uncertain, truth, mttr, generator, racks, days, draws, seed, prior):
    measured, repairs = synthetic_ledger(generator, racks * 72 * days, mttr)
    priced, _ = with_measured_reliability(uncertain, measured, repairs, mttr, prior=prior)
    table = figures_over_draws(priced, mttr, draws, seed)["effective_cost_per_million_tokens"]
    covered = {}
    for level in LEVELS:
        _, (low, high) = summary(table, level)
        covered[level] = (math.inf if low is None else low) <= truth <= (math.inf if high is None else high)
    return len(measured.detail["mtbi_by_kind"]), covered


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--prior", type=float, default=None,
                        help="each kind's prior shape (default: ½ / kinds, Jeffreys' on the total)")
    parser.add_argument("--fleets", default=",".join(f"{r}x{d}" for r, d in FLEETS.values()),
                        help="racks x days, comma separated")
    args = parser.parse_args()
    fleets = {f"{r} racks × {d} days": (int(r), int(d)) for r, d in (f.split("x") for f in args.fleets.split(","))}
    mttr = load_mttr_model()
    uncertain = load_uncertain(PRESET)
    truth = price(true_scenario(uncertain, mttr), mttr)["effective_cost_per_million_tokens"]
    truth = math.inf if truth is None else truth
    kinds = ", ".join(f"{m.kind} {m.mtbi_gpu_days:,.0f}" for m in DEFAULT_MODES)
    print(f"true MTBI per kind (GPU-days): {kinds}; restore lognormal around the MTTR model's hours, σ {REPAIR_SIGMA}; "
          f"true price {truth:.5f} $/M tokens; {args.trials} synthetic ledgers a fleet, {args.draws} draws each; "
          f"{PRESET.name}; prior per kind {args.prior or '½ / kinds'}")
    for fleet, (racks, days) in fleets.items():
        generator = numpy.random.default_rng(2026)
        started = time.perf_counter()
        hits = {level: 0 for level in LEVELS}
        whole = {level: 0 for level in LEVELS}
        complete = 0
        for index in range(args.trials):
            seen, covered = trial(uncertain, truth, mttr, generator, racks, days, args.draws, seed=index, prior=args.prior)
            every = seen == len(DEFAULT_MODES)
            complete += every
            for level in LEVELS:
                hits[level] += covered[level]
                whole[level] += covered[level] and every
        elapsed = time.perf_counter() - started
        shares = "  ".join(f"{level:.0%}: {hits[level] / args.trials:5.1%}" for level in LEVELS)
        given = "  ".join(f"{level:.0%}: {whole[level] / complete:5.1%}" if complete else f"{level:.0%}: -"
                          for level in LEVELS)
        print(f"{fleet} ({racks * 72 * days:,} GPU-days): {args.trials - complete} ledgers miss a kind ({elapsed:.0f} s)\n"
              f"  share of intervals that contain the true price, all ledgers:        {shares}\n"
              f"  the {complete} ledgers with a failure of every kind:                {given}")


if __name__ == "__main__":
    main()
