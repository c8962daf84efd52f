"""Whether failure rates differ beyond chance: exact tests on Poisson counts over exposures.

- Two cohorts (k₁ failures over E₁ GPU-days, k₂ over E₂): the conditional binomial test. Given
  n = k₁ + k₂ failures in all, k₁ is Binomial(n, E₁ / (E₁ + E₂)) when both fail at one rate; the
  two-sided p-value is the exact binomial test's (scipy.stats.binomtest), and the rate ratio's
  interval comes from the Clopper-Pearson interval of that binomial share (Przyborowski &
  Wilenski 1940; the exact test of two Poisson rates).
- More than two: each cohort against the rest of the fleet by the same test, the p-values
  adjusted by Holm's step-down method (Holm 1979), which holds the chance of calling any cohort
  different when none is (the family-wise error) at or below 1 − confidence. The fleet is uneven
  when some adjusted p-value is below it; the cohorts with one are named, worse or better.

Both are conservative: a discrete test's false-positive rate is at most its level, not exactly it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opsctl.ledger.intervals import binomial_interval

METHOD_TWO = ("the conditional binomial test of two Poisson rates (exact, two-sided): given the failures of "
              "both cohorts, the share in one is Binomial(n, its share of the GPU-days) when they fail alike")
METHOD_MANY = ("each cohort against the rest of the fleet by the conditional binomial test of two Poisson rates "
               "(exact, two-sided), the p-values adjusted by Holm's step-down method over the cohorts "
               "(family-wise error at most 1 − confidence)")


def conditional_test(k1: int, e1: float, k2: int, e2: float, confidence: float = 0.95) -> dict[str, Any]:
    """The exact test of rate k1/e1 against k2/e2: p-value, and the rate ratio with its interval."""
    n = k1 + k2
    share = e1 / (e1 + e2)
    if n == 0:
        p_value = 1.0
    else:
        from scipy.stats import binomtest

        p_value = float(binomtest(k1, n, share, alternative="two-sided").pvalue)
    low, high = binomial_interval(k1, n, confidence)
    odds = e2 / e1  # the ratio of rates is the binomial share's odds, rescaled by the exposures

    def ratio(p: float) -> float | None:
        return None if p >= 1 else p / (1 - p) * odds
    return {
        "rate_ratio": round(k1 / e1 / (k2 / e2), 3) if k2 and e1 else None,
        "interval": [round(ratio(low) or 0.0, 3) if n else None,
                     None if ratio(high) is None or not n else round(ratio(high) or 0.0, 3)],
        "p_value": round(p_value, 6),
    }


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values: the j-th smallest of m times (m − j + 1), kept monotone, at most 1."""
    ordered = sorted(p_values.items(), key=lambda item: item[1])
    adjusted: dict[str, float] = {}
    running = 0.0
    for rank, (name, p) in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - rank) * p))
        adjusted[name] = running
    return adjusted


def compare_rates(counts: Mapping[str, tuple[int, float]], confidence: float = 0.95) -> dict[str, Any]:
    """Compare the failure rates of cohorts, {name: (failures, GPU-days)}: whether any differs
    beyond chance at 1 − confidence, and which (worse: fails more often; better: less)."""
    usable = {name: (k, e) for name, (k, e) in counts.items() if e > 0}
    alpha = 1 - confidence
    left_out = sorted(set(counts) - set(usable))
    if len(usable) < 2:
        return {"method": None, "tested": False, "beyond_chance": False, "worse": [], "better": [], "cohorts": {},
                "left_out": left_out, "why": "fewer than two cohorts in service: nothing to compare"}
    total_k = sum(k for k, _ in usable.values())
    total_e = sum(e for _, e in usable.values())
    tests: dict[str, dict[str, Any]] = {}
    if len(usable) == 2:
        (a, (ka, ea)), (b, (kb, eb)) = sorted(usable.items())
        test = conditional_test(ka, ea, kb, eb, confidence)
        tests[a] = {**test, "against": b, "p_adjusted": test["p_value"]}
        flipped = conditional_test(kb, eb, ka, ea, confidence)
        tests[b] = {**flipped, "against": a, "p_adjusted": test["p_value"]}
        method = METHOD_TWO
    else:
        for name, (k, e) in sorted(usable.items()):
            tests[name] = {**conditional_test(k, e, total_k - k, total_e - e, confidence), "against": "the rest"}
        adjusted = holm({name: test["p_value"] for name, test in tests.items()})
        for name, test in tests.items():
            test["p_adjusted"] = round(adjusted[name], 6)
        method = METHOD_MANY
    worse: list[str] = []
    better: list[str] = []
    for name, test in tests.items():
        k, e = usable[name]
        rest_k, rest_e = total_k - k, total_e - e
        test["beyond_chance"] = test["p_adjusted"] < alpha
        if test["beyond_chance"]:
            (worse if k * rest_e > rest_k * e else better).append(name)
    worse.sort(key=lambda name: tests[name]["p_adjusted"])
    better.sort(key=lambda name: tests[name]["p_adjusted"])
    return {"method": method, "tested": True, "level": round(alpha, 6), "beyond_chance": bool(worse or better),
            "worse": worse, "better": better, "cohorts": tests, "left_out": left_out}
