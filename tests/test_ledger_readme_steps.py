"""The README's ledger steps, on the built-in rack07 and a fresh ledger: triage (which records
itself), record-triage of its --json, triage again, a repair of another part. Each of rack07's
faults is counted exactly once, as its own kind."""

from datetime import datetime, timedelta

import pytest

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test


def test_the_readme_steps_count_each_of_rack07s_faults_once_as_its_own_kind(opsctl, tmp_path):
    db = ("--db", f"sqlite:///{tmp_path / 'ledger.sqlite'}")

    # rack07's flapping link drops once every 15 s: a window of 16 s sees a drop wherever it falls,
    # so both triages name the same faults however slowly a loaded machine starts the trays.
    first = opsctl("triage", "rack07", "--window", "16", "--json", *db)
    assert first.code == 1, first.err
    assert "recorded in the ledger" in first.err and first.err.count("new incident inc-") >= 2
    (tmp_path / "triage.json").write_text(first.out)
    triage = first.json()
    faults = {s["component"]: s["kind"] for s in triage["suspects"] if not s.get("alternative_to")}
    assert len(faults) >= 2 and "rack07/st3" not in faults  # rack07's seeded faults; st3 is not one
    taken = datetime.fromisoformat(triage["taken"].replace("Z", "+00:00"))
    window = ("--until", (taken + timedelta(days=1)).isoformat())
    assert opsctl("ledger", "rack", "rack07", "--handover", (taken - timedelta(days=30)).isoformat(), *db).code == 0

    # Recording it by hand as well adds nothing.
    again = opsctl("ledger", "record-triage", tmp_path / "triage.json", *db)
    assert again.code == 0, again.err
    assert "this triage was already in the ledger" in again.out and again.out.count("not counted again") == len(faults)

    # Triaged again while nothing is repaired: the same faults, still open, not counted again.
    second = opsctl("triage", "rack07", "--window", "16", "--json", *db)
    assert second.code == 1, second.err
    assert {s["component"] for s in second.json()["suspects"] if not s.get("alternative_to")} == set(faults)
    assert second.err.count("not counted again") == len(faults) and "new incident" not in second.err

    # The README's repair is of another part: its own incident; the connector's stays a connector.
    repair = opsctl("repair", "open", "rack07/st3", "--action", "replace_switch_tray", "--details",
                    "XID 149 on 40 links", "--json", *db)
    assert repair.code == 0, repair.err
    assert repair.json()["incident_opened"] and repair.json()["incident"]["part"] == "rack07/st3"
    closed = opsctl("repair", "close", "rack07/st3", "--replaced", "switch tray SN-ST-1182", "--rma", "RMA-20931", *db)
    assert closed.code == 0, closed.err

    exported = opsctl("ledger", "export", *db).json()
    assert sorted((i["part"], i["kind"]) for i in exported["incidents"]) == sorted(
        [*faults.items(), ("rack07/st3", "switch_tray")])  # each fault once, as the part it is
    assert len(exported["triages"]) == 2
    expected = {}
    for kind in [*faults.values(), "switch_tray"]:
        expected[kind] = expected.get(kind, 0) + 1
    stats = opsctl("ledger", "stats", *window, "--json", *db).json()
    assert stats["failures"] == {"total": len(faults) + 1, "by_kind": dict(sorted(expected.items()))}
    assert stats["mttr"]["by_action"]["replace_switch_tray"]["repairs"] == 1
