"""The exact intervals against published table values (Garwood 1936 / chi-square, Clopper-Pearson,
the order-statistic median interval)."""

import math

import pytest

from opsctl.ledger.intervals import binomial_interval, median_interval, poisson_interval, quantile


@pytest.mark.parametrize("k, low, high", [
    (0, 0.0, 3.689), (1, 0.0253, 5.572), (2, 0.2422, 7.225), (10, 4.795, 18.39), (100, 81.36, 121.63),
])
def test_poisson_interval_matches_the_chi_square_table(k, low, high):
    got = poisson_interval(k)
    assert got[0] == pytest.approx(low, abs=5e-4, rel=1e-3) and got[1] == pytest.approx(high, rel=1e-3)


def test_clopper_pearson():
    assert binomial_interval(3, 10) == pytest.approx((0.0667, 0.6525), abs=1e-4)
    assert binomial_interval(0, 10) == pytest.approx((0.0, 0.3085), abs=1e-4)
    assert binomial_interval(10, 10) == pytest.approx((0.6915, 1.0), abs=1e-4)


def test_median_interval_uses_order_statistics():
    low, high, coverage = median_interval(range(1, 11))  # n = 10: ranks 2 and 9, 97.9 %
    assert (low, high) == (2, 9) and coverage == pytest.approx(0.9785, abs=1e-4)
    low, high, coverage = median_interval([5.0, 1.0, 3.0])  # too few for 95 %: the range, and how sure it is
    assert (low, high) == (1.0, 5.0) and coverage == pytest.approx(0.75)
    assert quantile([1, 2, 3, 4], 0.5) == 2.5


# --- scipy.stats against the bisection it replaced ------------------------------------------------
# The ledger's intervals were once computed by inverting the Poisson and binomial CDFs by
# bisection; they are now scipy.stats's chi-square and beta quantiles. The old code is kept here,
# only as the reference the new figures must match on a grid of counts and confidence levels.

def _reference_poisson_cdf(k, mean):
    if mean <= 0:
        return 1.0
    logs = [-mean + i * math.log(mean) - math.lgamma(i + 1) for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def _reference_binomial_cdf(k, n, p):
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0

    def log_pmf(i):
        if p <= 0:
            return 0.0 if i == 0 else -math.inf
        if p >= 1:
            return 0.0 if i == n else -math.inf
        return math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)

    logs = [log_pmf(i) for i in range(k + 1)]
    top = max(logs)
    if top == -math.inf:
        return 0.0
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def _reference_solve_decreasing(f, target, low, high):
    for _ in range(200):
        middle = (low + high) / 2
        if f(middle) > target:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * max(1.0, high):
            break
    return (low + high) / 2


def _reference_poisson_interval(k, confidence):
    alpha = 1 - confidence
    ceiling = k + 20 * math.sqrt(k + 1) + 20
    lower = 0.0 if k == 0 else _reference_solve_decreasing(lambda m: _reference_poisson_cdf(k - 1, m), 1 - alpha / 2, 0.0, ceiling)
    upper = _reference_solve_decreasing(lambda m: _reference_poisson_cdf(k, m), alpha / 2, 0.0, ceiling)
    return lower, upper


def _reference_binomial_interval(k, n, confidence):
    alpha = 1 - confidence
    lower = 0.0 if k == 0 else _reference_solve_decreasing(lambda p: _reference_binomial_cdf(k - 1, n, p), 1 - alpha / 2, 0.0, 1.0)
    upper = 1.0 if k == n else _reference_solve_decreasing(lambda p: _reference_binomial_cdf(k, n, p), alpha / 2, 0.0, 1.0)
    return lower, upper


def _reference_median_interval(samples, confidence):
    values = sorted(samples)
    n = len(values)
    best = (values[0], values[-1], 1 - 2 * _reference_binomial_cdf(0, n, 0.5))
    for j in range(1, (n + 1) // 2 + 1):
        coverage = 1 - 2 * _reference_binomial_cdf(j - 1, n, 0.5)
        if coverage < confidence:
            break
        best = (values[j - 1], values[n - j], coverage)
    return best


LEVELS = (0.5, 0.8, 0.9, 0.95, 0.99)


@pytest.mark.parametrize("confidence", LEVELS)
def test_poisson_interval_gives_the_bisections_figures(confidence):
    for k in [*range(0, 31), 50, 100, 200, 500]:
        assert poisson_interval(k, confidence) == pytest.approx(_reference_poisson_interval(k, confidence), rel=1e-9, abs=1e-12), k


@pytest.mark.parametrize("confidence", LEVELS)
def test_binomial_interval_gives_the_bisections_figures(confidence):
    for n in (1, 2, 3, 5, 10, 20, 50, 100, 400):
        for k in sorted({0, 1, 2, n // 3, n // 2, n - 1, n} & set(range(n + 1))):
            assert binomial_interval(k, n, confidence) == pytest.approx(_reference_binomial_interval(k, n, confidence), rel=1e-9, abs=1e-11), (k, n)
    assert binomial_interval(0, 0, confidence) == (0.0, 1.0)  # no runs: nothing known


@pytest.mark.parametrize("confidence", LEVELS)
def test_median_interval_gives_the_same_ranks_and_coverage(confidence):
    for n in range(1, 60):
        samples = [float((7 * i) % n) for i in range(n)]
        low, high, coverage = median_interval(samples, confidence)
        ref_low, ref_high, ref_coverage = _reference_median_interval(samples, confidence)
        assert (low, high) == (ref_low, ref_high) and coverage == pytest.approx(ref_coverage, abs=1e-12), n


def test_quantile_is_the_linear_interpolation_between_order_statistics():
    assert quantile([], 0.5) is None
    assert quantile([4.0], 0.25) == 4.0
    assert quantile([10, 0, 30, 20], 0.25) == 7.5  # position (4 − 1)·0.25 = 0.75 between 0 and 10
    assert quantile([10, 0, 30, 20], 1.0) == 30
