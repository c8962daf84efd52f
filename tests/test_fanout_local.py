"""The fan-out's local transport on the simulator: the concurrency limit, the run timeout, and a
simulated tray that is unreachable ending like a host that refused the connection."""

import os
import threading
import time
from pathlib import Path

import pytest

from opsctl.fanout import FanoutOptions, run_on_trays
from opsctl.inventory import load_inventory

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test

RACK07 = load_inventory().rack("rack07")


def test_no_more_trays_work_at_once_than_the_limit(tmp_path):
    running, most, lock = set(), [0], threading.Lock()

    def started(tray):
        with lock:
            running.add(tray.name)
            most[0] = max(most[0], len(running))

    def finished(result):
        with lock:
            running.discard(result.tray)

    trays = ["ct01", "ct02", "ct03", "ct04", "ct05", "st1"]
    results = run_on_trays(RACK07, ["snapshot", "--window", "0.5", "--json"], trays=trays, workdir=tmp_path,
                           options=FanoutOptions(concurrency=2), on_start=started, on_result=finished)
    assert most[0] == 2
    assert [r.tray for r in results] == trays and all(r.status == "complete" and r.exit_code == 0 for r in results)
    ct05 = results[4].document
    assert ct05["kind"] == "snapshot" and ct05["tray"] == "ct05" and len(ct05["links"]) == 72
    assert results[5].document["links"][0]["side"] == "switch"
    # The local transport hands the simulator its spec as a file in the run's folder.
    assert (tmp_path / "sim-spec.json").stat().st_size > 10_000


def _processes_mentioning(text):
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_probe_past_its_run_timeout_is_stopped_and_incomplete(tmp_path):
    started = time.monotonic()
    [result] = run_on_trays(RACK07, ["run", "--duration", "120", "--json"], trays=["ct01"], workdir=tmp_path,
                            options=FanoutOptions(run_timeout_s=3))
    assert time.monotonic() - started < 30
    assert result.status == "incomplete" and result.exit_code is None
    assert "ran past its 3 s run timeout and was stopped" in result.reason
    assert _processes_mentioning(str(tmp_path)) == []  # the probe is gone, not orphaned


def test_a_simulated_unreachable_tray_is_incomplete_like_a_refused_host(tmp_path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("seed: 1\nfaults:\n  - {kind: tray_unreachable, tray: ct02}\n")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("r7:\n  vars: {opsctl_model: gb200-nvl72, opsctl_transport: local, opsctl_backend: sim, "
                         f"opsctl_scenario: {scenario}}}\n  hosts:\n    r7-ct01:\n    r7-ct02:\n")
    rack = load_inventory(inventory).rack("r7")
    ok, down = run_on_trays(rack, ["snapshot", "--window", "0.2", "--json"], workdir=tmp_path)
    assert ok.status == "complete"
    assert down.status == "incomplete" and down.exit_code == 3 and down.document is None and down.stdout == b""
    assert "unreachable" in down.reason
    assert os.path.exists(tmp_path / "sim-spec.json")
