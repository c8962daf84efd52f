"""The ledger never silently drops or doubles (issue 28): a record whose key is there with other
content is refused naming both, one repair closed at two times is never two repairs, impossible
values are refused, and a database error is one line naming the ledger — on SQLite and on
PostgreSQL, as the other ledger tests run."""

import json
import resource
import signal
import subprocess
import sys

from opsctl.ledger import open_ledger
from tests.conftest import REPO, assert_one_line_error

RUN = {"key": "run-aaaa", "rack": "rack07", "kind": "burnin", "finished_at": "2026-03-01T10:00:00Z", "verdict": "pass"}
REPAIR = {"part": "rack07/ct03", "action": "replace_compute_tray", "opened_by": "ana", "opened_at": "2026-03-02T08:00:00Z"}


def write(path, **tables):
    path.write_text(json.dumps({"format": "opsctl-ledger/1", **tables}))
    return path


def rows(url, table):
    with open_ledger(url) as ledger:
        return ledger.records(table)


def test_a_run_whose_key_is_there_with_another_verdict_is_refused_naming_both(opsctl, tmp_path, ledger_db):
    assert opsctl("ledger", "import", write(tmp_path / "a.json", runs=[RUN]), "--db", ledger_db).code == 0
    [before] = rows(ledger_db, "runs")
    failed = write(tmp_path / "b.json", runs=[{**RUN, "verdict": "fail"}])
    line = assert_one_line_error(opsctl("ledger", "import", failed, "--db", ledger_db), 2,
                                 str(failed), "runs record run-aaaa", "verdict is 'pass' there, 'fail' here")
    assert "already there" not in line
    assert rows(ledger_db, "runs") == [before]  # nothing dropped silently, nothing changed
    again = opsctl("ledger", "import", tmp_path / "a.json", "--db", ledger_db)  # the same content: nothing to say
    assert again.code == 0 and "already there" in again.out


def test_one_repair_with_two_close_times_is_refused_not_two_rows(opsctl, tmp_path, ledger_db):
    closed = {**REPAIR, "closed_by": "ana", "closed_at": "2026-03-02T10:00:00Z"}
    twice = write(tmp_path / "twice.json", repairs=[closed, {**closed, "closed_at": "2026-03-02T11:00:00Z"}])
    assert_one_line_error(opsctl("ledger", "import", twice, "--db", ledger_db), 2, str(twice), "repairs[1]",
                          "closed_at is '2026-03-02T10:00:00Z' there, '2026-03-02T11:00:00Z' here")
    assert rows(ledger_db, "repairs") == []
    # One at a time, in two imports: the second is refused too, and the ledger keeps one repair.
    assert opsctl("ledger", "import", write(tmp_path / "one.json", repairs=[closed]), "--db", ledger_db).code == 0
    other = write(tmp_path / "other.json", repairs=[{**closed, "closed_at": "2026-03-02T11:00:00Z"}])
    assert_one_line_error(opsctl("ledger", "import", other, "--db", ledger_db), 2, "closed_at")
    assert len(rows(ledger_db, "repairs")) == 1


def test_an_open_repair_exported_then_imported_closed_is_the_same_repair_closed(opsctl, tmp_path, ledger_db):
    assert opsctl("ledger", "import", write(tmp_path / "open.json", repairs=[REPAIR]), "--db", ledger_db).code == 0
    closed = {**REPAIR, "closed_by": "ana", "closed_at": "2026-03-02T10:00:00Z"}
    assert opsctl("ledger", "import", write(tmp_path / "closed.json", repairs=[closed]), "--db", ledger_db).code == 0
    [repair] = rows(ledger_db, "repairs")
    assert repair["closed_at"] == "2026-03-02T10:00:00Z"


def test_impossible_values_are_refused(opsctl, tmp_path, ledger_db):
    cases = [
        ({**REPAIR, "closed_at": "2026-03-02T10:00:00Z", "back_in_service_at": "2026-03-02T09:00:00Z"},
         "field back_in_service_at: 2026-03-02T09:00:00Z is before closed_at 2026-03-02T10:00:00Z"),
        ({**REPAIR, "closed_at": "2026-03-01T10:00:00Z"}, "field closed_at: 2026-03-01T10:00:00Z is before opened_at"),
        ({**REPAIR, "back_in_service_at": "2026-03-02T09:00:00Z"}, "the repair is not closed"),
        ({**REPAIR, "gpus_idled": 999_999_999}, "field gpus_idled: 999,999,999, but rack rack07 has 72 GPUs"),
    ]
    for number, (repair, message) in enumerate(cases):
        path = write(tmp_path / f"bad{number}.json", repairs=[repair])
        assert_one_line_error(opsctl("ledger", "import", path, "--db", ledger_db), 2, str(path), message)
    racks = write(tmp_path / "racks.json", racks=[{"rack": "rack07", "handover_at": "2026-03-02T00:00:00Z",
                                                   "retired_at": "2026-03-01T00:00:00Z"}])
    assert_one_line_error(opsctl("ledger", "import", racks, "--db", ledger_db), 2, "retired_at")
    drains = write(tmp_path / "drains.json", drains=[{"node": "rack07-ct03", "part": "rack07/ct03", "action": "reboot",
                                                      "reason": "opsctl: x", "drained_at": "2026-03-02T00:00:00Z",
                                                      "drained_by": "ana", "resumed_at": "2026-03-01T00:00:00Z"}])
    assert_one_line_error(opsctl("ledger", "import", drains, "--db", ledger_db), 2, "resumed_at")
    assert rows(ledger_db, "repairs") == [] and rows(ledger_db, "drains") == []
    # By hand too: back in service before the repair was closed.
    assert opsctl("repair", "open", "rack07/ct05", "--by", "ana", "--at", "2026-03-02T08:00Z", "--db", ledger_db).code == 0
    assert_one_line_error(opsctl("repair", "close", "rack07/ct05", "--by", "ana", "--at", "2026-03-02T10:00Z",
                                 "--back-in-service", "2026-03-02T09:00Z", "--db", ledger_db), 2,
                          "--back-in-service 2026-03-02T09:00:00Z is before the repair was closed")


def test_two_open_repairs_of_one_part_in_one_import_are_refused_by_name(opsctl, tmp_path, ledger_db):
    path = write(tmp_path / "open.json", repairs=[REPAIR, {**REPAIR, "opened_at": "2026-03-02T09:00:00Z"}])
    line = assert_one_line_error(opsctl("ledger", "import", path, "--db", ledger_db), 2, str(path), "repairs[1]",
                                 "a second open repair of rack07/ct03")
    assert "internal error" not in line and "Traceback" not in line
    assert rows(ledger_db, "repairs") == [] and rows(ledger_db, "incidents") == []


def test_a_lone_surrogate_in_a_note_is_refused_naming_the_file(opsctl, tmp_path, ledger_db):
    path = tmp_path / "note.json"
    path.write_text('{"format": "opsctl-ledger/1", "incidents": [{"part": "rack07/ct03", '
                    '"occurred_at": "2026-03-02T08:00:00Z", "note": "reseated \\udc80"}]}')
    assert_one_line_error(opsctl("ledger", "import", path, "--db", ledger_db), 2, str(path), "field note",
                          "'\\udc80'", "surrogates not allowed")
    line = assert_one_line_error(opsctl("ledger", "incident", "rack07/ct03", "--note", "bad \udc80", "--db", ledger_db),
                                 2, "cannot store text with '\\udc80'")
    assert "internal error" not in line
    assert rows(ledger_db, "incidents") == []


def test_an_explicit_model_is_never_overridden_without_a_word(opsctl, tmp_path, ledger_db):
    path = write(tmp_path / "racks.json", racks=[{"rack": "rack07", "model": "hgx-h100"}])
    assert_one_line_error(opsctl("ledger", "import", path, "--db", ledger_db), 2, str(path),
                          "field model: 'hgx-h100', but rack rack07 is a gb200-nvl72 in the inventory")
    assert rows(ledger_db, "racks") == []
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"format": "opsctl-burnin/1", "kind": "burnin", "rack": "rack07", "model": "hgx-h100",
                                   "run_id": "r1", "finished": "2026-03-01T10:00:00Z", "verdict": "PASS"}))
    assert_one_line_error(opsctl("ledger", "record-burnin", summary, "--db", ledger_db), 2,
                          "rack rack07 is a gb200-nvl72 in the inventory, not hgx-h100")
    assert opsctl("ledger", "rack", "hgx99", "--model", "hgx-h200", "--db", ledger_db).code == 0
    summary.write_text(json.dumps({"format": "opsctl-burnin/1", "kind": "burnin", "rack": "hgx99", "model": "hgx-h100",
                                   "run_id": "r2", "finished": "2026-03-01T10:00:00Z", "verdict": "PASS"}))
    assert_one_line_error(opsctl("ledger", "record-burnin", summary, "--db", ledger_db), 2,
                          "rack hgx99 is recorded as hgx-h200, not hgx-h100")
    assert rows(ledger_db, "runs") == []


def test_a_full_disk_under_the_ledger_is_one_line_naming_it(opsctl, tmp_path):
    """The write fails as a full disk fails it: the import runs under a file-size limit below the
    ledger's size (SQLite only: the PostgreSQL server's disk is not ours to fill)."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    assert opsctl("ledger", "rack", "rack07", "--db", url).code == 0
    big = write(tmp_path / "big.json", incidents=[{"part": f"rack07/ct{n % 18 + 1:02d}", "note": "x" * 2000,
                                                   "occurred_at": f"2026-03-02T08:{n // 60 % 60:02d}:{n % 60:02d}Z"}
                                                  for n in range(400)])

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))

    result = subprocess.run([sys.executable, "-m", "opsctl", "ledger", "import", str(big), "--db", url],
                            capture_output=True, text=True, timeout=300, cwd=REPO, preexec_fn=limit)
    assert result.returncode == 3, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"opsctl: the ledger {tmp_path / 'ledger.sqlite'}: ") and "nothing was written" in line
    assert "internal error" not in line
    assert rows(url, "incidents") == [] and [r["rack"] for r in rows(url, "racks")] == ["rack07"]
    # A disk with no room at all, under a new ledger: it cannot even be opened, and says so.
    fresh = tmp_path / "fresh.sqlite"

    def no_room():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    result = subprocess.run([sys.executable, "-m", "opsctl", "ledger", "rack", "rack07", "--db", str(fresh)],
                            capture_output=True, text=True, timeout=300, cwd=REPO, preexec_fn=no_room)
    assert result.returncode == 3, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"opsctl: cannot open the ledger {fresh}: ") and "internal error" not in line
