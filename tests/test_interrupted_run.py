"""A run stopped with Ctrl-C after some trays reported is incomplete everywhere it is recorded —
exit 3, summary.json and the ledger — even when a tray that reported found a fault; a resume
then runs the trays left and the run's one ledger row takes its final verdict (README, Exit codes).

Its own burn-in: the shared rack07 run finishes whole, and an interruption needs a run that is
stopped after one tray of several has reported (one tray at a time, the counters probe only).
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from opsctl.ledger import open_ledger
from tests.conftest import REPO


SCENARIO = """scenario: interrupted
description: one pending row remap on the first compute tray, which reports first
seed: 1
rack: rack07
faults:
  - kind: row_remap
    gpu: ct01/gpu1
    corrected_rows: 0
    uncorrected_rows: 1
    pending: true
"""
INVENTORY = """all:
  children:
    rack07:
      vars:
        opsctl_model: gb200-nvl72
        opsctl_transport: local
        opsctl_backend: sim
        opsctl_scenario: interrupted.yaml
      hosts:
        rack07-ct[01:18]:
        rack07-st[1:9]:
"""


def journal(run):
    path = run / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow  # a simulated NVL72 burn-in, stopped and resumed
def test_ctrl_c_after_a_tray_reported_a_fault_is_incomplete_everywhere_and_a_resume_completes_it(opsctl, tmp_path):
    (tmp_path / "interrupted.yaml").write_text(SCENARIO)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(INVENTORY)
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    run = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "opsctl", "-i", str(inventory), "burnin", "rack07", "--probes", "counters",
         "--duration", "1", "--concurrency", "1", "--out", str(run), "--db", url, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True)
    deadline = time.monotonic() + 120
    while not any(e["event"] == "tray_finished" for e in journal(run)):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no tray reported"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGINT)  # Ctrl-C, with ct01 reported (and failed) and ct02 under way
    out, err = process.communicate(timeout=120)
    assert process.returncode == 3, err
    assert "Traceback" not in err
    summary = json.loads((run / "summary.json").read_text())
    assert json.loads(out)["run_id"] == summary["run_id"]
    assert (summary["verdict"], summary["exit_code"], summary["interrupted"]) == ("INCOMPLETE", 3, True)
    assert summary["verdict_before_interruption"] == "FAIL"  # what ct01 found is kept, not the verdict
    assert "rack07/ct01/gpu1" in summary["failing_parts"]
    finished = [e for e in journal(run) if e["event"] == "tray_finished"]
    assert finished[0]["tray"] == "ct01" and finished[0]["status"] == "complete"
    assert sum(e["status"] == "complete" for e in finished) < 27 and any(e["interrupted"] for e in finished)
    assert journal(run)[-1] == {**journal(run)[-1], "event": "run_judged",
                                                       "verdict": "INCOMPLETE", "interrupted": True}
    with open_ledger(url) as ledger:
        [row] = ledger.records("runs")
    assert row["verdict"] == "incomplete"  # not fail: the run never saw most of the rack
    # Judged again before it is resumed, it is still the interrupted run it was.
    again = opsctl("report", run, "--db", url, "--json")
    assert again.code == 3, again.err
    assert (again.json()["verdict"], again.json()["interrupted"]) == ("INCOMPLETE", True)
    with open_ledger(url) as ledger:
        assert [r["verdict"] for r in ledger.records("runs")] == ["incomplete"]

    resumed = opsctl("-i", inventory, "burnin", "--resume", run, "--concurrency", "32", "--db", url, "--json")
    assert resumed.code == 1, resumed.err  # the whole rack seen: ct01's GPU fails it
    final = resumed.json()
    assert (final["verdict"], final["exit_code"], final["interrupted"]) == ("FAIL", 1, False)
    assert "verdict_before_interruption" not in final and final["run_id"] == summary["run_id"]
    assert "the run's row updated" in resumed.err
    with open_ledger(url) as ledger:
        [row] = ledger.records("runs")
    assert row["verdict"] == "fail" and "rack07/ct01/gpu1" in [p["part"] for p in row["failing_parts"]]
    assert json.loads((run / "run.json").read_text())["plan"]["concurrency"] == 1  # run.json keeps what it started with


def test_an_interrupted_summary_recorded_by_hand_is_incomplete(opsctl, tmp_path):
    """An older summary.json that says `interrupted: true` beside a FAIL verdict is recorded as
    incomplete too (summaries written before the verdict said so)."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    document = {"format": "opsctl-burnin/1", "kind": "burnin", "rack": "hgx01", "verdict": "FAIL", "exit_code": 1,
                "interrupted": True, "run_id": "r-1", "finished": "2026-01-02T03:04:05Z",
                "failing_parts": ["hgx01/gpu3"]}
    (tmp_path / "summary.json").write_text(json.dumps(document))
    result = opsctl("ledger", "record-burnin", tmp_path / "summary.json", "--db", url)
    assert result.code == 0, result.err
    with open_ledger(url) as ledger:
        [row] = ledger.records("runs")
    assert row["verdict"] == "incomplete" and [p["part"] for p in row["failing_parts"]] == ["hgx01/gpu3"]
