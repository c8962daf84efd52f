"""One burn-in or acceptance of a rack at a time (README, Exit codes): on a machine, a second one
is refused in one line (exit 2) naming the run that holds the rack, before it makes a run folder
(`--force` runs beside it); and the ledger never holds two runs of one rack that overlap in time,
however they reach it (recorded by the run, by hand, or imported)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from opsctl.ledger import open_ledger, record_burnin
from opsctl.runs.run_lock import RackLock
from tests.conftest import REPO, assert_one_line_error


def journal(run):
    path = run / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow  # a burn-in held running while others try the rack, and one that runs beside it
def test_a_second_run_of_a_rack_is_refused_naming_the_first(opsctl, tmp_path):
    first_run = tmp_path / "first"
    first = subprocess.Popen([sys.executable, "-m", "opsctl", "burnin", "hgx01", "--duration", "60", "--out",
                              str(first_run), "--no-ledger"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=REPO, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not any(e["event"] == "run_started" for e in journal(first_run)):
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.1)
        held = f"rack hgx01 is held by burnin run {first_run} (pid {first.pid})"
        assert_one_line_error(opsctl("burnin", "hgx01", "--out", tmp_path / "second", "--no-ledger"), 2, held, "--force")
        assert not (tmp_path / "second").exists()  # refused before anything was made
        assert_one_line_error(opsctl("accept", "hgx01", "--duration", "1", "--out", tmp_path / "third", "--no-ledger"),
                              2, held)
        assert not (tmp_path / "third").exists()
        forced = opsctl("burnin", "hgx01", "--duration", "1", "--out", tmp_path / "forced", "--no-ledger", "--force")
        assert forced.code == 0, forced.err
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    RackLock("hgx01", "burnin").release()  # the kernel dropped the killed run's lock: the rack is free


RUN = {"format": "opsctl-burnin/1", "kind": "burnin", "rack": "rack07", "verdict": "PASS", "failing_parts": []}


def test_the_ledger_refuses_two_runs_of_a_rack_that_overlap(ledger_db, tmp_path, opsctl):
    with open_ledger(ledger_db) as ledger:
        record_burnin({**RUN, "run_id": "a", "created": "2026-03-01T10:00:00Z", "finished": "2026-03-01T11:00:00Z"},
                      ledger)
        with pytest.raises(Exception, match="overlaps burnin run run-") as refused:
            record_burnin({**RUN, "run_id": "b", "created": "2026-03-01T10:30:00Z",
                           "finished": "2026-03-01T11:30:00Z"}, ledger)
        assert refused.type.__name__ == "InputError"
        # Back to back is one at a time; another rack at the same time is another rack.
        record_burnin({**RUN, "run_id": "c", "created": "2026-03-01T11:00:00Z", "finished": "2026-03-01T12:00:00Z"},
                      ledger)
        record_burnin({**RUN, "rack": "hgx01", "run_id": "d", "created": "2026-03-01T10:30:00Z",
                       "finished": "2026-03-01T11:30:00Z"}, ledger)
        # The same run judged again (a resume) stays its one row.
        record_burnin({**RUN, "run_id": "a", "created": "2026-03-01T10:00:00Z", "finished": "2026-03-01T11:00:00Z",
                       "verdict": "FAIL"}, ledger)
        runs = ledger.records("runs")
    assert sorted((r["rack"], r["started_at"], r["verdict"]) for r in runs) == [
        ("hgx01", "2026-03-01T10:30:00Z", "pass"), ("rack07", "2026-03-01T10:00:00Z", "fail"),
        ("rack07", "2026-03-01T11:00:00Z", "pass")]
    # A summary file recorded by hand, and an import, are refused in one line naming the run there.
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({**RUN, "run_id": "e", "created": "2026-03-01T10:15:00Z",
                                   "finished": "2026-03-01T10:45:00Z"}))
    assert_one_line_error(opsctl("ledger", "record-burnin", summary, "--db", ledger_db), 2,
                          "rack rack07: this run (2026-03-01T10:15:00Z to 2026-03-01T10:45:00Z) overlaps burnin run run-")
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"format": "opsctl-ledger/1", "runs": [
        {"key": "run-x", "rack": "rack07", "kind": "accept", "verdict": "pass", "finished_at": "2026-03-01T11:20:00Z"}]}))
    assert_one_line_error(opsctl("ledger", "import", export, "--db", ledger_db), 2, str(export), "runs[0]",
                          "overlaps burnin run run-")
    export.write_text(json.dumps({"format": "opsctl-ledger/1", "runs": [
        {"key": "run-y", "rack": "rack07", "kind": "burnin", "verdict": "pass", "started_at": "2026-03-02T11:00:00Z",
         "finished_at": "2026-03-02T10:00:00Z"}]}))
    assert_one_line_error(opsctl("ledger", "import", export, "--db", ledger_db), 2, "started_at")
    with open_ledger(ledger_db) as ledger:
        assert len(ledger.records("runs")) == 3
