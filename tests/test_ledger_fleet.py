"""Months of a simulated fleet, recorded through the commands, measure what was injected: MTBI
per part kind and overall, and the median time to restore per repair action, each inside its
95 % interval. The history is seeded, so it is the same every run; bench/ledger_coverage.py
measures how often the intervals hold over many seeds (about 95 %, as they should)."""

import json

import pytest

from bench.fleet_history import simulate_fleet_history

SEED = 3


def record_through_the_cli(opsctl, history, db, directory):
    """Each event as a user (or the burn-in and triage hooks) would record it."""
    for number, (at, kind, payload) in enumerate(history.events):
        if kind in ("burnin", "accept", "triage"):
            path = directory / f"{number:04d}-{kind}.json"
            path.write_text(json.dumps(payload))
            command = "record-triage" if kind == "triage" else "record-burnin"
            result = opsctl("ledger", command, path, "--at", at, "--db", db)
        elif kind == "repair_open":
            result = opsctl("repair", "open", payload["part"], "--action", payload["action"], "--by", payload["by"],
                            "--at", at, "--db", db)
        else:
            rma = [arg for rma_id in payload["rma_ids"] for arg in ("--rma", rma_id)]
            result = opsctl("repair", "close", payload["part"], "--by", payload["by"], "--at", at,
                            "--replaced", payload["replaced"], *rma, "--db", db)
        assert result.code == 0, (kind, payload, result.err)


def check_against_injected(stats, injected):
    """Every measure whose interval the data can support contains the injected truth."""
    overall = stats["mtbi"]["overall"]
    low, high = overall["interval"]
    assert low <= injected.mtbi_gpu_days <= high, (overall, injected.mtbi_gpu_days)
    for mode in injected.modes:
        rate = stats["mtbi"]["by_kind"][mode.kind]
        assert rate["interval"][0] <= mode.mtbi_gpu_days <= rate["interval"][1], (mode, rate)
    checked = 0
    for action, truth in injected.repair_median_hours.items():
        row = stats["mttr"]["by_action"][action]
        if row["interval_coverage"] >= stats["confidence"]:  # 6 repairs or more
            assert row["interval"][0] <= truth <= row["interval"][1], (action, row, truth)
            checked += 1
    assert checked >= 3
    burnin = stats["burnin"]
    assert burnin["interval"][0] <= injected.burnin_failure_probability <= burnin["interval"][1], burnin


@pytest.mark.slow
def test_a_simulated_fleet_measures_its_injected_rates(opsctl, tmp_path, ledger_db):
    db = ledger_db
    history = simulate_fleet_history(racks=8, days=200, seed=SEED)
    record_through_the_cli(opsctl, history, db, tmp_path)
    plot = tmp_path / "failures.png"
    result = opsctl("ledger", "stats", "--until", history.until, "--db", db, "--plot", plot, "--json")
    assert result.code == 0, result.err
    stats = result.json()
    triaged = sum(kind == "triage" for _, kind, _ in history.events)
    assert stats["failures"]["total"] == triaged > 40  # months of history: dozens of failures
    check_against_injected(stats, history.injected)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000
    # The text report says the same, for people.
    text = opsctl("ledger", "stats", "--until", history.until, "--db", db)
    assert text.code == 0 and f"{stats['mtbi']['overall']['mtbi_gpu_days']:,.0f}" in text.out
    assert "reset_gpu" in text.out and "racks failed their first run" in text.out


def test_infant_mortality_shows_when_new_racks_fail_more(memory_tmp_path):
    from opsctl.ledger import fleet_statistics, open_ledger
    from bench.fleet_history import FailureMode, record_history

    history = simulate_fleet_history(racks=10, days=120, seed=1, modes=(FailureMode("gpu", 1500.0, "reset_gpu"),),
                                     infant_factor=4.0, infant_weeks=4, stagger_days=3)
    with open_ledger(f"sqlite:///{memory_tmp_path / 'l.sqlite'}") as ledger:
        record_history(history, ledger)
        stats = fleet_statistics(ledger, until=history.until, infant_weeks=4)
    infant = stats["infant_mortality"]
    early, later = infant["early"], infant["later"]
    assert early["interval"][0] <= 1500.0 / 4 <= early["interval"][1], early
    assert later["interval"][0] <= 1500.0 <= later["interval"][1], later
    assert infant["ratio"] > 2
