"""A job that cannot make progress (interruptions far more often than restarts, repairs or checkpoint
intervals allow) is priced, not crashed: exit 0, `effective_cost_per_million_tokens` null and a
warning (docs/tco.md) — in `run`, `compare`, `sweep` and `run --from-ledger`, under either goodput
model. And no positive finite reliability figure makes `opsctl tco run` crash or print non-JSON."""

import csv
import json
import math

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsctl.tco.checkpointing import daly_interval, young_interval
from opsctl.tco.goodput import daly_goodput, ettr
from tests.conftest import REPO, assert_one_line_error
from tests.test_tco_from_ledger import SCENARIO as LEDGER_SCENARIO
from tests.test_tco_from_ledger import history

SCENARIOS = REPO / "scenarios"
GPT3 = SCENARIOS / "gpt3-175b-h100-bf16-dec2024-hyperscaler.yaml"  # no reliability block of its own
GB200 = SCENARIOS / "llama4-16k-gb200-mtbi2000-spares-charged.yaml"
H100 = SCENARIOS / "llama4-16k-h100-best-spares-charged.yaml"
REVIEWED = {"mtbi_gpu_days": 0.001, "checkpoint_write_minutes": 1, "restart_minutes": 20}


def strict_json(text):
    """JSON as the standard has it: Infinity and NaN are not numbers."""
    def refuse(constant):
        raise AssertionError(f"{constant} in the JSON output")
    return json.loads(text, parse_constant=refuse)


def with_reliability(tmp_path, base, block, name="s.yaml"):
    data = yaml.safe_load(base.read_text())
    data["reliability"] = block
    sources = {key: value for key, value in (data.get("sources") or {}).items() if not key.startswith("reliability.")}
    data["sources"] = sources  # the presets' sources for the keys replaced go with them
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def assert_no_progress(document, model="ettr"):
    assert document["effective_cost_per_million_tokens"] is None
    assert document["goodput"] == 0.0 and document["goodput_model"] == model
    assert document["effective_total_cost"] is None and document["training_days"] is None
    assert document["cost_per_million_tokens"] > 0  # the failure-free price still stands
    assert len(document["warnings"]) == 1 and "no time to train" in document["warnings"][0]
    assert document["warnings"][0].startswith(f"{model} goodput is")


# --- the reviewer's inputs: each crashed with OverflowError (exit 3, no JSON) -------------------------
@pytest.mark.parametrize("change, model", [
    ({}, "ettr"),
    ({"mtbi_gpu_days": 0.01}, "ettr"),
    ({"mtbi_gpu_days": 0.01, "goodput_model": "daly"}, "daly"),
    ({"goodput_model": "daly"}, "daly"),
    ({"checkpoint_interval_minutes": 1e9}, "ettr"),
    ({"mtbi_gpu_days": 1000, "checkpoint_interval_minutes": 1e9}, "ettr"),
    ({"mtbi_gpu_days": 1000, "checkpoint_interval_minutes": 1e9, "goodput_model": "daly"}, "daly"),
])
def test_a_job_that_cannot_progress_exits_0_with_a_null_price_and_a_warning(opsctl, tmp_path, change, model):
    path = with_reliability(tmp_path, GPT3, {**REVIEWED, **change})
    result = opsctl("tco", "run", path, "--json")
    assert result.code == 0, result.err
    document = strict_json(result.out)
    assert_no_progress(document, model)
    assert document["reliability"]["goodput_models"]["daly"] == 0.0  # e^-(thousands): underflows, no overflow
    assert "effective_cost_per_million_tokens" not in document["derivations"]
    table = opsctl("tco", "run", path)
    assert table.code == 0 and "warning:" in table.out and "no time to train" in " ".join(table.out.split())


def test_the_same_inputs_as_a_process(opsctl_process, tmp_path):
    result = opsctl_process("tco", "run", with_reliability(tmp_path, GPT3, REVIEWED), "--json")
    assert result.code == 0 and "internal error" not in result.err, result.err
    assert_no_progress(strict_json(result.out))


def test_compare_prices_a_stalled_job_beside_a_working_one(opsctl, tmp_path):
    stalled = with_reliability(tmp_path, GPT3, {**REVIEWED, "goodput_model": "daly"})
    result = opsctl("tco", "compare", GPT3, stalled, "--json")
    assert result.code == 0, result.err
    edges = strict_json(result.out)["edges"]
    assert edges[0]["edge_vs_baseline"] == 0 and edges[1]["edge_vs_baseline"] is None
    table = opsctl("tco", "compare", stalled, GPT3)
    assert table.code == 0, table.err


@pytest.mark.slow
def test_sweep_runs_through_mtbis_too_short_to_train(opsctl, tmp_path):
    path = with_reliability(tmp_path, GPT3, REVIEWED)
    result = opsctl("tco", "sweep", path, "--vary", "reliability.mtbi_gpu_days=0.001:2000:5", "--out", tmp_path / "m",
                    "--json")
    assert result.code == 0, result.err
    with open(tmp_path / "m.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["effective_cost_per_million_tokens"] == "" and float(rows[-1]["effective_cost_per_million_tokens"]) > 0
    assert (tmp_path / "m.png").stat().st_size > 0
    for model in ("daly",):
        daly = with_reliability(tmp_path, GPT3, {**REVIEWED, "goodput_model": model}, "d.yaml")
        assert opsctl("tco", "sweep", daly, "--vary", "reliability.checkpoint_interval_minutes=1:1e9:3",
                      "--out", tmp_path / "i").code == 0


def test_from_ledger_with_a_restart_no_job_survives(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    history(url, repair_hours=3)
    data = yaml.safe_load(LEDGER_SCENARIO.read_text())
    data["reliability"].update(restart_minutes=1e7, goodput_model="daly")  # e^(R/M) overflowed here
    path = tmp_path / "slow-restarts.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = opsctl("tco", "run", path, "--from-ledger", "--db", url, "--json")
    assert result.code == 0, result.err
    document = strict_json(result.out)
    assert_no_progress(document, "daly")
    assert document["reliability_from"]["measured"]["mtbi_gpu_days"] > 0


# --- the reliability block: what it needs, said plainly (docs/tco.md's table) -------------------------------
@pytest.mark.parametrize("block, message", [
    ({"mtbi_gpu_days": 1000}, "reliability: restart_minutes, checkpoint_write_minutes missing"),
    ({"mtbi_gpu_days": 1000, "restart_minutes": 20}, "reliability: checkpoint_write_minutes missing"),
    ({"restart_minutes": 20, "checkpoint_interval_minutes": 30}, "reliability: mtbi_gpu_days missing"),
    ({"mtbi_gpu_days": 1000, "restart_minutes": 20, "checkpoint_write_minutes": 0},
     "reliability.checkpoint_write_minutes must be > 0 when checkpoint_interval_minutes is optimal"),
])
def test_a_reliability_block_names_the_keys_it_lacks(opsctl, tmp_path, block, message):
    assert_one_line_error(opsctl("tco", "run", with_reliability(tmp_path, GPT3, block), "--json"), 2, message)


def test_non_blocking_writes_need_only_a_numeric_interval(opsctl, tmp_path):
    path = with_reliability(tmp_path, GPT3, {"mtbi_gpu_days": 1000, "restart_minutes": 20,
                                             "checkpoint_interval_minutes": 30})
    document = strict_json(opsctl("tco", "run", path, "--json").out)
    assert document["reliability"]["checkpoint_write_minutes"] == 0 and 0 < document["goodput"] < 1


def test_sweeping_reliability_on_a_scenario_without_the_block_says_what_it_needs(opsctl, tmp_path):
    result = opsctl("tco", "sweep", GPT3, "--vary", "reliability.mtbi_gpu_days=1000:5000:41", "--out", tmp_path / "x")
    line = assert_one_line_error(result, 2, "no reliability block to vary", "mtbi_gpu_days, restart_minutes, "
                                 "checkpoint_write_minutes", "llama4-16k-gb200-mtbi2000-spares-charged.yaml")
    assert "checkpoint_interval_minutes is optimal" not in line
    assert not (tmp_path / "x.csv").exists()


# --- properties: no positive finite reliability figure crashes ---------------------------------------------
POSITIVE = st.floats(min_value=0, max_value=1.7e308, exclude_min=True, allow_nan=False, allow_infinity=False)
MODERATE = st.floats(min_value=1e-6, max_value=1e12)
TIME = st.one_of(POSITIVE, MODERATE)


@settings(max_examples=500, deadline=None)
@given(mtbi=TIME, restart=st.one_of(st.just(0.0), TIME), write=st.one_of(st.just(0.0), TIME), interval=TIME)
def test_goodput_models_never_raise_and_stay_at_most_one(mtbi, restart, write, interval):
    daly = daly_goodput(mtbi, restart, write, interval)
    assert 0.0 <= daly <= 1.0 + 1e-12
    value = ettr(mtbi, restart, write, interval)
    assert not math.isnan(value) and value <= 1.0
    if write:
        assert not math.isnan(young_interval(write, mtbi))  # √(2δM) may pass the float range: reported null
        assert 0 < daly_interval(write, mtbi) <= mtbi


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from([GPT3, GB200, H100]), mtbi=TIME, restart=st.one_of(st.just(0.0), TIME), write=TIME,
       interval=st.one_of(st.just("optimal"), TIME), model=st.sampled_from(["ettr", "daly"]),
       repair=st.one_of(st.none(), st.just(0.0), TIME))
@pytest.mark.slow
def test_any_positive_finite_reliability_prices_or_says_why_not(opsctl, tmp_path_factory, base, mtbi, restart, write,
                                                                interval, model, repair):
    block = yaml.safe_load(base.read_text()).get("reliability") or {}
    block.update(mtbi_gpu_days=mtbi, restart_minutes=restart, checkpoint_write_minutes=write,
                 checkpoint_interval_minutes=interval, goodput_model=model)
    if repair is not None:  # one class that drains a whole domain for `repair` hours
        block.pop("failure_mix", None)
        block.update(blast_radius_gpus=72 if base == GB200 else 8, repair_hours=repair)
    path = with_reliability(tmp_path_factory.mktemp("r"), base, block)
    result = opsctl("tco", "run", path, "--json")
    assert result.code == 0, result.err
    document = strict_json(result.out)
    effective = document["effective_cost_per_million_tokens"]
    assert 0.0 <= document["goodput"] <= 1.0 + 1e-12
    if effective is None:
        assert document["warnings"] and "no time to train" in document["warnings"][0]
    else:
        assert not document["warnings"] and effective >= document["cost_per_million_tokens"] * (1 - 1e-9)
