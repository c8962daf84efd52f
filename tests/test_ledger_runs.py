"""A burn-in is one row of the ledger however often it is stopped, resumed or judged again, and
one run is never resumed twice at once: the second `--resume` is refused (exit 2, one line)
while the first holds the run folder's lock — which the kernel drops when that process dies,
SIGKILL included."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from opsctl.ledger import open_ledger
from opsctl.runs import RunDirectory
from tests.conftest import REPO, assert_one_line_error

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test


def runs(url):
    with open_ledger(url) as ledger:
        return ledger.records("runs")


def journal(run):
    path = run / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def started_runs(run):
    return sum(1 for entry in journal(run) if entry["event"] == "run_started")


def start(*args):
    """`opsctl ARGS…` as its own process group (opsctl and the probes it starts)."""
    return subprocess.Popen([sys.executable, "-m", "opsctl", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True)


def wait_for(condition, process, what, timeout=120):
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"opsctl ended before {what}: {process.communicate()}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.1)


def kill(process):
    os.killpg(process.pid, signal.SIGKILL)  # opsctl and its probe: nothing gets to tidy up
    process.communicate()
    assert process.returncode == -signal.SIGKILL


def test_a_run_resumed_after_it_finished_is_still_one_row(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    run = tmp_path / "run"
    assert opsctl("burnin", "hgx01", "--duration", "1", "--out", run, "--db", url).code == 0
    [row] = runs(url)
    for _ in range(2):  # judged again each time: a later time, the same verdict
        resumed = opsctl("burnin", "--resume", run, "--db", url)
        assert resumed.code == 0, resumed.err
        assert "(already in the ledger)" in resumed.err
    assert opsctl("ledger", "record-burnin", run, "--db", url).code == 0  # and by hand: the same run
    assert runs(url) == [row]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["run_id"] == json.loads((run / "run.json").read_text())["run_id"]


SHORT_CRITERIA = """criteria: ledger-test
version: "1"
probes: [gemm, membw, nvlink, counters]
duration_s: 1
run_timeout_s: 120
"""


def test_an_acceptance_records_itself_once_and_recording_it_again_adds_nothing(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    (tmp_path / "criteria.yaml").write_text(SHORT_CRITERIA)
    run = tmp_path / "accept"
    accepted = opsctl("accept", "hgx01", "--criteria", tmp_path / "criteria.yaml", "--out", run, "--db", url)
    assert accepted.code == 0, accepted.err
    assert "hgx01 accept" in accepted.err and "in service since" in accepted.err and "(recorded)" in accepted.err
    [row] = runs(url)
    again = opsctl("ledger", "record-burnin", run, "--kind", "accept", "--db", url)  # the README's old step
    assert again.code == 0 and "(already in the ledger)" in again.out
    assert runs(url) == [row]
    with open_ledger(url) as ledger:
        assert ledger.records("racks")[0]["handover_at"] == row["finished_at"]


def test_a_run_stopped_with_ctrl_c_and_resumed_is_one_row_of_its_last_verdict(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    run = tmp_path / "run"
    process = start("burnin", "hgx01", "--duration", "4", "--out", run, "--db", url)
    wait_for(lambda: any(e["event"] == "tray_started" for e in journal(run)), process, "started a tray")
    time.sleep(1.0)
    os.kill(process.pid, signal.SIGINT)  # Ctrl-C: the probe has its own session, opsctl stops it
    _, err = process.communicate(timeout=120)
    assert process.returncode == 3, err
    assert [r["verdict"] for r in runs(url)] == ["incomplete"]
    resumed = opsctl("burnin", "--resume", run, "--db", url)
    assert resumed.code == 0, resumed.err
    assert "the run's row updated: the same run, judged again" in resumed.err
    [row] = runs(url)
    assert row["verdict"] == "pass"  # the run's last word, not a failed run and a passed one


def test_a_second_resume_of_a_run_being_run_is_refused(opsctl, tmp_path):
    run = tmp_path / "run"
    first = start("burnin", "hgx01", "--duration", "60", "--out", run, "--no-ledger")
    try:
        wait_for(lambda: started_runs(run) == 1, first, "started the run")
        # The run is still being made: no --resume may run its trays beside it.
        line = assert_one_line_error(opsctl("burnin", "--resume", run, "--no-ledger"), 2,
                                     f"run {run} is already being run by another opsctl (pid {first.pid})")
        assert "Traceback" not in line
    finally:
        kill(first)
    # Killed outright, it holds nothing: a resume takes the run, and a second one is refused.
    resumed = start("burnin", "--resume", run, "--no-ledger")
    try:
        wait_for(lambda: started_runs(run) == 2, resumed, "resumed the run")
        refused = opsctl("burnin", "--resume", run, "--no-ledger")
        assert_one_line_error(refused, 2, "already being run by another opsctl", f"(pid {resumed.pid})", "wait for it")
        assert started_runs(run) == 2  # the refused one ran nothing
    finally:
        kill(resumed)
    RunDirectory.open(run).lock().release()  # and SIGKILL left the run free
