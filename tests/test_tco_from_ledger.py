"""`opsctl tco run --from-ledger`: the fleet's measured MTBI and repairs price the run, and the
output says they did."""

import math

import pytest
import yaml

from opsctl.ledger import close_repair, open_ledger, open_repair, record_burnin, record_triage
from tests.conftest import REPO, assert_one_line_error
from tests.test_ledger import ACCEPTED, triage
from tests.test_tco_cli import run, write

SCENARIO = REPO / "scenarios" / "llama4-16k-gb200-mtbi2000-spares-charged.yaml"


def history(url, repair_hours):
    """rack07 in service; two failures in ten days, each repaired in `repair_hours` with the rack drained."""
    with open_ledger(url) as ledger:
        record_burnin(ACCEPTED, ledger)
        for day in (3, 7):
            record_triage(triage("rack07/st3/sw1", "switch_chip"), ledger, at=f"2026-01-0{day}T00:00Z")
            open_repair("rack07/st3", ledger, action="replace_switch_tray", by="ana", at=f"2026-01-0{day}T00:30Z")
            close_repair("rack07/st3", ledger, by="ana", at=f"2026-01-0{day}T{repair_hours:02d}:00Z")


@pytest.mark.slow
def test_measured_reliability_replaces_the_published_figures(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    history(url, repair_hours=3)
    published = opsctl("tco", "run", SCENARIO, "--json").json()
    measured = opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url, "--json")
    assert measured.code == 0, measured.err
    document = measured.json()
    taken = document["reliability_from"]["measured"]
    assert taken["blast_radius_gpus"] == 72 and taken["repair_hours"] == 3.0
    # The ledger saw switch trays fail: their class is the ledger's. The scenario's other part kinds (gpu,
    # cartridge) did not fail over the rack's GPU-days: the ledger's too, with no failure, flagged; software,
    # which the ledger does not record, stays the scenario's.
    classes = {line["name"]: line for line in document["reliability_from"]["failure_classes"]}
    switch = classes["switch_tray"]
    assert switch["from"] == "ledger" and switch["action"] == "replace_switch_tray" and switch["failures"] == 2
    assert switch["mtbi_gpu_days"] == taken["mtbi_gpu_days"] and switch["repair_hours"] == 3.0
    assert {name for name, line in classes.items() if line["from"] == "scenario"} == {"software"}
    for kind in ("gpu", "cartridge"):
        unseen = classes[kind]
        assert unseen["from"] == "ledger" and unseen["failures"] == 0 and "no incident" in unseen["why"]
        assert unseen["gpu_days"] == switch["gpu_days"] and unseen["mtbi_interval"][1] is None
        # Zero failures in T GPU-days: an MTBI below about T / 3 is unlikely (Garwood's 95% bound: T / 3.69).
        assert unseen["mtbi_interval"][0] > unseen["gpu_days"] / 3.69 == pytest.approx(unseen["mtbi_exact_interval"][0], rel=0.01)
    # One kind failed: Jeffreys' ½ is its own; each kind that did not has its own ½ too.
    assert [line["mtbi_prior"] for line in classes.values() if line["from"] == "ledger"] == [0.5] * 3
    priced = {failure["name"]: failure for failure in document["reliability"]["failures"]}
    assert "NVLink switch tray" not in priced and priced["switch_tray"]["repair_hours"] == 3.0
    assert priced["switch_tray"]["blast_radius_gpus"] == 72  # the action's: the rack drained
    assert document["reliability"]["mtbi_gpu_days"] != published["reliability"]["mtbi_gpu_days"]
    assert "measured by the opsctl ledger" in document["reliability_from"]["source"]
    table = " ".join(opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url).out.split())
    assert "reliability measured by the opsctl ledger" in table
    assert "software: the scenario's figure" in table and "switch_tray: MTBI" in table
    assert "cartridge: MTBI at least" in table and "no incident of this kind in" in table


def test_slower_repairs_in_the_ledger_cost_more_per_token(opsctl, tmp_path):
    prices = []
    for hours in (2, 9):
        url = f"sqlite:///{tmp_path / f'ledger{hours}.sqlite'}"
        history(url, repair_hours=hours)
        prices.append(opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url, "--json").json()["effective_cost_per_million_tokens"])
    assert prices[1] > prices[0]


def test_from_ledger_needs_a_ledger_with_a_rack_in_service(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    # A ledger that is not there is not made up empty: reading it is an input error.
    assert_one_line_error(opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url), 2, "no ledger at")
    assert not (tmp_path / "empty.sqlite").exists()
    open_ledger(url).close()  # a ledger with nothing in it
    assert_one_line_error(opsctl("tco", "run", SCENARIO, "--from-ledger", "--db", url), 2, "no rack in service")
    assert_one_line_error(opsctl("tco", "run", SCENARIO, "--since", "2026-01-01"), 2, "go with --from-ledger")
    plain = REPO / "scenarios" / next(p.name for p in (REPO / "scenarios").glob("gpt3*h100*fp8*dec2024*hyperscaler*"))
    history(f"sqlite:///{tmp_path / 'one.sqlite'}", repair_hours=3)
    assert_one_line_error(opsctl("tco", "run", plain, "--from-ledger", "--db", f"sqlite:///{tmp_path / 'one.sqlite'}"),
                          2, "needs a reliability block")


# --- per part kind: each kind's MTBI and each action's restore time with their posteriors -------------------
@pytest.mark.slow
def test_a_simulated_fleet_gives_per_kind_intervals_that_hold_its_injected_rates(opsctl, memory_tmp_path):
    from bench.fleet_history import DEFAULT_MODES, record_history, simulate_fleet_history

    modes = tuple(mode for mode in DEFAULT_MODES if mode.kind != "cartridge")  # no cartridge ever fails
    history = simulate_fleet_history(racks=8, days=200, seed=3, modes=modes)
    url = f"sqlite:///{memory_tmp_path / 'fleet.sqlite'}"
    with open_ledger(url) as ledger:
        record_history(history, ledger)
    stats = opsctl("ledger", "stats", "--until", history.until, "--db", url, "--json").json()
    result = opsctl("tco", "run", SCENARIO, "--from-ledger", "--until", history.until, "--db", url,
                    "--level", "0.95", "--draws", "200", "--json")
    assert result.code == 0, result.err
    document = result.json()
    classes = {line["name"]: line for line in document["reliability_from"]["failure_classes"]}
    for mode in modes:
        line = classes[mode.kind]
        assert line["from"] == "ledger" and line["action"] == mode.action, line
        assert line["mtbi_interval"][0] <= mode.mtbi_gpu_days <= line["mtbi_interval"][1], (mode, line)
        assert line["mtbi_exact_interval"][0] <= mode.mtbi_gpu_days <= line["mtbi_exact_interval"][1], (mode, line)
        # The point figures are the ledger's own measures.
        assert line["mtbi_gpu_days"] == stats["mtbi"]["by_kind"][mode.kind]["mtbi_gpu_days"]
        assert line["repair_hours"] == stats["mttr"]["by_action"][mode.action]["mean_hours"]
        # Restore time per action: the posterior of a lognormal's mean over every closed repair with that action
        # (how often the price's interval holds with it: bench/tco_coverage.py).
        assert line["repairs_closed"] == stats["mttr"]["by_action"][mode.action]["closed"] >= 5
        assert line["repair_hours_interval"][0] < line["repair_hours"] < line["repair_hours_interval"][1]
    # No cartridge failed in 200 days: the ledger's zero over its GPU-days prices the cartridge, flagged; the
    # scenario's software restarts, which no ledger records, stand as the scenario gave them.
    cartridge = classes["cartridge"]
    assert cartridge["from"] == "ledger" and cartridge["failures"] == 0 and "no incident" in cartridge["why"]
    assert cartridge["repair_from"].startswith("MTTR model") and classes["software"]["from"] == "scenario"
    # The four kinds that failed share one Jeffreys' ½ (their total rate's); the cartridge, none seen, has its own.
    assert {kind: line["mtbi_prior"] for kind, line in classes.items() if line["from"] == "ledger"} == {
        **{mode.kind: 0.125 for mode in modes}, "cartridge": 0.5}
    assert not {"compute tray hardware", "NVLink switch tray", "NVLink cable cartridge"} & set(classes)
    # Each kind is its own range in the Monte Carlo, drawn independently; the restores of the four that failed too.
    inputs = document["uncertainty"]["inputs"]
    assert sum(name.endswith(".mtbi_gpu_days") and spec["dist"] == "poisson_mtbi" for name, spec in inputs.items()) == 5
    assert sum(name.endswith(".repair_hours") and spec["dist"] == "lognormal_mean" for name, spec in inputs.items()) == 4
    shares = [failure["share"] for failure in document["reliability"]["failures"]]
    assert math.isclose(sum(shares), 1.0) and len(shares) == 6


def scenario_with_mix(tmp_path, mix, name="mix.yaml", **reliability):
    data = yaml.safe_load(SCENARIO.read_text())
    data["reliability"]["failure_mix"] = mix
    data["reliability"].update(reliability)
    data["sources"] = {k: v for k, v in data["sources"].items() if not k.startswith("reliability.failure_mix")}
    for key in [k for k, v in reliability.items() if v is None]:
        del data["reliability"][key]
        data["sources"].pop(f"reliability.{key}", None)
    return write(tmp_path, data, name)


def test_classes_with_their_own_mtbi_price_as_the_shares_they_make(opsctl, tmp_path):
    """A class's own mtbi_gpu_days (what --from-ledger writes) is the same interruption rate as its share
    of the scenario's MTBI: 2,000 GPU-days at share 0.06 is a class MTBI of 2,000 / 0.06."""
    today = run(opsctl, SCENARIO)
    mix = yaml.safe_load(SCENARIO.read_text())["reliability"]["failure_mix"]
    own = [{k: v for k, v in c.items() if k != "share"} | {"mtbi_gpu_days": 2000 / c["share"]} for c in mix]
    every = run(opsctl, scenario_with_mix(tmp_path, own, mtbi_gpu_days=None))
    some = run(opsctl, scenario_with_mix(tmp_path, mix[:2] + own[2:], "some.yaml"))  # software and gpu as shares
    for document in (every, some):
        assert math.isclose(document["reliability"]["mtbi_gpu_days"], 2000, rel_tol=1e-12)
        for key in ("goodput", "effective_cost_per_million_tokens", "checkpoint_interval_minutes"):
            assert math.isclose(document[key], today[key], rel_tol=1e-12), key
    # A class twice as likely to fail moves the price; its share follows.
    faster = [*own[:2], {**own[2], "mtbi_gpu_days": own[2]["mtbi_gpu_days"] / 2}, own[3]]
    moved = run(opsctl, scenario_with_mix(tmp_path, faster, "faster.yaml", mtbi_gpu_days=None))
    assert moved["effective_cost_per_million_tokens"] > today["effective_cost_per_million_tokens"]
    assert moved["reliability"]["failures"][2]["share"] > today["reliability"]["failures"][2]["share"]


def test_a_measured_restore_time_goes_with_a_part_and_keeps_its_blast_radius(opsctl, tmp_path):
    switch = {"name": "switch", "part": "switch_tray", "mtbi_gpu_days": 30000}
    document = run(opsctl, scenario_with_mix(tmp_path, [{**switch, "repair_hours": 7.5}], mtbi_gpu_days=None))
    failure = document["reliability"]["failures"][0]
    assert failure["repair_hours"] == 7.5 and failure["blast_radius_gpus"] == 72 and "time to restore 7.5 h" in failure["source"]


@pytest.mark.parametrize("mix, reliability, message", [
    ([{"part": "gpu", "share": 1, "mtbi_gpu_days": 900}], {}, "give share or mtbi_gpu_days"),
    ([{"part": "gpu", "mtbi_gpu_days": 900}], {}, "every failure_mix class gives its own mtbi_gpu_days"),
    ([{"part": "gpu", "share": 0.5}, {"part": "switch_tray", "mtbi_gpu_days": 900}], {"mtbi_gpu_days": None},
     "reliability.mtbi_gpu_days missing: the failure_mix classes with a share (gpu)"),
    ([{"part": "gpu", "share": 0.7}, {"part": "cartridge", "share": 0.4}, {"part": "switch_tray", "mtbi_gpu_days": 900}],
     {}, "shares must add up to at most 1 beside classes with their own mtbi_gpu_days, they add up to 1.1"),
    ([{"part": "gpu", "mtbi_gpu_days": 0}], {"mtbi_gpu_days": None}, "failure_mix[0].mtbi_gpu_days: expected `int` >= 1"),
    ([{"part": "gpu", "mtbi_gpu_days": 900, "repair_hours": 2, "repair_step_hours": 1}], {"mtbi_gpu_days": None},
     "give repair_hours (the whole time to restore) or repair_step_hours"),
])
def test_a_failure_mix_with_own_rates_that_does_not_add_up_is_refused(opsctl, tmp_path, mix, reliability, message):
    path = scenario_with_mix(tmp_path, mix, **reliability)
    assert_one_line_error(opsctl("tco", "run", path), 2, message)
