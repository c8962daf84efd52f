"""Each fault is counted once, as the part it is: a triage recorded twice (by `opsctl triage`
itself and again by hand), a fault triaged again while it is still open, every fault of one
triage, and a repair that claims only its own part's incident (or one of a part it holds or
that holds it). MTBI, MTTR and `tco --from-ledger` are computed from these incidents."""

import json

import pytest

from opsctl.errors import InputError
from opsctl.ledger import (close_repair, fleet_statistics, open_ledger, open_repair, record_incident, record_triage,
                           set_rack)
from tests.conftest import assert_one_line_error

# What `opsctl triage rack07` names (docs/triage.md): three faults, and two parts offered only as
# alternatives to a link (a connector that would explain the same one link).
SUSPECTS = [
    {"component": "rack07/ct12/j2", "kind": "connector", "score": 1.0, "repair": "reseat_compute_tray",
     "links": ["rack07/ct12/gpu0/nvl02", "rack07/ct12/gpu1/nvl02", "rack07/ct12/gpu2/nvl02"]},
    {"component": "rack07/ct07/gpu0/nvl13", "kind": "link", "score": 0.97, "links": ["rack07/ct07/gpu0/nvl13"]},
    {"component": "rack07/ct05/gpu1/nvl07", "kind": "link", "score": 0.97, "links": ["rack07/ct05/gpu1/nvl07"]},
    {"component": "rack07/ct07/j1", "kind": "connector", "score": 0.02, "alternative_to": "rack07/ct07/gpu0/nvl13"},
    {"component": "rack07/ct05/j0", "kind": "connector", "score": 0.02, "alternative_to": "rack07/ct05/gpu1/nvl07"},
]
FAULTS = {"rack07/ct12/j2": "connector", "rack07/ct07/gpu0/nvl13": "link", "rack07/ct05/gpu1/nvl07": "link"}


def rack07_triage(taken):
    """One rack's localize result, as `opsctl triage` records it itself."""
    return {"rack": "rack07", "model": "gb200-nvl72", "healthy": False, "taken": taken, "suspects": SUSPECTS}


def as_printed(document):
    """The same triage as its --json prints it: more fields (the trays read, the snapshot)."""
    return {**document, "trays": [{"tray": "ct01", "answered": True}], "snapshot": None}


def incidents(ledger):
    return {i["part"]: i for i in ledger.records("incidents")}


def in_service(ledger):
    set_rack("rack07", ledger, handover="2026-01-01")


def test_a_triage_recorded_twice_is_one_triage_and_one_incident_per_fault(ledger_db):
    with open_ledger(ledger_db) as ledger:
        first = record_triage({"racks": [rack07_triage("2026-02-01T10:00:00Z")]}, ledger)[0]
        again = record_triage(as_printed(rack07_triage("2026-02-01T10:00:00Z")), ledger)[0]
        assert first["new"] and not again["new"] and again["triage"] == first["triage"]
        assert [i["new"] for i in first["incidents"]] == [True, True, True]
        assert [i["new"] for i in again["incidents"]] == [False, False, False]
        assert len(ledger.records("triages")) == 1
        # Every fault the triage names, each as its own kind; alternatives are not faults.
        assert {part: i["kind"] for part, i in incidents(ledger).items()} == FAULTS
        assert first["part"] == "rack07/ct12/j2" and first["action"] == "reseat_compute_tray"


def test_a_fault_triaged_again_while_open_is_the_same_incident_and_after_its_repair_a_new_one(ledger_db):
    with open_ledger(ledger_db) as ledger:
        in_service(ledger)
        record_triage(rack07_triage("2026-02-01T10:00:00Z"), ledger)
        keys = {part: i["key"] for part, i in incidents(ledger).items()}
        for taken in ("2026-02-01T11:00:00Z", "2026-02-01T12:00:00Z", "2026-02-02T09:00:00Z"):
            later = record_triage(rack07_triage(taken), ledger)[0]
            assert later["new"] and not any(i["new"] for i in later["incidents"])
            assert {i["part"]: i["key"] for i in later["incidents"]} == keys
        assert len(ledger.records("triages")) == 4 and len(ledger.records("incidents")) == 3
        # An older triage recorded late: the same episode, which began then.
        record_triage(rack07_triage("2026-02-01T09:00:00Z"), ledger)
        assert {i["occurred_at"] for i in incidents(ledger).values()} == {"2026-02-01T09:00:00Z"}
        stats = fleet_statistics(ledger, until="2026-02-10")
        assert stats["failures"] == {"total": 3, "by_kind": {"connector": 1, "link": 2}}

        # The connector's tray is reseated and back in service; the fault is seen again: a new episode.
        open_repair("rack07/ct12", ledger, action="reseat_compute_tray", by="ana", at="2026-02-03T08:00Z")
        close_repair("rack07/ct12", ledger, by="ana", at="2026-02-03T10:00Z")
        again = record_triage(rack07_triage("2026-02-05T10:00:00Z"), ledger)[0]
        assert [(i["part"], i["new"]) for i in again["incidents"]] == [
            ("rack07/ct12/j2", True), ("rack07/ct07/gpu0/nvl13", False), ("rack07/ct05/gpu1/nvl07", False)]
        assert len(ledger.records("incidents")) == 4


def test_a_failure_said_by_hand_while_the_part_is_open_is_not_a_second_one(ledger_db):
    with open_ledger(ledger_db) as ledger:
        first = record_incident("rack07/ct03/gpu1", ledger, at="2026-02-01T10:00Z", note="XID 79")
        again = record_incident("rack07/ct03/gpu1", ledger, at="2026-02-01T12:00Z", note="XID 79 again")
        assert first["new"] and not again["new"] and again["key"] == first["key"]
        other = record_incident("rack07/ct03/gpu2", ledger, at="2026-02-01T12:00Z")
        assert other["new"] and len(ledger.records("incidents")) == 2


@pytest.mark.parametrize("repaired, triaged", [
    ("rack07/ct12", "rack07/ct12/j2"),           # the tray that holds the connector
    ("rack07/st3", "rack07/st3/sw1"),            # the switch tray that holds the chip
    ("rack07/ct07", "rack07/ct07/gpu0/nvl13"),   # the tray of the link's GPU
    ("rack07/ct07/gpu0", "rack07/ct07/gpu0/nvl13"),
    ("rack07/st3/sw1", "rack07/st3"),            # a chip of the tray triage named
])
@pytest.mark.slow
def test_a_repair_of_a_part_that_holds_or_is_held_by_the_fault_claims_it(ledger_db, repaired, triaged):
    with open_ledger(ledger_db) as ledger:
        record_triage({"rack": "rack07", "healthy": False, "suspects": [{"component": triaged}]}, ledger,
                      at="2026-02-01T10:00Z")
        [incident] = ledger.records("incidents")
        repair = open_repair(repaired, ledger, by="ana", at="2026-02-01T11:00Z")
        assert repair["incident_key"] == incident["key"] and not repair["incident_opened"]
        assert repair["incident"]["part"] == triaged
        assert len(ledger.records("incidents")) == 1


def test_a_repair_of_an_unrelated_part_opens_its_own_incident_and_leaves_the_others_alone(ledger_db):
    with open_ledger(ledger_db) as ledger:
        in_service(ledger)
        record_triage(rack07_triage("2026-02-01T10:00:00Z"), ledger)
        before = incidents(ledger)
        repair = open_repair("rack07/st3", ledger, action="replace_switch_tray", by="ana", at="2026-02-01T11:00Z")
        assert repair["incident_opened"] and repair["incident"]["part"] == "rack07/st3"
        close_repair("rack07/st3", ledger, by="ana", at="2026-02-01T15:00Z")
        after = incidents(ledger)
        assert {part: after[part] for part in before} == before  # untouched
        assert after["rack07/st3"]["kind"] == "switch_tray" and after["rack07/st3"]["origin"] == "repair"
        claimed = {r["incident_key"] for r in ledger.records("repairs")}
        assert claimed == {after["rack07/st3"]["key"]}
        stats = fleet_statistics(ledger, until="2026-02-10")
        assert stats["failures"] == {"total": 4, "by_kind": {"connector": 1, "link": 2, "switch_tray": 1}}
        # Told outright to claim another part's incident, it refuses rather than relabel it.
        with pytest.raises(InputError, match="which neither holds rack07/st2 nor is held by it"):
            open_repair("rack07/st2", ledger, action="replace_switch_tray", by="ana",
                        incident=before["rack07/ct12/j2"]["key"])
        # Of two open faults under one tray, the repair of the tray takes the one that is its own part's first.
        own = record_incident("rack07/ct05", ledger, at="2026-02-01T09:00Z")
        assert open_repair("rack07/ct05", ledger, by="bo", at="2026-02-02")["incident_key"] == own["key"]
        link = before["rack07/ct05/gpu1/nvl07"]["key"]
        gpu = open_repair("rack07/ct05/gpu1", ledger, action="reset_gpu", by="bo", at="2026-02-02")
        assert gpu["incident_key"] == link


def test_the_commands_say_what_is_already_in_the_ledger(opsctl, tmp_path):
    db = ("--db", f"sqlite:///{tmp_path / 'l.sqlite'}")
    (tmp_path / "triage.json").write_text(json.dumps(as_printed(rack07_triage("2026-02-01T10:00:00Z"))))
    first = opsctl("ledger", "record-triage", tmp_path / "triage.json", *db)
    assert first.code == 0, first.err
    assert "rack07/ct12/j2 (connector): new incident inc-" in first.out and "(recorded)" in first.out
    again = opsctl("ledger", "record-triage", tmp_path / "triage.json", *db)
    assert "this triage was already in the ledger" in again.out
    assert again.out.count("still open, incident inc-") == 3 and "not counted again" in again.out
    repair = opsctl("repair", "open", "rack07/st3", "--action", "replace_switch_tray", *db)
    assert repair.code == 0, repair.err
    assert "no open incident of rack07/st3 or of a part it holds or that holds it, so it opens incident" in repair.out
    tray = opsctl("repair", "open", "rack07/ct12", "--action", "reseat_compute_tray", *db)
    assert "it repairs incident inc-" in tray.out and "rack07/ct12/j2 (connector)" in tray.out
    by_hand = opsctl("ledger", "incident", "rack07/ct07/gpu0/nvl13", *db)
    assert "already has an open incident" in by_hand.out and "not counted again" in by_hand.out
    other = opsctl("ledger", "incident", "rack07/st2", "--json", *db).json()
    assert other["new"] is True
    exported = opsctl("ledger", "export", *db).json()
    link = next(i["key"] for i in exported["incidents"] if i["part"] == "rack07/ct05/gpu1/nvl07")
    assert_one_line_error(opsctl("repair", "open", "rack07/st2", "--incident", link, *db), 2,
                          f"--incident {link} is a fault of rack07/ct05/gpu1/nvl07", "--incident new")
