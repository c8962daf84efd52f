"""Export and import: a team's history comes in as JSON or CSV, whole or not at all, and a bad
record is named by file, line and field."""

import json

import pytest

from opsctl.ledger import fleet_statistics, open_ledger
from tests.conftest import assert_one_line_error
from tests.test_ledger import small_history


def _stats(url):
    with open_ledger(url) as ledger:
        stats = fleet_statistics(ledger, until="2026-01-11", infant_weeks=1)
    stats.pop("ledger")
    return stats


@pytest.mark.parametrize("fmt", ["json", "csv"])
@pytest.mark.slow
def test_export_then_import_into_the_other_database_keeps_every_figure(opsctl, memory_tmp_path, postgres_database, fmt):
    sqlite = f"sqlite:///{memory_tmp_path / 'a.sqlite'}"
    with open_ledger(sqlite) as ledger:
        small_history(ledger)
    target = memory_tmp_path / ("ledger.json" if fmt == "json" else "csv")
    assert opsctl("ledger", "export", "--format", fmt, "-o", target, "--db", sqlite).code == 0
    result = opsctl("ledger", "import", target, "--db", postgres_database, "--json")
    assert result.code == 0, result.err
    assert result.json()["imported"]["repairs"] == {"added": 2, "present": 0}
    assert _stats(postgres_database) == _stats(sqlite)
    again = opsctl("ledger", "import", target, "--db", postgres_database, "--json").json()["imported"]
    assert all(count["added"] == 0 for count in again.values())  # importing twice adds nothing


def test_a_team_history_without_keys_imports_once(opsctl, memory_tmp_path):
    db = f"sqlite:///{memory_tmp_path / 'l.sqlite'}"
    (memory_tmp_path / "racks.csv").write_text("rack,model,handover_at\nold01,hgx-h100,2025-03-01\n")
    (memory_tmp_path / "repairs.csv").write_text(
        "part,action,opened_by,opened_at,closed_at,rma_ids\n"
        "old01/gpu3,replace_baseboard,ana,2025-04-02T10:00Z,2025-04-02T12:00Z,RMA-7;RMA-8\n")
    for _ in range(2):
        assert opsctl("ledger", "import", memory_tmp_path / "racks.csv", memory_tmp_path / "repairs.csv", "--db", db).code == 0
    with open_ledger(db) as ledger:
        repairs = ledger.records("repairs")
        assert len(repairs) == 1 and repairs[0]["gpus_idled"] == 8 and repairs[0]["rma_ids"] == ["RMA-7", "RMA-8"]
        assert repairs[0]["kind"] == "gpu"  # from the HGX topology of the recorded model


BAD_CSV = [
    ("incidents", "part,occurred_at\nrack07/ct01/gpu0,2026-01-02\nrack07/ct01/gpu0,2026-13-40\n",
     "incidents.csv line 3: field occurred_at: not a time: '2026-13-40'"),
    ("incidents", "part,occurred_at\nrack07/ct01/gpu0,2026-01-02\nrack07/ct31,2026-01-03\n",
     "incidents.csv line 3: part rack07/ct31: no such component in rack07"),
    ("repairs", "part,action,opened_by,opened_at\nrack07/ct02,fix_it,ana,2026-01-02\n",
     "repairs.csv line 2: unknown repair action 'fix_it'"),
    ("repairs", "part,action,opened_by,opened_at,gpus_idled\nrack07/ct02,reset_gpu,ana,2026-01-02,-4\n",
     "repairs.csv line 2: field gpus_idled: not a whole number: '-4'"),
    ("repairs", "part,action,opened_at\nrack07/ct02,reset_gpu,2026-01-02\n", "repairs.csv line 2: field opened_by: missing"),
    ("runs", "rack,kind,finished_at,verdict,colour\n", "runs.csv line 1: unknown column(s) colour"),
]


@pytest.mark.parametrize("table, text, message", BAD_CSV)
def test_a_malformed_csv_names_the_line_and_imports_nothing(opsctl, memory_tmp_path, table, text, message):
    db = f"sqlite:///{memory_tmp_path / 'l.sqlite'}"
    path = memory_tmp_path / f"{table}.csv"
    path.write_text(text)
    good = memory_tmp_path / "racks.csv"
    good.write_text("rack,handover_at\nrack07,2026-01-01\n")
    assert_one_line_error(opsctl("ledger", "import", good, path, "--db", db), 2, message)
    with open_ledger(db) as ledger:
        assert all(records == [] for records in ledger.everything().values())


def test_a_malformed_json_record_names_its_line(opsctl, memory_tmp_path):
    db = f"sqlite:///{memory_tmp_path / 'l.sqlite'}"
    path = memory_tmp_path / "history.json"
    path.write_text('{"racks": [{"rack": "rack07", "handover_at": "2026-01-01"}],\n'
                    ' "incidents": [\n'
                    '  {"part": "rack07/ct01/gpu0", "occurred_at": "2026-01-02"},\n'
                    '  {"part": "rack07/ct01/gpu0", "occurred_at": "yesterday"}\n'
                    ' ]}\n')
    assert_one_line_error(opsctl("ledger", "import", path, "--db", db), 2,
                          "history.json line 4 (incidents[1]): field occurred_at: not a time: 'yesterday'")
    path.write_text('{"incidents": [\n  {"part": "rack07/ct01/gpu0",}\n]}\n')
    assert_one_line_error(opsctl("ledger", "import", path, "--db", db), 2, "history.json line 2: not valid JSON")
    with open_ledger(db) as ledger:
        assert ledger.records("incidents") == [] and ledger.records("racks") == []


def test_record_commands_refuse_bad_documents(opsctl, memory_tmp_path):
    db = f"sqlite:///{memory_tmp_path / 'l.sqlite'}"
    no_verdict = memory_tmp_path / "summary.json"
    no_verdict.write_text(json.dumps({"rack": "rack07", "checks": []}))
    assert_one_line_error(opsctl("ledger", "record-burnin", memory_tmp_path, "--db", db), 2, "no verdict")
    broken = memory_tmp_path / "triage.json"
    broken.write_text('{"racks": [')
    assert_one_line_error(opsctl("ledger", "record-triage", broken, "--db", db), 2, "triage.json")
    unknown = memory_tmp_path / "other.json"
    unknown.write_text(json.dumps({"rack": "rack42", "verdict": "pass"}))
    assert_one_line_error(opsctl("ledger", "record-burnin", unknown, "--db", db), 2, "rack rack42 is neither in the ledger")
