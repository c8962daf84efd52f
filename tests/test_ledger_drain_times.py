"""Time out of service as Slurm saw it: `opsctl ledger stats` reads the drains table (drain →
resume) per repair action and per part kind, beside the typed repair times, and never drops a
drain that is still open. Drains are recorded as `opsctl drain`/`resume` record them
(opsctl/ledger/drains.py record_containment); slurmctld itself is exercised in
tests/test_slurm_*.py."""

from datetime import timedelta

import pytest

from opsctl.ledger import close_repair, fleet_statistics, open_ledger, open_repair, record_burnin
from opsctl.ledger.drains import record_containment
from opsctl.ledger.timestamps import parse_time, stored
from opsctl.slurm.containment import DRAINED, RESUMED, Containment, Hold, NodeOutcome, reason_of

T0 = parse_time("2026-01-05T00:00:00Z")
RACK_NODES = tuple(f"rack07-ct{n:02d}" for n in range(1, 19))
ACCEPTED = {"rack": "rack07", "kind": "accept", "verdict": "pass", "finished": "2026-01-01T00:00:00Z", "checks": []}


def at(minutes):
    return stored(T0 + timedelta(minutes=minutes))


def drain(ledger, part, action, nodes, minutes, incident=None):
    hold = Hold(part, action, incident)
    outcomes = [NodeOutcome(node, DRAINED, "", "IDLE", "", reason_of([hold]), added=[hold]) for node in nodes]
    record_containment(Containment("drain", False, outcomes, []), "rack07", "ana", ledger, at=at(minutes))


def resume(ledger, part, action, nodes, minutes):
    hold = Hold(part, action)
    outcomes = [NodeOutcome(node, RESUMED, "", "IDLE+DRAIN", reason_of([hold]), None, released=[hold])
                for node in nodes]
    record_containment(Containment("resume", False, outcomes, []), "rack07", "bo", ledger, at=at(minutes))


def drained_for(ledger, part, node, minutes_out, start=0, action="reseat_compute_tray"):
    drain(ledger, part, action, [node], start)
    resume(ledger, part, action, [node], start + minutes_out)


@pytest.fixture
def ledger(tmp_path):
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite'}") as opened:
        record_burnin(ACCEPTED, opened)
        yield opened


@pytest.mark.parametrize("minutes, below", [(179, True), (181, False)])
def test_a_drain_a_minute_either_side_of_three_hours_lands_on_its_side_of_the_typed_median(ledger, minutes, below):
    # The typed repair: reseat_compute_tray, 3 h from the failure to back in service.
    open_repair("rack07/ct12/j2", ledger, action="reseat_compute_tray", by="ana", at=at(0))
    close_repair("rack07/ct12/j2", ledger, by="ana", at=at(150), back_in_service=at(180))
    # As Slurm saw three reseats: 1 h, the one under test, 5 h — its time is the median.
    drained_for(ledger, "rack07/ct03/j1", "rack07-ct03", 60)
    drained_for(ledger, "rack07/ct12/j2", "rack07-ct12", minutes)
    drained_for(ledger, "rack07/ct07/j2", "rack07-ct07", 300)
    stats = fleet_statistics(ledger, until=at(24 * 60))
    typed = stats["mttr"]["by_action"]["reseat_compute_tray"]["median_hours"]
    row = stats["slurm_drains"]["by_action"]["reseat_compute_tray"]
    assert typed == 3.0 and row["typed_repair_median_hours"] == typed
    assert (row["drains"], row["resumed"], row["open"]) == (3, 3, 0)
    assert row["median_hours"] == round(minutes / 60, 2)  # 2.98 or 3.02: the minute is not rounded away
    assert (row["median_hours"] < typed) is below
    assert row["interval"] == [1.0, 5.0] and row["interval_coverage"] == 0.75  # 3 drains: the range, 75 % sure
    assert stats["slurm_drains"]["by_kind"]["connector"]["median_hours"] == row["median_hours"]
    assert stats["slurm_drains"]["open"] == []


def test_a_drain_never_resumed_is_reported_open_not_dropped(ledger, opsctl, tmp_path):
    drained_for(ledger, "rack07/ct03/j1", "rack07-ct03", 120)
    drain(ledger, "rack07/ct12/j2", "reseat_compute_tray", ["rack07-ct12"], 60)  # never resumed
    # A switch tray drains the whole rack: 18 rows, one drain, out until its last node is back.
    drain(ledger, "rack07/st3", "replace_switch_tray", RACK_NODES, 0)
    resume(ledger, "rack07/st3", "replace_switch_tray", RACK_NODES[:17], 200)
    resume(ledger, "rack07/st3", "replace_switch_tray", RACK_NODES[17:], 240)
    stats = fleet_statistics(ledger, until=at(6 * 60))["slurm_drains"]
    reseat = stats["by_action"]["reseat_compute_tray"]
    assert (reseat["drains"], reseat["resumed"], reseat["open"]) == (2, 1, 1)
    assert reseat["median_hours"] == 2.0  # of the resumed drain
    assert reseat["open_hours_so_far"] == [5.0]  # drained at 1 h, the window ends at 6 h
    assert reseat["median_hours_at_least"] == 3.5  # median of 2 h and at least 5 h
    switch = stats["by_action"]["replace_switch_tray"]
    assert (switch["drains"], switch["median_hours"], switch["nodes_mean"]) == (1, 4.0, 18)
    assert stats["by_kind"]["switch_tray"]["drains"] == 1
    [still] = stats["open"]
    assert (still["part"], still["nodes"], still["hours_so_far"], still["kind"]) == \
        ("rack07/ct12/j2", ["rack07-ct12"], 5.0, "connector")
    # Seen from before the switch tray's last node came back, that drain too was still open.
    earlier = fleet_statistics(ledger, until=at(230))["slurm_drains"]
    assert earlier["by_action"]["replace_switch_tray"]["open"] == 1
    # The terminal says so too.
    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    text = opsctl("ledger", "stats", "--db", db, "--until", at(6 * 60))
    assert text.code == 0, text.err
    assert "still drained: rack07/ct12/j2 (reseat_compute_tray) on rack07-ct12 since 2026-01-05T01:00:00Z, " \
           "5.00 h so far" in text.out


def test_repair_close_shows_the_drains_of_its_incident(ledger, opsctl, tmp_path):
    repair = open_repair("rack07/ct12", ledger, action="replace_compute_tray", by="ana", at=at(0))
    incident = repair["incident_key"]
    drain(ledger, "rack07/ct12", "replace_compute_tray", ["rack07-ct12"], 5, incident=incident)
    resume(ledger, "rack07/ct12", "replace_compute_tray", ["rack07-ct12"], 5 + 181)
    drain(ledger, "rack07/ct03/j1", "reseat_compute_tray", ["rack07-ct03"], 5)  # another fault: not linked
    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    result = opsctl("repair", "close", "rack07/ct12", "--at", at(200), "--db", db, "--json")
    assert result.code == 0, result.err
    [linked] = result.json()["drains"]
    assert (linked["incident_key"], linked["nodes"], linked["hours"], linked["open"]) == \
        (incident, ["rack07-ct12"], 3.02, False)
    with open_ledger(db, read_only=True) as reread:
        assert linked["drain_keys"] == [r["key"] for r in reread.records("drains", "incident_key = :key", {"key": incident})]
