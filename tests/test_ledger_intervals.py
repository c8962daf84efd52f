"""The exact intervals against published table values (Garwood 1936 / chi-square, Clopper-Pearson,
the order-statistic median interval)."""

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
