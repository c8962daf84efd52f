"""The ledger's statements take named parameters (`:name`) on both backends: SQLite binds them
itself, PostgreSQL gets them compiled by SQLAlchemy for psycopg. What a string rewrite of `?`
got wrong: a `?` or a `%` inside the SQL's own literals, and a value that looks like SQL."""

import subprocess
import sys

from opsctl.ledger.store import Ledger, open_ledger

ODD = "50% of links? see :rack and %(rack)s; it's 'quoted'"


def _incident(key, note):
    return {"key": key, "rack": "r1", "occurred_at": "2026-01-01T00:00:00Z", "part": "r1/ct01/gpu0", "kind": "gpu",
            "origin": "triage", "triage_key": None, "note": note, "recorded_at": "2026-01-01T00:00:00Z"}


def test_named_parameters_and_literal_question_marks_and_percents_on_both_backends(ledger_db):
    with open_ledger(ledger_db) as ledger:
        with ledger.write() as tx:
            Ledger.insert(tx, "racks", {"rack": "r1", "model": "hgx-h100", "gpus": 8, "recorded_at": "2026-01-01T00:00:00Z"})
            assert Ledger.insert(tx, "incidents", _incident("inc-1", ODD))
            assert Ledger.insert(tx, "incidents", _incident("inc-2", "plain"))
            assert not Ledger.insert(tx, "incidents", _incident("inc-1", "again"))  # the same key adds nothing
        with ledger.read() as tx:
            # A literal '%' and '?' in the SQL itself, beside a named parameter used twice.
            found = tx.rows("SELECT key, note FROM incidents WHERE note LIKE '50%?%' AND (rack = :rack OR part = :rack)",
                            {"rack": "r1"})
        assert found == [{"key": "inc-1", "note": ODD}]
        with ledger.write() as tx:
            Ledger.update(tx, "incidents", "inc-2", {"note": ODD, "kind": "link"})
        updated = ledger.records("incidents", "key = :key", {"key": "inc-2"})
        assert [(r["note"], r["kind"]) for r in updated] == [(ODD, "link")]
        assert [r["key"] for r in ledger.records("incidents", "note = :note", {"note": ODD})] == ["inc-1", "inc-2"]


def test_opsctl_help_loads_none_of_the_libraries_the_ledger_and_report_load_when_used():
    """scipy.stats, SQLAlchemy and Jinja2 are imported inside the functions that use them."""
    code = ("import contextlib, io, sys; from opsctl.cli import run\n"
            "with contextlib.redirect_stdout(io.StringIO()): code = run(['--help'])\n"
            "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'sqlalchemy', 'jinja2'}))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "0 []"
