"""`opsctl tco run|compare|sweep` as users meet them: the published worked figures, every preset,
spares and repairs, the sweep's files, and one-line errors for bad scenarios."""

import csv
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, assert_one_line_error

SCENARIOS = REPO / "scenarios"
PRESETS = sorted(SCENARIOS.glob("*.yaml"))
DOCUMENTED_KEYS = ("gpu_hour_cost", "cost_per_million_tokens", "joules_per_token", "mfu", "total_cost", "household_years",
                 "goodput", "checkpoint_interval_minutes", "effective_cost_per_million_tokens")


def run(opsctl, path, *extra):
    result = opsctl("tco", "run", path, "--json", *extra)
    assert result.code == 0, result.err
    return result.json()


def write(tmp_path, data, name="scenario.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def preset(name):
    return yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())


# --- the published worked figures (docs/sources.md) -----------------------------------------------------
def test_gpt3_fp8_on_h100_reproduces_the_worked_figures(opsctl):
    dec = run(opsctl, SCENARIOS / "gpt3-175b-h100-fp8-dec2024-hyperscaler.yaml")
    jan = run(opsctl, SCENARIOS / "gpt3-175b-h100-fp8-jan2024-hyperscaler.yaml")
    assert dec["cost_per_million_tokens"] == pytest.approx(0.542, abs=0.001)
    assert jan["cost_per_million_tokens"] == pytest.approx(0.727, abs=0.001)  # 0.7264: the published figure rounds up
    assert dec["joules_per_token"] == pytest.approx(2.46, abs=0.005)
    assert jan["joules_per_token"] == pytest.approx(3.29, abs=0.01)
    assert dec["total_cost"] == pytest.approx(162_000, rel=0.005) and jan["total_cost"] == pytest.approx(218_000, rel=0.005)
    assert dec["household_years"] == pytest.approx(19, abs=0.1)
    assert (jan["mfu"], dec["mfu"]) == (pytest.approx(0.295, abs=0.002), pytest.approx(0.395, abs=0.002))
    assert dec["goodput"] == 1.0 and dec["effective_cost_per_million_tokens"] == dec["cost_per_million_tokens"]
    assert set(DOCUMENTED_KEYS) <= set(dec)


def test_gpt3_bf16_mfu_rises_from_34_to_54_percent(opsctl):
    jan = run(opsctl, SCENARIOS / "gpt3-175b-h100-bf16-jan2024-hyperscaler.yaml")
    dec = run(opsctl, SCENARIOS / "gpt3-175b-h100-bf16-dec2024-hyperscaler.yaml")
    assert jan["mfu"] == pytest.approx(0.34, abs=0.005) and dec["mfu"] == pytest.approx(0.54, abs=0.005)
    assert dec["joules_per_token"] == pytest.approx(3.63, abs=0.005)
    assert "6·N + 12·L·d·s" in dec["derivations"]["mfu"]["formula"]


def test_december_2023_build_up_comes_to_152_per_gpu_hour(opsctl):
    document = run(opsctl, SCENARIOS / "h100-dec2023-buildup-gpt3-175b-fp8.yaml")
    assert document["gpu_hour_cost"] == pytest.approx(1.52, abs=0.005)
    derivation = document["derivations"]["gpu_hour_cost"]
    assert derivation["inputs"]["capital_per_month"] == 7025 and "December 2023" in derivation["source"]


def test_capex_and_opex_built_up_from_first_principles(opsctl, tmp_path):
    data = preset("h100-dec2023-buildup-gpt3-175b-fp8")
    data.pop("sources")
    data["cluster"]["capex"] = {"unit_price": 250_000, "depreciation_years": 5, "cost_of_capital": 0.13}
    data["cluster"]["opex"] = {"it_kw_per_unit": 10.2, "power_price_per_kwh": 0.08, "colocation_per_kw_month": 150,
                               "software_per_month": 200}
    document = run(opsctl, write(tmp_path, data))
    capital = 250_000 * (0.13 / 12) / (1 - (1 + 0.13 / 12) ** -60)
    hosting = 10.2 * 1.3 * 730 * 0.08 + 10.2 * 150 + 200  # PUE 1.3: the H100 default
    assert document["gpu_hour_cost"] == pytest.approx((capital + hosting) / 8 / 730)
    assert document["derivations"]["gpu_hour_cost"]["inputs"]["pue"] == 1.3


def test_mfu_gives_the_throughput(opsctl):
    document = run(opsctl, SCENARIOS / "llama3-405b-h100-bf16-2304gpu-hyperscaler.yaml")
    flops = 6 * 405e9 + 12 * 126 * 16384 * 8192
    assert document["tokens_per_second_per_gpu"] == pytest.approx(0.54 * 989e12 / flops)
    assert document["mfu"] == 0.54


@pytest.mark.parametrize("path", PRESETS, ids=[p.stem for p in PRESETS])
def test_every_preset_prices(opsctl, path):
    document = run(opsctl, path)
    assert document["name"] == path.stem
    assert document["cost_per_million_tokens"] > 0 and 0 < document["goodput"] <= 1
    for key in DOCUMENTED_KEYS:
        assert key in document
        if document[key] is not None and key != "goodput":
            derivation = document["derivations"][key]
            assert derivation["formula"] and derivation["source"], key


def test_presets_cover_every_benchmark_row_at_both_prices():
    names = {p.stem for p in PRESETS}
    for family in ("gpt3-175b-h100", "llama3-405b-h100", "llama3-70b-h100", "llama31-8b-h100", "deepseek-670b-moe-gb200",
                   "deepseek-670b-moe-h100", "llama4-maverick-gb200", "llama4-maverick-h100"):
        for buyer in ("hyperscaler", "neocloud"):
            assert any(n.startswith(family) and n.endswith(buyer) for n in names), (family, buyer)
    assert len([n for n in names if n.startswith("llama4-16k-")]) == 10  # 8 operators, 2 with the published ranges


# --- reliability, spares and repairs ---------------------------------------------------------------
def test_meta_whole_cluster_case_end_to_end(opsctl, tmp_path):
    # Kokolis et al.: 16,000 GPUs at 6.50 failures per 1,000 node-days (8 GPUs a node), u0 = 5 min,
    # 60-minute checkpoints that do not block: expected ETTR 0.7.
    data = {"cluster": {"gpu": "h100", "gpus": 16000, "gpu_hour_cost": 2},
            "workload": {"precision": "bf16", "tokens_per_second_per_gpu": 1000},
            "reliability": {"mtbi_gpu_days": 8 / 6.5e-3, "restart_minutes": 5, "checkpoint_interval_minutes": 60,
                            "blast_radius_gpus": 0, "repair_hours": 0}}
    document = run(opsctl, write(tmp_path, data))
    assert document["goodput"] == pytest.approx(0.70, abs=0.02) and document["goodput_model"] == "ettr"
    assert document["effective_cost_per_million_tokens"] == pytest.approx(document["cost_per_million_tokens"] / document["goodput"])
    data["reliability"]["goodput_model"] = "daly"
    assert run(opsctl, write(tmp_path, data))["goodput"] > 0.70


def test_nvl72_trains_on_64_of_72_and_charges_the_spares(opsctl):
    charged = run(opsctl, SCENARIOS / "llama4-16k-gb200-mtbi2000-spares-charged.yaml")
    free = run(opsctl, SCENARIOS / "llama4-16k-gb200-mtbi2000-spares-not-charged.yaml")
    spares = charged["spares"]
    assert (spares["train_gpus_per_domain"], spares["spare_gpus_per_domain"], spares["domains"]) == (64, 8, 256)
    assert spares["installed_gpus"] == (256 + 3) * 72
    assert charged["spare_charge_factor"] == pytest.approx((256 + 3) * 72 / 16384) and free["spare_charge_factor"] == 1
    assert charged["effective_cost_per_million_tokens"] == pytest.approx(
        free["effective_cost_per_million_tokens"] * spares["spare_charge_factor"])
    covered = {f["name"]: f["covered_by"] for f in charged["reliability"]["failures"]}
    assert covered == {"software": "restart", "compute tray hardware": "hot spares", "NVLink switch tray": "spare unit",
                       "NVLink cable cartridge": "spare unit"}


def test_without_spare_racks_a_rack_drain_waits_for_the_repair(opsctl, tmp_path):
    data = preset("llama4-16k-gb200-mtbi2000-spares-charged")
    data["reliability"]["spare_racks"] = 0
    document = run(opsctl, write(tmp_path, data))
    switch = next(f for f in document["reliability"]["failures"] if f["name"] == "NVLink switch tray")
    assert switch["covered_by"] == "repair" and switch["expected_wait_minutes"] == pytest.approx(switch["repair_hours"] * 60)
    with_spares = run(opsctl, SCENARIOS / "llama4-16k-gb200-mtbi2000-spares-charged.yaml")
    assert document["goodput"] < with_spares["goodput"]


def test_a_longer_repair_in_the_mttr_model_raises_the_price_per_token(opsctl, tmp_path, monkeypatch):
    data = preset("llama4-16k-gb200-mtbi2000-spares-charged")
    data["reliability"]["spare_racks"] = 0  # every drain waits for its repair
    path = write(tmp_path, data)
    base = run(opsctl, path)
    slower = tmp_path / "mttr.yaml"
    slower.write_text("actions:\n  replace_switch_tray:\n    repair_h: 12\n")
    by_flag = run(opsctl, path, "--mttr-config", slower)
    assert by_flag["effective_cost_per_million_tokens"] > base["effective_cost_per_million_tokens"] * 1.05
    switch = next(f for f in by_flag["reliability"]["failures"] if f["name"] == "NVLink switch tray")
    assert switch["repair_hours"] == pytest.approx(0.1 + 0.5 + 0.5 + 12 + 1.0) and str(slower) in switch["source"]
    monkeypatch.setenv("OPSCTL_MTTR_CONFIG", str(slower))
    assert run(opsctl, path)["effective_cost_per_million_tokens"] == by_flag["effective_cost_per_million_tokens"]


def test_a_job_interrupted_faster_than_it_restarts_has_no_effective_price(opsctl, tmp_path):
    data = preset("llama4-16k-gb200-mtbi1000-spares-charged")
    data["reliability"].update(spare_racks=0, mtbi_gpu_days=200)
    document = run(opsctl, write(tmp_path, data))
    assert document["reliability"]["goodput_models"]["ettr"] < 0 < document["reliability"]["goodput_models"]["daly"]
    assert document["goodput"] == 0 and document["effective_cost_per_million_tokens"] is None
    assert "no time to train" in document["warnings"][0]
    data["reliability"]["goodput_model"] = "daly"
    assert run(opsctl, write(tmp_path, data))["effective_cost_per_million_tokens"] > 0


def test_hgx_failure_takes_the_server_and_needs_a_spare_server(opsctl):
    document = run(opsctl, SCENARIOS / "llama4-16k-h100-best-spares-charged.yaml")
    hardware = next(f for f in document["reliability"]["failures"] if f["name"] == "server hardware")
    assert hardware["blast_radius_gpus"] == 8 and hardware["covered_by"] == "spare unit"
    assert document["spares"]["spare_gpus_per_domain"] == 0 and document["spares"]["installed_gpus"] == (2048 + 16) * 8


def test_llama4_edges_come_close_to_the_published_ones(opsctl):
    published = {"spares-charged": (0.0, 0.18, 0.21), "spares-not-charged": (0.11, 0.27, 0.30)}
    for tag, edges in published.items():
        paths = [SCENARIOS / f"llama4-16k-h100-best-{tag}.yaml",
                 *(SCENARIOS / f"llama4-16k-gb200-mtbi{m}-{tag}.yaml" for m in (1000, 2000, 3000))]
        result = opsctl("tco", "compare", *paths, "--json")
        assert result.code == 0, result.err
        ours = [e["edge_vs_baseline"] for e in result.json()["edges"][1:]]
        assert ours == sorted(ours)  # more reliable GB200 operators have the larger edge
        for mine, theirs in zip(ours, edges):
            assert mine == pytest.approx(theirs, abs=0.05), (tag, ours)


def test_compare_table_for_people(opsctl):
    result = opsctl("tco", "compare", SCENARIOS / "llama4-maverick-h100-fp8-may2025-hyperscaler.yaml",
                    SCENARIOS / "llama4-maverick-gb200-fp8-may2025-hyperscaler.yaml")
    assert result.code == 0 and "edge over the first" in result.out and "+34" in result.out


def test_run_table_for_people(opsctl):
    result = opsctl("tco", "run", SCENARIOS / "llama4-16k-gb200-mtbi1000-spares-charged.yaml")
    assert result.code == 0 and "effective_cost_per_million_tokens" in result.out and "E[ETTR]" in result.out


# --- sweep -----------------------------------------------------------------------------------------
def read_rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_sweep_writes_a_csv_and_a_png(opsctl, tmp_path):
    from matplotlib.image import imread

    prefix = tmp_path / "mtbi"
    result = opsctl("tco", "sweep", SCENARIOS / "llama4-16k-gb200-mtbi2000-spares-charged.yaml",
                    "--vary", "reliability.mtbi_gpu_days=1000:5000:9", "--out", prefix, "--json")
    assert result.code == 0, result.err
    rows = read_rows(tmp_path / "mtbi.csv")
    mtbi = [float(r["reliability.mtbi_gpu_days"]) for r in rows]
    cost = [float(r["effective_cost_per_million_tokens"]) for r in rows]
    assert mtbi == [1000 + 500 * i for i in range(9)]
    assert all(a > b for a, b in zip(cost, cost[1:]))  # fewer interruptions, cheaper tokens
    assert len({r["cost_per_million_tokens"] for r in rows}) == 1  # the failure-free price does not move
    image = imread(tmp_path / "mtbi.png")
    assert image.shape[:2] == (500, 800) and image.std() > 0  # decoded, the documented size, not blank
    assert result.json()["rows"][0]["reliability.mtbi_gpu_days"] == 1000


def test_sweep_gpu_price_raises_cost_in_step(opsctl, tmp_path):
    result = opsctl("tco", "sweep", SCENARIOS / "gpt3-175b-h100-fp8-dec2024-hyperscaler.yaml",
                    "--vary", "cluster.gpu_hour_cost=1:3:5", "--out", tmp_path / "price")
    assert result.code == 0 and "wrote" in result.out
    rows = read_rows(tmp_path / "price.csv")
    assert [float(r["cluster.gpu_hour_cost"]) for r in rows] == [1.0, 1.5, 2.0, 2.5, 3.0]
    cost = [float(r["effective_cost_per_million_tokens"]) for r in rows]
    assert all(b > a for a, b in zip(cost, cost[1:]))
    assert cost[0] == pytest.approx(1 / (728 * 3600) * 1e6)


@pytest.mark.parametrize("vary, message", [
    ("cluster.gpu_hour_cost=0:3:4", "cluster.gpu_hour_cost: expected `float` > 0.0"),
    ("cluster.gpu_hour_cost", "expected KEY=FROM:TO:STEPS"),
    ("cluster.gpu_hour_cost=1:3:1", "STEPS must be 2 or more"),
    ("cluster.bogus=1:3:3", "cluster: object contains unknown field `bogus`"),
])
def test_sweep_refuses_bad_ranges_naming_the_key(opsctl, tmp_path, vary, message):
    result = opsctl("tco", "sweep", SCENARIOS / "gpt3-175b-h100-fp8-dec2024-hyperscaler.yaml", "--vary", vary,
                    "--out", tmp_path / "x")
    assert_one_line_error(result, 2, message)


# --- bad input: one line, exit 2, the key named -------------------------------------------------------
BASE = {"cluster": {"gpu": "h100", "gpus": 128, "gpu_hour_cost": 1.42},
        "workload": {"precision": "fp8", "tokens_per_second_per_gpu": 728, "tokens": 3e11}}


def edited(change):
    data = json.loads(json.dumps(BASE))
    change(data)
    return data


@pytest.mark.parametrize("change, message", [
    (lambda d: d["cluster"].update(gpu_hour_cost=-1), "cluster.gpu_hour_cost: expected `int` >= 1"),
    (lambda d: d["cluster"].update(gpu_hour_cost=0), "cluster.gpu_hour_cost: expected `int` >= 1"),
    (lambda d: d["cluster"].pop("gpu_hour_cost"), "cluster.gpu_hour_cost missing"),
    (lambda d: d["workload"].pop("tokens_per_second_per_gpu"), "workload.tokens_per_second_per_gpu missing"),
    (lambda d: d["cluster"].update(gpu="h300"), "cluster.gpu: invalid enum value 'h300'"),
    (lambda d: d["cluster"].update(colour="red"), "cluster: object contains unknown field `colour`"),
    (lambda d: d.update(extra=1), ": object contains unknown field `extra`"),
    (lambda d: d["workload"].update(precision="fp4"), "workload.precision: invalid enum value 'fp4'"),
    (lambda d: d["workload"].update(mfu=0.5), "give tokens_per_second_per_gpu or mfu, not both"),
    (lambda d: (d["workload"].pop("tokens_per_second_per_gpu"), d["workload"].update(mfu=0.5)), "workload.model missing"),
    (lambda d: d["cluster"].update(gpu="b200"), "cluster.watts_per_gpu missing: no published figure for b200"),
    (lambda d: d["cluster"].update(pue=0.9), "cluster.pue: expected `float` >= 1.0"),
    (lambda d: d["cluster"].update(gpus=1.5), "cluster.gpus: expected `int | object`, got `float`"),
    (lambda d: d["cluster"].update(capex={"capital_per_month": 7025}), "not both"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": -5, "restart_minutes": 10, "checkpoint_write_minutes": 1}),
     "reliability.mtbi_gpu_days: expected `int` >= 1"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10}),
     "reliability: checkpoint_write_minutes missing"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10, "checkpoint_write_minutes": 0}),
     "reliability.checkpoint_write_minutes must be > 0 when checkpoint_interval_minutes is optimal"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10, "checkpoint_write_minutes": 1,
                                     "spare_racks": 2}), "reliability.spare_racks: a h100 job keeps spare servers"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10, "checkpoint_write_minutes": 1,
                                     "failure_mix": [{"share": 0.5, "part": "gpu"}]}), "shares must add up to 1"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10, "checkpoint_write_minutes": 1,
                                     "failure_mix": [{"share": 1, "action": "teleport"}]}), "unknown MTTR action 'teleport'"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10, "checkpoint_write_minutes": 1,
                                     "blast_radius_gpus": 72}), "reliability.repair_hours missing"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10, "checkpoint_write_minutes": 1,
                                     "failure_mix": [{"share": 1, "part": "flux_capacitor"}]}),
     "part 'flux_capacitor'"),
    (lambda d: d.update(sources={"cluster.price": "me"}), "sources.cluster.price: no such key"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10, "checkpoint_write_minutes": 1,
                                     "failure_mix": []}), "reliability.failure_mix: expected `array` of length >= 1"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10, "checkpoint_write_minutes": 1,
                                     "failure_mix": [{"share": 1, "part": "gpu", "colour": 1}]}),
     "reliability.failure_mix[0]: object contains unknown field `colour`"),
    (lambda d: d.update(reliability={"mtbi_gpu_days": 2000, "restart_minutes": 10, "checkpoint_write_minutes": 1,
                                     "charge_spares": "maybe"}), "reliability.charge_spares: expected `bool`, got `str`"),
])
def test_bad_scenarios_are_one_line_naming_the_key_and_file(opsctl, tmp_path, change, message):
    path = write(tmp_path, edited(change))
    line = assert_one_line_error(opsctl("tco", "run", path, "--json"), 2, message)
    assert str(path) in line


def test_missing_and_malformed_files(opsctl, tmp_path):
    assert_one_line_error(opsctl("tco", "run", tmp_path / "nope.yaml"), 2, "no such file")
    (tmp_path / "bad.yaml").write_text("cluster: [1, 2\n")
    assert_one_line_error(opsctl("tco", "run", tmp_path / "bad.yaml"), 2, "not valid YAML")
    (tmp_path / "list.yaml").write_text("- 1\n")
    assert_one_line_error(opsctl("tco", "compare", tmp_path / "list.yaml"), 2, "expected a mapping")


NUMERIC_KEYS = [("cluster", "gpu_hour_cost"), ("cluster", "gpus"), ("cluster", "watts_per_gpu"),
                ("workload", "tokens_per_second_per_gpu"), ("workload", "tokens")]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(NUMERIC_KEYS),
       bad=st.one_of(st.floats(max_value=0, allow_nan=False, allow_infinity=False), st.integers(max_value=0),
                     st.text(alphabet="abc", min_size=1, max_size=5), st.booleans()))
def test_any_non_positive_or_non_number_is_refused(opsctl, tmp_path_factory, key, bad):
    block, name = key
    path = write(tmp_path_factory.mktemp("bad"), edited(lambda d: d[block].update({name: bad})))
    assert_one_line_error(opsctl("tco", "run", path, "--json"), 2, f"{block}.{name}")


def test_numbers_written_in_exponent_form_are_read(opsctl, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(Path(SCENARIOS / "gpt3-175b-h100-fp8-dec2024-hyperscaler.yaml").read_text())
    assert "tokens: 300e9" in path.read_text()  # YAML reads 300e9 as a string; opsctl as a number
    assert run(opsctl, path)["tokens"] == 3e11


def test_tco_as_a_user_runs_it(opsctl_process):
    result = opsctl_process("tco", "run", SCENARIOS / "gpt3-175b-h100-fp8-dec2024-hyperscaler.yaml", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["cost_per_million_tokens"] == pytest.approx(0.542, abs=0.001)
    assert_one_line_error(opsctl_process("tco", "run", SCENARIOS / "missing.yaml"), 2, "no such file")


def test_a_range_given_to_the_point_reader_is_refused_naming_the_key():
    """scenario_from_data prices points: a range must have been read by opsctl/tco/uncertain.py first."""
    from opsctl.errors import InputError
    from opsctl.tco.scenario import scenario_from_data

    data = edited(lambda d: d.update(reliability={"mtbi_gpu_days": {"low": 1000, "high": 3000}, "restart_minutes": 10,
                                                  "checkpoint_write_minutes": 1}))
    with pytest.raises(InputError, match=r"^s\.yaml: reliability\.mtbi_gpu_days: a range where this reader takes a number"):
        scenario_from_data(data, "s.yaml")
