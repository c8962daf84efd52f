"""`opsctl burnin` on the built-in simulated racks over the local transport: hgx01 passes, the
run folder, Ctrl-C, and bad input (one line, exit 2)."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error


@pytest.mark.slow
def test_hgx01_passes_and_its_run_folder_holds_everything(opsctl, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    result = opsctl("burnin", "hgx01", "--duration", "2", "--json")
    assert result.code == 0, result.err
    summary = result.json()
    assert summary["verdict"] == "PASS" and summary["kind"] == "burnin" and summary["model"] == "hgx-h100"
    assert summary["failing"] == {"gpus": [], "links": [], "trays": [], "other": []}
    assert len(summary["gpus"]) == 8 and len(summary["links"]) == 144
    assert all(g["verdict"] == "pass" and g["gemm_bf16_tflops"] > 700 for g in summary["gpus"])
    [run] = (tmp_path / "state" / "opsctl" / "runs").iterdir()  # the default place for runs
    assert run.name.startswith("hgx01-burnin-") and summary["run"] == str(run)
    for name in ("run.json", "journal.jsonl", "trays/hgx01.json", "sim-spec.json", "summary.json", "snapshot.json",
                 "report.html", "junit.xml"):
        assert (run / name).is_file(), name
    assert summary["by"].count("@") == 1 and summary["criteria"]["name"] == "opsctl-default"


@pytest.mark.slow
def test_ctrl_c_stops_the_probes_and_keeps_the_run(tmp_path):
    run = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-m", "opsctl", "burnin", "hgx01", "--duration", "120", "--out", run],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = run / "journal.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (journal.exists() and '"tray_started"' in journal.read_text()):
        time.sleep(0.1)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)  # what Ctrl-C sends to opsctl (the probe has its own session)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 3, err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["verdict"] == "INCOMPLETE" and summary["interrupted"] is True
    assert "interrupted" in out and f"--resume {run}" in out
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    finished = [e for e in events if e["event"] == "tray_finished"]
    assert len(finished) == 1 and finished[0]["interrupted"] is True and finished[0]["status"] == "incomplete"
    assert events[-1]["event"] == "run_judged"
    assert "Traceback" not in err
    running = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _mentions(p, str(run))]
    assert running == []  # no probe left behind


def _mentions(process, text):
    try:
        return text in (process / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def test_bad_input_is_one_line_and_exit_2(opsctl, tmp_path):
    assert_one_line_error(opsctl("burnin", "rack99"), 2, "unknown rack 'rack99'")
    assert_one_line_error(opsctl("burnin"), 2, "Missing argument 'RACK'")
    assert_one_line_error(opsctl("burnin", "hgx01", "--duration", "0"), 2, "--duration")
    assert_one_line_error(opsctl("burnin", "--resume", tmp_path / "nothing"), 2, "no run")
    assert_one_line_error(opsctl("burnin", "--resume", tmp_path, "--duration", "5"), 2, "cannot change a resumed run")
    assert_one_line_error(opsctl("burnin", "hgx01", "--run-timeout", "5", "--duration", "10"), 2, "must be longer")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "run.json").write_text('{"format": "opsctl-run/1", "kind": "accept", "rack": "hgx01", "plan": {}}')
    assert_one_line_error(opsctl("burnin", "hgx01", "--out", tmp_path / "taken"), 2, "already holds a run")
    assert_one_line_error(opsctl("burnin", "--resume", tmp_path / "taken"), 2, "run.json has no usable plan")
