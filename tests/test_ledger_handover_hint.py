"""`opsctl ledger stats` of a rack not handed over yet: its failures count nowhere, and the
statistics say so (issue 26) rather than show a quiet 0."""


def test_a_rack_without_a_handover_date_is_named_with_its_uncounted_incidents(opsctl, tmp_path):
    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    assert opsctl("repair", "open", "rack07/ct12/j2", "--db", db).code == 0
    shown = opsctl("ledger", "stats", "--db", db)
    assert shown.code == 0, shown.err
    assert ("not counted: rack07 has no handover date yet (1 incident(s) recorded): record its acceptance, or "
            "opsctl ledger rack rack07 --handover DATE") in shown.out
    document = opsctl("ledger", "stats", "--db", db, "--json").json()
    assert document["exposure"]["not_handed_over"] == [{"rack": "rack07", "incidents": 1}]
    assert document["failures"]["total"] == 0
    assert opsctl("ledger", "rack", "rack07", "--handover", "2026-01-01T00:00:00Z", "--db", db).code == 0
    assert "not counted" not in opsctl("ledger", "stats", "--db", db).out
