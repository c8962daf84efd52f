"""The TCO's formulas against their published worked cases (sources in docs/tco.md)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opsctl.tco.checkpointing import daly_interval, young_interval
from opsctl.tco.goodput import daly_goodput, ettr
from opsctl.tco.gpu_hour_cost import monthly_capital, monthly_hosting

RSC1_FAILURES_PER_NODE_DAY = 6.50e-3  # Kokolis et al., HPCA 2025: RSC-1, 6.50 failures per 1,000 node-days


def node_mttf_minutes(gpus, gpus_per_node=8, rate=RSC1_FAILURES_PER_NODE_DAY):
    return 1440 / (gpus / gpus_per_node * rate)


@pytest.mark.parametrize("mtbi_minutes, published", [
    (24 * 60, 117),  # Daly (2006) Fig. 3: M = 24 h, δ = 5 min → τ_opt = 117 min
    (6 * 60, 57),    # Fig. 4: M = 6 h → 57 min
    (15, 9.1),       # Fig. 5: M = 15 min → 9.1 min
])
def test_daly_higher_order_optimum_reproduces_dalys_worked_cases(mtbi_minutes, published):
    assert daly_interval(5, mtbi_minutes) == pytest.approx(published, abs=0.5 if published > 10 else 0.05)


def test_daly_optimum_is_m_when_the_write_takes_two_mtbis_or_more():
    assert daly_interval(20, 10) == 10 and daly_interval(20, 10.0001) < 10.0001


def test_young_interval_reproduces_graphlabs_published_case():
    # Low et al., Distributed GraphLab (PVLDB 5(8), 2012), applying Young's formula (as quoted in
    # "the morning paper" on Daly 2006):
    # 64 machines with a per-machine MTBF of a year and a 2-minute checkpoint → about 3 hours.
    cluster_mtbf_minutes = 365 * 1440 / 64
    assert young_interval(2, cluster_mtbf_minutes) / 60 == pytest.approx(3.0, rel=0.02)


def test_meta_mttf_projections():
    # Kokolis et al.: at RSC-1's rate a 16,384-GPU job fails every 1.8 h, a 131,072-GPU job every 0.23 h.
    assert node_mttf_minutes(16384) / 60 == pytest.approx(1.8, abs=0.01)
    assert node_mttf_minutes(131072) / 60 == pytest.approx(0.23, abs=0.005)


@pytest.mark.parametrize("interval, published", [(60, 0.70), (5, 0.93)])
def test_ettr_reproduces_metas_whole_cluster_job(interval, published):
    # Kokolis et al.: RSC-1 running one 16,000-GPU job, restart overhead u0 = 5 min, non-blocking
    # checkpoint writes: expected ETTR 0.7 at a 60-minute interval, 0.93 at a 5-minute one.
    assert ettr(node_mttf_minutes(16000), 5, 0, interval) == pytest.approx(published, abs=0.02)


def test_ettr_reproduces_metas_half_cluster_job():
    # Kokolis et al.: 8,000 GPUs (half of RSC-1), 1 minute of queueing after each failure on top of
    # u0 = 5 min, 30-minute checkpoints: ETTR 0.9.
    assert ettr(node_mttf_minutes(8000), 1 + 5, 0, 30) == pytest.approx(0.90, abs=0.01)


def test_ettr_and_daly_agree_when_interruptions_are_rare_and_part_where_they_are_not():
    assert ettr(100_000, 10, 1, 400) == pytest.approx(daly_goodput(100_000, 10, 1, 400), abs=0.002)
    # restarts and rework dominate: ETTR (1 − loss) is below Daly (1 / (1 + loss)) and goes negative
    assert ettr(60, 50, 0.5, 30) < 0 < daly_goodput(60, 50, 0.5, 30)
    # long checkpoint writes next to M: Daly charges the interruptions that strike them, ETTR does not
    assert ettr(10, 0, 5, 5) > daly_goodput(10, 0, 5, 5)


@settings(max_examples=200, deadline=None)
@given(write=st.floats(0.1, 30), mtbi=st.floats(60, 20_000), restart=st.floats(0, 60))
def test_dalys_optimum_is_near_the_best_interval_of_his_model(write, mtbi, restart):
    best = daly_interval(write, mtbi)
    at_best = daly_goodput(mtbi, restart, write, best)
    for factor in (0.5, 0.8, 1.25, 2.0):
        assert at_best >= daly_goodput(mtbi, restart, write, best * factor) - 1e-3


@settings(max_examples=200, deadline=None)
@given(mtbi=st.floats(100, 1e6), restart=st.floats(0, 30), write=st.floats(0.01, 10), interval=st.floats(1, 300))
def test_goodput_rises_with_mtbi(mtbi, restart, write, interval):
    for model in (ettr, daly_goodput):
        assert model(mtbi * 2, restart, write, interval) >= model(mtbi, restart, write, interval) - 1e-12
        assert model(mtbi, restart, write, interval) <= 1 / (1 + write / interval) + 1e-12


def test_annuity_is_the_textbook_loan_payment():
    # $200,000 over 30 years at 6% a year: $1,199.10 a month (any amortization table).
    assert monthly_capital(200_000, 30, 0.06) == pytest.approx(1199.10, abs=0.01)
    assert monthly_capital(120_000, 5, 0.0) == pytest.approx(2000)


def test_hosting_adds_power_at_the_pue_colocation_and_software():
    # 10 kW of IT at PUE 1.3 for 730 h at $0.10/kWh = $949, + $150/kW-month × 10 kW + $100 software
    assert monthly_hosting(10, 1.3, 0.10, 150, 100) == pytest.approx(949 + 1500 + 100)


def test_megatron_flops_per_token_for_gpt3():
    from opsctl.tco.scenario import ModelShape
    from opsctl.tco.throughput import flops_per_token

    gpt3 = ModelShape(174.6e9, 96, 12288, 2048)
    assert flops_per_token(gpt3) == pytest.approx(6 * 174.6e9 + 12 * 96 * 12288 * 2048)
    assert math.isclose(313 * flops_per_token(gpt3) / 989e12, 0.34, abs_tol=0.005)
