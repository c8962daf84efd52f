"""Confidence intervals for the few events a fleet sees, exact rather than normal-approximate.

- Counts of failures over an exposure: Garwood's exact Poisson interval (the chi-square
  interval, computed here by inverting the Poisson CDF, which is the same thing).
- A share (burn-in runs that failed): Clopper-Pearson's exact binomial interval.
- A median of repair times: the distribution-free order-statistic interval — the pair of
  ranks whose coverage under Binomial(n, 1/2) is at least the confidence asked for.

Pure functions on numbers, standard library only.
"""

import math


def _log_poisson_pmf(i, mean):
    return -mean + i * math.log(mean) - math.lgamma(i + 1)


def poisson_cdf(k, mean):
    """P(X ≤ k) for X ~ Poisson(mean)."""
    if mean <= 0:
        return 1.0
    logs = [_log_poisson_pmf(i, mean) for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def _log_binomial_pmf(i, n, p):
    if p <= 0:
        return 0.0 if i == 0 else -math.inf
    if p >= 1:
        return 0.0 if i == n else -math.inf
    return math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)


def binomial_cdf(k, n, p):
    """P(X ≤ k) for X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    logs = [_log_binomial_pmf(i, n, p) for i in range(k + 1)]
    top = max(logs)
    if top == -math.inf:
        return 0.0
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def _solve_decreasing(f, target, low, high):
    """x in [low, high] with f(x) = target, for f decreasing in x (bisection)."""
    for _ in range(200):
        middle = (low + high) / 2
        if f(middle) > target:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * max(1.0, high):
            break
    return (low + high) / 2


def poisson_interval(k, confidence=0.95):
    """Exact (Garwood) interval for the mean of a Poisson count k."""
    alpha = 1 - confidence
    ceiling = k + 20 * math.sqrt(k + 1) + 20
    lower = 0.0 if k == 0 else _solve_decreasing(lambda m: poisson_cdf(k - 1, m), 1 - alpha / 2, 0.0, ceiling)
    upper = _solve_decreasing(lambda m: poisson_cdf(k, m), alpha / 2, 0.0, ceiling)
    return lower, upper


def binomial_interval(k, n, confidence=0.95):
    """Exact (Clopper-Pearson) interval for a share k of n."""
    if n <= 0:
        return 0.0, 1.0
    alpha = 1 - confidence
    lower = 0.0 if k == 0 else _solve_decreasing(lambda p: binomial_cdf(k - 1, n, p), 1 - alpha / 2, 0.0, 1.0)
    upper = 1.0 if k == n else _solve_decreasing(lambda p: binomial_cdf(k, n, p), alpha / 2, 0.0, 1.0)
    return lower, upper


def median_interval(samples, confidence=0.95):
    """(low, high, coverage): the order-statistic interval for the median of `samples`.

    With too few samples for the confidence asked (fewer than 6 at 95 %), it is the range of
    the samples and `coverage` says how sure that range is.
    """
    values = sorted(samples)
    n = len(values)
    if n == 0:
        return None, None, 0.0
    best = (values[0], values[-1], 1 - 2 * binomial_cdf(0, n, 0.5))
    # Ranks j and n − j + 1 (1-based) cover the median with probability 1 − 2·P(B ≤ j − 1).
    for j in range(1, (n + 1) // 2 + 1):
        coverage = 1 - 2 * binomial_cdf(j - 1, n, 0.5)
        if coverage < confidence:
            break
        best = (values[j - 1], values[n - j], coverage)
    return best


def quantile(samples, q):
    """The q-quantile by linear interpolation between order statistics (numpy's default)."""
    values = sorted(samples)
    if not values:
        return None
    position = (len(values) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(values) - 1)
    return values[below] + (values[above] - values[below]) * (position - below)


def hours_summary(hours, confidence=0.95):
    """A set of durations in hours as the ledger reports them: median with its order-statistic
    interval (and how sure it is), quartiles, min, max, mean — all None when there are none."""
    low, high, coverage = median_interval(hours, confidence)

    def figure(value):
        return round(value, 2) if hours else None

    return {
        "median_hours": figure(quantile(hours, 0.5)),
        "interval": [round(low, 2), round(high, 2)] if hours else None,
        "interval_coverage": round(coverage, 3),
        "p25_hours": figure(quantile(hours, 0.25)),
        "p75_hours": figure(quantile(hours, 0.75)),
        "min_hours": figure(min(hours, default=0)),
        "max_hours": figure(max(hours, default=0)),
        "mean_hours": figure(sum(hours) / len(hours) if hours else 0),
    }
