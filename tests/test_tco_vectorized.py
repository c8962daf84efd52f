"""The Monte Carlo prices every draw at once (numpy arrays through the pricing formulas, the scenario
checked once over the draws): each draw must be, to the last bit, the figure `price` gives for the
scenario at that draw alone — the same random stream, so no tolerance. Checked over a few hundred
draws of scenarios that cross every decision point of the formulas, and formula by formula on each
side of each of its branches."""

import math

import numpy
import pytest
import yaml

from opsctl.errors import InputError
from opsctl.mttr import load_mttr_model
from opsctl.tco import checkpointing, goodput, spares
from opsctl.tco.gpu_hour_cost import monthly_capital
from opsctl.tco.monte_carlo import FIGURES, draw_inputs, figures_over_draws, summary
from opsctl.tco.pricing import NEEDS_PROGRESS, price
from opsctl.tco.uncertain import UncertainScenario
from tests.conftest import REPO

SCENARIOS = REPO / "scenarios"
DRAWS = 300
MTTR = load_mttr_model()


def preset(name):
    return yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())


def scalar_table(uncertain, draws, seed):
    """The figures draw by draw as before the Monte Carlo was vectorized: `price` of the scenario at
    each draw, a null figure +inf where the draw made no progress (and the figure needs it), else NaN."""
    inputs = draw_inputs(uncertain, draws, seed)
    table = {key: numpy.full(draws, math.nan) for key in FIGURES}
    for index in range(draws):
        document = price(uncertain.scenario_at({name: float(v[index]) for name, v in inputs.items()}), MTTR)
        for key in FIGURES:
            if document[key] is not None:
                table[key][index] = document[key]
            elif document["goodput"] == 0 and key in NEEDS_PROGRESS and (
                    document["tokens"] is not None or key not in ("effective_total_cost", "training_days")):
                table[key][index] = math.inf
    return table


def ranges_preset(name):
    return preset(name)


def capex_rate_from_zero():
    data = preset("h100-dec2023-buildup-gpt3-175b-fp8")
    data["cluster"]["capex"] = {"unit_price": {"low": 200_000, "high": 300_000}, "depreciation_years": {"low": 4, "high": 6},
                                "cost_of_capital": {"dist": "triangular", "low": 0, "mode": 0, "high": 0.15}, "unit_gpus": 8}
    data["cluster"]["opex"] = {"it_kw_per_unit": 10.2, "power_price_per_kwh": {"low": 0.05, "high": 0.15},
                               "colocation_per_kw_month": 150, "pue": {"low": 1.1, "high": 1.5}}
    data["sources"] = {}
    return data


def daly_with_stalls():
    """Daly's goodput on every branch of log(e^x − 1), checkpoints given, and draws without progress."""
    data = preset("llama4-16k-gb200-mtbi2000-spares-charged")
    data["reliability"].update(goodput_model="daly", mtbi_gpu_days={"dist": "lognormal", "low": 0.01, "high": 1e7},
                               checkpoint_interval_minutes={"low": 1, "high": 600}, spare_racks={"low": 0, "high": 6},
                               restart_minutes={"low": 0, "high": 30})
    return data


def ettr_without_progress():
    data = preset("llama4-16k-gb200-mtbi2000-spares-charged")
    data["reliability"].update(mtbi_gpu_days={"low": 50, "high": 3000}, spare_racks=0,
                               checkpoint_write_minutes={"low": 0.5, "high": 4000})
    return data


def spares_and_blast_drawn():
    """The blast radius crossing the hot spares and the spare units crossing 0: each draw covered by a
    restart, the hot spares, a spare unit or the repair."""
    data = preset("llama4-16k-h100-best-spares-charged")
    data["reliability"].update(spare_servers={"low": 0, "high": 40}, failure_mix=[
        {"name": "drawn", "share": 0.5, "blast_radius_gpus": {"low": 0, "high": 8}, "repair_hours": {"low": 0, "high": 48}},
        {"name": "gpu", "share": 0.3, "part": "gpu", "repair_step_hours": {"low": 1, "high": 8}},
        {"name": "tray", "share": 0.2, "action": "replace_compute_tray"}])
    data["sources"] = {k: v for k, v in data["sources"].items() if not k.startswith("reliability.")}
    return data


def own_rates():
    """Classes with their own MTBI (what --from-ledger writes): the shares made per draw."""
    data = preset("llama4-16k-gb200-mtbi2000-spares-charged")
    data["reliability"]["failure_mix"] = [
        {"name": "software", "share": 0.6, "blast_radius_gpus": 0, "repair_hours": 0},
        {"name": "gpu", "part": "gpu", "mtbi_gpu_days": {"dist": "poisson_mtbi", "failures": 3, "gpu_days": 9000}},
        {"name": "tray", "part": "switch_tray", "mtbi_gpu_days": {"dist": "poisson_mtbi", "failures": 0, "gpu_days": 20000},
         "repair_hours": {"dist": "lognormal_mean", "samples": [2.0, 5.5]}}]
    data["sources"] = {k: v for k, v in data["sources"].items() if not k.startswith("reliability.")}
    return data


def no_reliability():
    data = preset("gpt3-175b-h100-bf16-dec2024-hyperscaler")
    data["workload"]["tokens_per_second_per_gpu"] = {"dist": "lognormal", "low": 300, "high": 500}
    data["cluster"]["gpus"] = {"low": 64, "high": 4096}
    return data


CASES = {
    "gb200 ranges preset": lambda: ranges_preset("llama4-16k-gb200-ranges-spares-charged"),
    "h100 ranges preset": lambda: ranges_preset("llama4-16k-h100-ranges-spares-charged"),
    "capex, cost of capital from 0": capex_rate_from_zero,
    "daly, stalls": daly_with_stalls,
    "ettr without progress": ettr_without_progress,
    "spares and blast radius drawn": spares_and_blast_drawn,
    "classes with their own mtbi": own_rates,
    "no reliability block": no_reliability,
}


@pytest.mark.parametrize("case", CASES)
def test_every_draw_is_the_scalar_price_of_that_draw_to_the_last_bit(case):
    uncertain = UncertainScenario(CASES[case](), f"{case}.yaml")
    assert uncertain.inputs
    vectorized = figures_over_draws(uncertain, MTTR, DRAWS, seed=11)
    scalar = scalar_table(uncertain, DRAWS, seed=11)
    for key in FIGURES:
        assert numpy.array_equal(vectorized[key], scalar[key], equal_nan=True), key
        for level in (0.5, 0.9):
            assert summary(vectorized[key], level) == summary(scalar[key], level), key


def test_the_cases_cross_the_decision_points():
    """The scenarios above reach what they are there for (else the test above proves less than it says)."""
    daly = figures_over_draws(UncertainScenario(daly_with_stalls(), "d.yaml"), MTTR, DRAWS, seed=11)
    assert numpy.isinf(daly["effective_cost_per_million_tokens"]).any() and (daly["goodput"] > 0.9).any()
    ettr = figures_over_draws(UncertainScenario(ettr_without_progress(), "e.yaml"), MTTR, DRAWS, seed=11)
    assert (ettr["goodput"] == 0).any() and (ettr["goodput"] > 0).any()
    capex = draw_inputs(UncertainScenario(capex_rate_from_zero(), "c.yaml"), DRAWS, seed=11)
    assert (capex["cluster.capex.cost_of_capital"] < 0.01).any()
    drawn = draw_inputs(UncertainScenario(spares_and_blast_drawn(), "s.yaml"), DRAWS, seed=11)
    blast, units = drawn["reliability.failure_mix[0].blast_radius_gpus"], drawn["reliability.spare_servers"]
    assert {0.0, 8.0} <= set(blast) and (units == 0).any()


def test_a_draw_beyond_what_a_key_takes_is_refused_once_checked_at_the_extremes():
    data = preset("llama3-405b-h100-bf16-2304gpu-hyperscaler")
    data["workload"]["mfu"] = {"dist": "lognormal", "low": 0.5, "high": 0.95}
    uncertain = UncertainScenario(data, "m.yaml")
    with pytest.raises(InputError, match=r"workload.mfu: expected `float` <= 1.0 \(at workload.mfu = 1\.\d+, drawn"):
        figures_over_draws(uncertain, MTTR, 2000, seed=0)
    assert draw_inputs(uncertain, 20, seed=2)["workload.mfu"].max() < 1
    figures_over_draws(uncertain, MTTR, 20, seed=2)  # twenty draws, all below 1: priced


# --- each formula on both sides of each of its branches, arrays against the scalar draw by draw ----------
@pytest.fixture(autouse=True)
def floats_overflow_quietly():
    with numpy.errstate(all="ignore"):  # as figures_over_draws prices draws, and Python floats overflow
        yield


def each(function, *columns):
    return numpy.array([function(*row) for row in zip(*(c.tolist() for c in columns))])


def same(array, scalars):
    assert numpy.array_equal(array, scalars, equal_nan=True)


def test_daly_goodput_on_each_branch_of_log_expm1():
    mtbi = numpy.array([1e-300, 1.0, 10.0, 1e3, 1e6, 1e9, 1e300, 5e-324])
    interval = numpy.full(mtbi.size, 30.0)
    for write in (0.0, 1.0):  # x = (τ+δ)/M above 1, between 1e-5 and 1, below 1e-5
        writes = numpy.full(mtbi.size, write)
        restart = numpy.full(mtbi.size, 5.0)
        same(goodput.daly_goodput(mtbi, restart, writes, interval), each(goodput.daly_goodput, mtbi, restart, writes, interval))


def test_ettr_past_its_breakdown_is_minus_infinity_as_for_one_number():
    mtbi = numpy.array([1e-320, 10.0, 1e6])
    restart = numpy.array([1e308, 5.0, 5.0])
    result = goodput.ettr(mtbi, restart, 1.0, 30.0)
    same(result, [goodput.ettr(m, r, 1.0, 30.0) for m, r in zip(mtbi.tolist(), restart.tolist())])
    assert result[0] == -math.inf and result[1] < 0 < result[2]


def test_the_daly_interval_on_each_side_of_two_mtbi_and_at_the_floats_edges():
    write = numpy.array([20.0, 20.0, 5.0, 1e-300, 1e300, 5e-324])
    mtbi = numpy.array([10.0, 10.0001, 1e4, 1e300, 1e300, 5e-324])
    result = checkpointing.daly_interval(write, mtbi)
    same(result, each(checkpointing.daly_interval, write, mtbi))
    assert result[0] == 10 and result[1] < 10.0001


def test_the_annuity_at_a_cost_of_capital_of_zero_and_above():
    rate = numpy.array([0.0, 1e-12, 0.06, 0.13])
    years = numpy.array([5.0, 5.0, 30.0, 4.0])
    price_ = numpy.full(4, 120_000.0)
    same(monthly_capital(price_, years, rate), each(monthly_capital, price_, years, rate))
    assert monthly_capital(price_, years, rate)[0] == 2000


def test_the_poisson_tail_at_each_of_its_cases():
    mean = numpy.array([0.0, math.inf, 0.5, 0.5, 2.0, 1e3, 1.0, 1e-300])
    k = numpy.array([3, 3, 0, 100, 4, 1100, 1, 2])  # mean 0; infinite; k 0; beyond the tail; summed; large; …
    result = spares.poisson_at_least(mean, k)
    same(result, each(spares.poisson_at_least, mean, k.astype(int)))
    assert (result[0], result[1], result[2], result[3]) == (0.0, 1.0, 1.0, 0.0)
    assert result[4] == pytest.approx(1 - math.exp(-2) * (1 + 2 + 2 + 4 / 3))
