"""Ranges and distributions in a TCO scenario: the point figures stay today's, each figure gets a
median and an interval, `compare` says in what share of paired draws one option is cheaper,
`sensitivity` says which input moves the price; bad ranges and runaway inputs are one line, exit 2
(docs/tco.md, Ranges and distributions)."""

import csv
import json
import math
import os

import pytest
import yaml

from opsctl.errors import InputError
from opsctl.tco.distributions import parse
from tests.conftest import REPO, assert_one_line_error
from tests.test_tco_cli import run, write

SCENARIOS = REPO / "scenarios"
GB200 = SCENARIOS / "llama4-16k-gb200-mtbi2000-spares-charged.yaml"
H100 = SCENARIOS / "llama4-16k-h100-best-spares-charged.yaml"
GB200_RANGES = SCENARIOS / "llama4-16k-gb200-ranges-spares-charged.yaml"
BUILDUP = SCENARIOS / "h100-dec2023-buildup-gpt3-175b-fp8.yaml"
FIGURES = ("gpu_hour_cost", "tokens_per_second_per_gpu", "cost_per_million_tokens", "joules_per_token", "total_cost",
           "goodput", "checkpoint_interval_minutes", "spare_charge_factor", "effective_cost_per_million_tokens",
           "effective_total_cost", "training_days")
FEW = ("--draws", "300")


def with_mtbi(tmp_path, mtbi, base=GB200, name="s.yaml"):
    data = yaml.safe_load(base.read_text())
    data["reliability"]["mtbi_gpu_days"] = mtbi
    return write(tmp_path, data, name)


def collapsed(node):
    """Every number of the scenario's blocks written as a range of one value (but a class's share)."""
    if isinstance(node, dict):
        return {k: v if k in ("name", "description", "sources", "share") else collapsed(v) for k, v in node.items()}
    if isinstance(node, list):
        return [collapsed(v) for v in node]
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return {"low": node, "high": node}
    return node


# --- point inputs: exactly today's figures ---------------------------------------------------------------
@pytest.mark.parametrize("path", [GB200, H100, BUILDUP], ids=lambda p: p.stem)
def test_a_range_collapsed_to_a_point_gives_todays_figures_exactly(opsctl, tmp_path, path):
    today = run(opsctl, path)
    ranged = run(opsctl, write(tmp_path, collapsed(yaml.safe_load(path.read_text()))), *FEW)
    assert ranged["uncertainty"]["inputs"]  # every number became a range…
    for key in FIGURES:
        assert ranged[key] == today[key], key  # …and each figure is today's, to the last bit
        if today[key] is not None:
            assert ranged[f"{key}_interval"] == [today[key], today[key]] and ranged[f"{key}_median"] == today[key]


def test_a_scenario_of_numbers_draws_nothing_and_adds_nothing(opsctl):
    document = run(opsctl, GB200)
    assert "uncertainty" not in document and not any(key.endswith("_interval") for key in document)


def test_the_ranges_preset_prices_at_the_middle_of_each_range_as_the_middling_preset(opsctl):
    middling, ranged = run(opsctl, GB200), run(opsctl, GB200_RANGES, *FEW)
    for key in FIGURES:
        assert ranged[key] == middling[key], key
    low, high = ranged["effective_cost_per_million_tokens_interval"]
    assert low < middling["effective_cost_per_million_tokens"] < high


# --- intervals ---------------------------------------------------------------------------------------------
def test_a_wider_range_gives_a_wider_interval(opsctl, tmp_path):
    narrow = run(opsctl, with_mtbi(tmp_path, {"low": 1900, "high": 2100}, name="n.yaml"), *FEW)
    wide = run(opsctl, with_mtbi(tmp_path, {"low": 1000, "high": 3000}, name="w.yaml"), *FEW)
    def width(d):
        low, high = d["effective_cost_per_million_tokens_interval"]
        return high - low
    assert width(wide) > 5 * width(narrow) > 0
    assert narrow["effective_cost_per_million_tokens"] == wide["effective_cost_per_million_tokens"]  # both at 2,000


def test_the_same_seed_gives_the_same_figures_and_another_seed_other_draws(opsctl):
    first, again = run(opsctl, GB200_RANGES, *FEW), run(opsctl, GB200_RANGES, *FEW)
    other = run(opsctl, GB200_RANGES, *FEW, "--seed", "7")
    key = "effective_cost_per_million_tokens_interval"
    assert first[key] == again[key] and first[key] != other[key]


def test_a_higher_level_gives_a_wider_interval(opsctl):
    ninety, fifty = run(opsctl, GB200_RANGES, *FEW), run(opsctl, GB200_RANGES, *FEW, "--level", "0.5")
    low90, high90 = ninety["goodput_interval"]
    low50, high50 = fifty["goodput_interval"]
    assert low90 < low50 < high50 < high90 and fifty["uncertainty"]["level"] == 0.5


def test_the_terminal_shows_median_and_interval(opsctl):
    result = opsctl("tco", "run", GB200_RANGES, *FEW)
    assert result.code == 0, result.err
    assert "median [90% interval]" in result.out and "300 draws (seed 0)" in " ".join(result.out.split())


def test_draws_that_leave_no_time_to_train_count_as_an_unbounded_price(opsctl, tmp_path):
    data = yaml.safe_load(GB200.read_text())
    data["reliability"].update(spare_racks=0, mtbi_gpu_days={"low": 100, "high": 2000})
    document = run(opsctl, write(tmp_path, data), *FEW)
    assert document["uncertainty"]["draws_without_progress"] > 0
    assert document["effective_cost_per_million_tokens_interval"][1] is None  # the high end is unbounded: null


# --- compare: the share of paired draws ------------------------------------------------------------------
def cheaper_share(opsctl, tmp_path, mtbi):
    result = opsctl("tco", "compare", H100, with_mtbi(tmp_path, mtbi), "--json", *FEW)
    assert result.code == 0, result.err
    return result.json()["edges"][1]


def test_the_probability_flips_when_one_range_moves_past_the_other(opsctl, tmp_path):
    # GB200 at 1,000 GPU-days is 2.4% dearer than the best H100, at 2,000 16% cheaper (docs/tco.md)
    below = cheaper_share(opsctl, tmp_path, {"low": 800, "high": 1000})
    above = cheaper_share(opsctl, tmp_path, {"low": 1300, "high": 1500})
    across = cheaper_share(opsctl, tmp_path, {"low": 800, "high": 1500})
    assert below["cheaper_share"] == 0.0 and below["edge_interval"][1] < 0
    assert above["cheaper_share"] == 1.0 and above["edge_interval"][0] > 0
    assert 0 < across["cheaper_share"] < 1


def test_compare_says_it_in_a_sentence(opsctl):
    result = opsctl("tco", "compare", H100, GB200_RANGES, *FEW)
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "llama4-16k-gb200-ranges-spares-charged is cheaper per effective token than llama4-16k-h100-best-spares-charged in" in text
    assert "of 300 paired draws" in text


def test_draws_are_paired_by_key(opsctl, tmp_path):
    # the same range in both scenarios: every draw equal, so neither is cheaper in any draw, the edge exactly 0
    one = with_mtbi(tmp_path, {"low": 1000, "high": 3000}, name="a.yaml")
    two = with_mtbi(tmp_path, {"low": 1000, "high": 3000}, name="b.yaml")
    edge = opsctl("tco", "compare", one, two, "--json", *FEW).json()["edges"][1]
    assert edge["cheaper_share"] == 0.0 and edge["edge_interval"] == [0.0, 0.0]


def test_compare_of_numbers_only_is_todays(opsctl):
    result = opsctl("tco", "compare", H100, GB200, "--json").json()
    assert "paired" not in result and "cheaper_share" not in result["edges"][1]


# --- sensitivity -------------------------------------------------------------------------------------------
def test_sensitivity_writes_a_tornado_and_its_table_largest_swing_first(opsctl, tmp_path):
    from matplotlib.image import imread

    result = opsctl("tco", "sensitivity", GB200_RANGES, "--out", tmp_path / "sens", "--json")
    assert result.code == 0, result.err
    document = result.json()
    rows = document["inputs"]
    assert rows[0]["input"] == "reliability.mtbi_gpu_days" and (rows[0]["low"], rows[0]["high"]) == (1000, 3000)
    assert rows[0]["price_at_low"] > document["price_at_medians"] > rows[0]["price_at_high"]
    assert [r["swing"] for r in rows] == sorted((r["swing"] for r in rows), reverse=True)
    stem = GB200_RANGES.stem
    with open(tmp_path / "sens" / f"{stem}-sensitivity.csv", newline="") as handle:
        assert [r["input"] for r in csv.DictReader(handle)] == [r["input"] for r in rows]
    assert json.loads((tmp_path / "sens" / f"{stem}-sensitivity.json").read_text())["inputs"] == rows
    image = imread(tmp_path / "sens" / f"{stem}-tornado.png")
    assert image.std() > 0
    table = opsctl("tco", "sensitivity", GB200_RANGES, "--out", tmp_path / "sens")
    assert table.code == 0 and "reliability.mtbi_gpu_days" in table.out


def test_sensitivity_needs_a_range(opsctl, tmp_path):
    assert_one_line_error(opsctl("tco", "sensitivity", GB200, "--out", tmp_path / "s"), 2, "no input is a range")
    assert_one_line_error(opsctl("tco", "sensitivity", GB200_RANGES, "--out", tmp_path / "no" / "s"), 2, "no folder")


# --- bad ranges and options: one line, exit 2 ----------------------------------------------------------------
@pytest.mark.parametrize("mtbi, message", [
    ({"low": 3000, "high": 1000}, "reliability.mtbi_gpu_days: low 3000 is above high 1000"),
    ({"low": float("nan"), "high": 1000}, "reliability.mtbi_gpu_days.low must be a finite number"),
    ({"low": 1000, "high": float("inf")}, "reliability.mtbi_gpu_days.high must be a finite number"),
    ({"low": -5, "high": 1000}, "reliability.mtbi_gpu_days: expected `float` > 0.0 (the low end of"),
    ({"dist": "cauchy", "low": 1, "high": 2}, "unknown distribution 'cauchy'"),
    ({"dist": ["uniform"], "low": 1, "high": 2}, "unknown distribution ['uniform']"),
    ({"low": 1000}, "a uniform range needs low, high; high missing"),
    ({"low": 1000, "high": 2000, "spread": 3}, "unknown key(s) in a uniform range: spread"),
    ({"dist": "triangular", "low": 1000, "mode": 5000, "high": 2000}, "mode 5000 must lie between"),
    ({"dist": "lognormal", "low": 0, "high": 2000}, "a lognormal range needs low > 0"),
    ({"dist": "lognormal", "low": 1000, "high": 2000, "level": 1.5}, "level must be between 0 and 1"),
    ({"dist": "poisson_mtbi", "failures": 2.5, "gpu_days": 1000}, "failures must be a whole number"),
    ({"low": 1000, "high": 2000, "value": 5000}, "value 5000 lies outside [1000, 2000]"),
])
def test_bad_ranges_are_one_line(opsctl, tmp_path, mtbi, message):
    path = with_mtbi(tmp_path, mtbi)
    line = assert_one_line_error(opsctl("tco", "run", path, "--json"), 2, message)
    assert str(path) in line


def test_the_end_of_a_range_is_checked_as_the_number_is(opsctl, tmp_path):
    data = yaml.safe_load(GB200.read_text())
    data["cluster"]["gpu_hour_cost"] = {"low": 0, "high": 3}
    assert_one_line_error(opsctl("tco", "run", write(tmp_path, data)), 2, "cluster.gpu_hour_cost: expected `float` > 0.0",
                          "the low end of cluster.gpu_hour_cost's uniform range")


def test_a_lognormal_draw_beyond_what_the_key_takes_is_refused_in_one_line(opsctl, tmp_path):
    data = yaml.safe_load((SCENARIOS / "llama3-405b-h100-bf16-2304gpu-hyperscaler.yaml").read_text())
    data["workload"]["mfu"] = {"dist": "lognormal", "low": 0.5, "high": 0.95}  # ends below 1, ~3% of draws above
    assert_one_line_error(opsctl("tco", "run", write(tmp_path, data), *FEW), 2, "workload.mfu: expected `float` <= 1.0",
                          "drawn from the scenario's ranges")


def test_a_share_is_never_a_range(opsctl, tmp_path):
    data = yaml.safe_load(GB200.read_text())
    data["reliability"]["failure_mix"][0]["share"] = {"low": 0.1, "high": 0.2}
    assert_one_line_error(opsctl("tco", "run", write(tmp_path, data)), 2,
                          "reliability.failure_mix[0].share: a share cannot be a range")


@pytest.mark.parametrize("option, message", [
    (("--level", "nan"), "'nan' is not a finite number"),
    (("--level", "inf"), "'inf' is not a finite number"),
    (("--level", "1"), "not in the range 0<x<1"),
    (("--level", "0"), "not in the range 0<x<1"),
    (("--draws", "0"), "not in the range 1<=x<=100000"),
    (("--draws", "100001"), "not in the range 1<=x<=100000"),
    (("--seed", "-1"), "not in the range"),
])
def test_bad_options_are_one_line(opsctl, option, message):
    assert_one_line_error(opsctl("tco", "run", GB200_RANGES, *option), 2, message)
    assert_one_line_error(opsctl("tco", "compare", GB200, GB200_RANGES, *option), 2, message)


# --- runaway inputs (issue 15): bounded, the bound in the error -------------------------------------------------
@pytest.mark.parametrize("change, message", [
    (lambda d: d["reliability"].update(spare_servers=1e30), "reliability.spare_servers: expected `int | object | null`, got `float`"),
    (lambda d: d["reliability"].update(spare_servers=100_001), "reliability.spare_servers: expected `int` <= 100000"),
    (lambda d: d["cluster"].update(gpus=10 ** 400), "cluster.gpus: expected `int` <= 100000000"),
    (lambda d: d["cluster"].update(gpus=100_000_001), "cluster.gpus: expected `int` <= 100000000"),
    (lambda d: d["cluster"].update(gpu_hour_cost=float("nan")), "cluster.gpu_hour_cost: expected `float` > 0.0"),
    (lambda d: d["workload"].update(tokens=float("inf")), "workload.tokens: expected `float` <= 1.7976931348623157e+308"),
])
def test_runaway_and_non_finite_scenario_values_are_refused(opsctl, tmp_path, change, message):
    data = yaml.safe_load(H100.read_text())
    change(data)
    line = assert_one_line_error(opsctl("tco", "run", write(tmp_path, data), "--json"), 2, message)
    assert len(line) < 400  # a 401-digit number is not printed whole


def test_the_most_spare_servers_still_price(opsctl, tmp_path):
    data = yaml.safe_load(H100.read_text())
    data["reliability"]["spare_servers"] = 100_000
    document = run(opsctl, write(tmp_path, data))
    assert document["reliability"]["all_spare_units_busy_probability"] == 0.0


@pytest.mark.parametrize("vary, message", [
    ("reliability.mtbi_gpu_days=1:2:1000000000", "STEPS must be at most 1,000"),
    ("reliability.mtbi_gpu_days=1:2:1001", "STEPS must be at most 1,000"),
    ("reliability.mtbi_gpu_days=nan:2:3", "FROM and TO must be finite numbers"),
    ("reliability.mtbi_gpu_days=1:inf:3", "FROM and TO must be finite numbers"),
])
def test_sweeps_are_bounded_and_finite(opsctl, tmp_path, vary, message):
    assert_one_line_error(opsctl("tco", "sweep", GB200, "--vary", vary, "--out", tmp_path / "x"), 2, message)


def test_sweep_replaces_its_files_whole_never_writes_into_them(opsctl, tmp_path):
    # An old file with a second name: written in place, the second name would see the new bytes (or, on a
    # full disk, half of them); replaced by rename, it keeps the old file whole.
    for suffix in (".csv", ".png"):
        (tmp_path / f"m{suffix}").write_bytes(b"old results")
        os.link(tmp_path / f"m{suffix}", tmp_path / f"kept{suffix}")
    result = opsctl("tco", "sweep", GB200, "--vary", "reliability.mtbi_gpu_days=1000:3000:3", "--out", tmp_path / "m")
    assert result.code == 0, result.err
    for suffix in (".csv", ".png"):
        assert (tmp_path / f"kept{suffix}").read_bytes() == b"old results"
        assert (tmp_path / f"m{suffix}").read_bytes() != b"old results"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_an_output_that_cannot_be_written_is_one_line(opsctl, tmp_path):
    sweep = opsctl("tco", "sweep", GB200, "--vary", "cluster.gpu_hour_cost=1:2:3", "--out", "/proc/x")
    assert_one_line_error(sweep, 2, "--out /proc/x: cannot write there")
    assert_one_line_error(opsctl("tco", "sensitivity", GB200_RANGES, "--out", "/proc/tornado"), 2, "--out /proc/tornado: cannot")
    (tmp_path / "file").write_text("")
    assert_one_line_error(opsctl("tco", "sensitivity", GB200_RANGES, "--out", tmp_path / "file"), 2, "is a file")


def test_a_ranges_preset_sweeps_at_its_point(opsctl, tmp_path):
    result = opsctl("tco", "sweep", GB200_RANGES, "--vary", "cluster.gpu_hour_cost=2:3:3", "--out", tmp_path / "p", "--json")
    assert result.code == 0, result.err
    rows = result.json()["rows"]
    assert rows[0]["effective_cost_per_million_tokens"] < rows[-1]["effective_cost_per_million_tokens"]


# --- the distributions ---------------------------------------------------------------------------------------
def test_a_lognormal_range_is_its_central_interval():
    distribution = parse({"dist": "lognormal", "low": 1000, "high": 3000}, "x")
    assert distribution.quantile(0.05) == pytest.approx(1000) and distribution.quantile(0.95) == pytest.approx(3000)
    assert distribution.median() == pytest.approx(math.sqrt(1000 * 3000))


def test_a_triangular_range_inverts_its_cdf():
    distribution = parse({"dist": "triangular", "low": 1, "mode": 2, "high": 4}, "x")
    assert distribution.quantile(1 / 3) == pytest.approx(2)  # P(X ≤ mode) = (mode − low) / (high − low)
    assert (distribution.quantile(0), distribution.quantile(1)) == (1, 4)


def test_the_poisson_mtbi_posterior_centres_on_the_measure_and_narrows_with_failures():
    few = parse({"dist": "poisson_mtbi", "failures": 4, "gpu_days": 8000}, "x")
    many = parse({"dist": "poisson_mtbi", "failures": 400, "gpu_days": 800_000}, "x")
    assert few.point == pytest.approx(8000 / (4 + 1 / 2 - 1 / 3), rel=0.02)  # Gamma(k + ½)'s median ≈ k + ½ − ⅓
    assert many.median() == pytest.approx(2000, rel=0.01)
    few_low, few_high = few.ends(0.9)
    many_low, many_high = many.ends(0.9)
    assert few_high / few_low > 3 and many_high / many_low < 1.3


def test_mean_of_draws_around_the_sample_mean():
    distribution = parse({"dist": "mean_of", "samples": [1, 2, 3, 10], "value": 4}, "x")
    low, high = distribution.ends(0.9)
    assert distribution.point == 4 and 1 < low < 4 < high < 10


def test_no_failure_over_an_exposure_is_a_posterior_bounded_below():
    """Zero failures in 1,000 GPU-days: Jeffreys' Gamma(½) puts the MTBI's 5% end near 1,000 / 1.92 (its 95%
    quantile), above the exact 95% one-sided bound 1,000 / 3.0; a smaller prior (½ / kinds) pushes it higher."""
    jeffreys = parse({"dist": "poisson_mtbi", "failures": 0, "gpu_days": 1000}, "x")
    split = parse({"dist": "poisson_mtbi", "failures": 0, "gpu_days": 1000, "prior": 0.1}, "x")
    assert jeffreys.ends(0.9)[0] == pytest.approx(1000 / 1.92, rel=0.05)
    assert split.ends(0.9)[0] > 1.5 * jeffreys.ends(0.9)[0]


@pytest.mark.parametrize("prior, fine", [(1.0, True), (1.01, False), (0.0, False)])
def test_a_poisson_prior_is_a_shape_from_above_0_to_1(prior, fine):
    raw = {"dist": "poisson_mtbi", "failures": 3, "gpu_days": 1000, "prior": prior}
    if fine:
        assert parse(raw, "x").parameters["prior"] == prior
    else:
        with pytest.raises(InputError, match="prior must be above 0 and at most 1"):
            parse(raw, "x")


def test_the_mean_of_one_or_two_restores_is_wide_and_of_many_narrow():
    """The Bayesian bootstrap of one value is that value, a point; the lognormal mean's posterior is not."""
    one = parse({"dist": "lognormal_mean", "samples": [2.0]}, "x")
    two = parse({"dist": "lognormal_mean", "samples": [2.0, 3.0]}, "x")
    many = parse({"dist": "lognormal_mean", "samples": [2.0, 3.0] * 100}, "x")
    assert parse({"dist": "mean_of", "samples": [2.0]}, "x").ends(0.9) == pytest.approx((2.0, 2.0))
    ratios = [high / low for low, high in (d.ends(0.9) for d in (one, two, many))]
    assert ratios[0] > ratios[1] > 3 > 1.2 > ratios[2]
    assert many.ends(0.9)[0] < 2.5 < many.ends(0.9)[1]  # around the sample mean
