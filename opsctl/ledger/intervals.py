"""Confidence intervals for the few events a fleet sees, exact rather than normal-approximate.

- Counts of failures over an exposure: Garwood's exact Poisson interval, from the chi-square
  quantiles: [χ²(α/2; 2k)/2, χ²(1 − α/2; 2k + 2)/2] (Garwood 1936).
- A share (burn-in runs that failed): Clopper-Pearson's exact binomial interval, from the beta
  quantiles: [B(α/2; k, n − k + 1), B(1 − α/2; k + 1, n − k)] (Clopper & Pearson 1934).
- A median of repair times: the distribution-free order-statistic interval — the pair of
  ranks whose coverage under Binomial(n, 1/2) is at least the confidence asked for.

The distributions are scipy.stats's, the quantiles of samples numpy's. scipy.stats takes over a
second to import, and this module is imported by every opsctl command (the CLI's command
modules import the ledger), so scipy is imported inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def poisson_interval(k: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) interval for the mean of a Poisson count k."""
    from scipy.stats import chi2

    alpha = 1 - confidence
    lower = 0.0 if k == 0 else float(chi2.ppf(alpha / 2, 2 * k)) / 2
    upper = float(chi2.ppf(1 - alpha / 2, 2 * k + 2)) / 2
    return lower, upper


def binomial_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for a share k of n."""
    if n <= 0:
        return 0.0, 1.0
    from scipy.stats import beta

    alpha = 1 - confidence
    lower = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    upper = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lower, upper


def median_interval(samples: Sequence[float], confidence: float = 0.95) -> tuple[float | None, float | None, float]:
    """(low, high, coverage): the order-statistic interval for the median of `samples`.

    With too few samples for the confidence asked (fewer than 6 at 95 %), it is the range of
    the samples and `coverage` says how sure that range is.
    """
    values = sorted(samples)
    n = len(values)
    if n == 0:
        return None, None, 0.0
    from scipy.stats import binom

    best = (values[0], values[-1], 1 - 2 * float(binom.cdf(0, n, 0.5)))
    # Ranks j and n − j + 1 (1-based) cover the median with probability 1 − 2·P(B ≤ j − 1).
    for j in range(1, (n + 1) // 2 + 1):
        coverage = 1 - 2 * float(binom.cdf(j - 1, n, 0.5))
        if coverage < confidence:
            break
        best = (values[j - 1], values[n - j], coverage)
    return best


def quantile(samples: Sequence[float], q: float) -> float | None:
    """The q-quantile by linear interpolation between order statistics (numpy's default); None for no samples."""
    if not samples:
        return None
    import numpy

    return float(numpy.quantile(samples, q))


def hours_summary(hours: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    """A set of durations in hours as the ledger reports them: median with its order-statistic
    interval (and how sure it is), quartiles, min, max, mean — all None when there are none."""
    if not hours:
        return {"median_hours": None, "interval": None, "interval_coverage": 0.0, "p25_hours": None, "p75_hours": None,
                "min_hours": None, "max_hours": None, "mean_hours": None}
    low, high, coverage = median_interval(hours, confidence)
    assert low is not None and high is not None  # there are samples

    def figure(value: float | None) -> float | None:
        return None if value is None else round(value, 2)

    return {
        "median_hours": figure(quantile(hours, 0.5)),
        "interval": [round(low, 2), round(high, 2)],
        "interval_coverage": round(coverage, 3),
        "p25_hours": figure(quantile(hours, 0.25)),
        "p75_hours": figure(quantile(hours, 0.75)),
        "min_hours": figure(min(hours)),
        "max_hours": figure(max(hours)),
        "mean_hours": figure(sum(hours) / len(hours)),
    }
