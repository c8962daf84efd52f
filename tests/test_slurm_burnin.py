"""`opsctl burnin RACK --via slurm`: the compute trays' probes as one real Slurm job, one task per
tray on its node (tests/slurm_cluster.py), judged exactly as the other fan-outs are."""

import json
import sys

import pytest

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test

DURATION = "4"
# Faults a 4 s burn-in sees on every run, so the two fan-outs must name the same parts (the
# seeded rack07's link flap every 15 s and its 5% corruption show only in some short runs).
STEADY_FAULTS = """\
scenario: rack07-steady
seed: 7
rack: rack07
faults:
  - {kind: link_errors, link: ct05/gpu1/nvl07, symbol_per_s: 12, rcv_errors_per_s: 6, ber: 3.0e-11}
  - {kind: bad_pins, part: ct12/j2, links: 3, symbol_per_s: 32, rcv_errors_per_s: 16, local_link_integrity_errors_per_s: 0.5, ber: 8.0e-11}
  - {kind: deterministic_sdc, gpu: ct03/gpu3}
  - {kind: row_remap, gpu: ct17/gpu1, corrected_rows: 0, uncorrected_rows: 1, pending: true}
"""


def rack07(tmp_path):
    """rack07 with steady faults, its probes run by this Python (the tasks' `opsctl_python`)."""
    scenario = tmp_path / "rack07-steady.yaml"
    scenario.write_text(STEADY_FAULTS)
    path = tmp_path / "inventory.yaml"
    path.write_text("\n".join([
        "all:", "  children:", "    rack07:", "      vars:", "        opsctl_model: gb200-nvl72",
        "        opsctl_transport: local", "        opsctl_backend: sim", f"        opsctl_scenario: {scenario}",
        f"        opsctl_python: {sys.executable}", "      hosts:", "        rack07-ct[01:18]:",
        "        rack07-st[1:9]:"]) + "\n")
    return path


def test_a_burnin_through_slurm_judges_as_the_local_one_and_resumes_a_tray_slurm_could_not_run(
        slurm, opsctl, tmp_path):
    inventory = rack07(tmp_path)
    local = opsctl("burnin", "rack07", "--inventory", inventory, "--duration", DURATION, "--no-ledger", "--json",
                   "--out", tmp_path / "local")
    assert local.code == 1, local.err
    # Someone else holds ct05 out: Slurm cannot run its task, the others run as one job.
    slurm.drain("rack07-ct05", "fan 3 replaced, waiting on vendor")
    run = tmp_path / "via-slurm"
    first = opsctl("burnin", "rack07", "--inventory", inventory, "--via", "slurm", "--duration", DURATION,
                   "--no-ledger", "--json", "--out", run)
    assert first.code in (1, 3), first.err
    trays = {t["tray"]: t for t in first.json()["trays"]}
    assert trays["ct05"]["status"] == "incomplete"
    assert trays["ct05"]["reason"] == \
        "Slurm cannot allocate node rack07-ct05: IDLE+DRAIN: fan 3 replaced, waiting on vendor"
    assert all(t["status"] == "complete" for name, t in trays.items() if name != "ct05"), trays
    # Back in service: --resume runs ct05 alone, through Slurm again (the run keeps --via).
    slurm.undrain_all()
    again = opsctl("burnin", "--resume", run, "--no-ledger", "--json")
    assert again.code == 1, again.err
    assert again.json()["verdict"] == local.json()["verdict"] == "FAIL"
    assert sorted(again.json()["failing_parts"]) == sorted(local.json()["failing_parts"])
    assert {"rack07/ct05/gpu1/nvl07", "rack07/ct12/j2", "rack07/ct03/gpu3", "rack07/ct17/gpu1"} <= \
        set(local.json()["failing_parts"]), local.json()["failing_parts"]
    assert json.loads((run / "run.json").read_text())["plan"]["via"] == "slurm"


def test_a_task_that_dies_is_incomplete_with_slurm_s_words_and_the_others_complete(slurm, tmp_path):
    from opsctl.fanout import FanoutOptions, run_on_trays
    from opsctl.inventory import load_inventory

    dies = tmp_path / "python-that-dies"
    dies.write_text("#!/bin/sh\nkill -KILL $PPID $$\n")  # the task's shell and itself, as the OOM killer would
    dies.chmod(0o755)
    path = tmp_path / "inventory.yaml"
    path.write_text("\n".join([
        "rack07:", "  vars:", "    opsctl_model: gb200-nvl72", "    opsctl_transport: local",
        "    opsctl_backend: sim", f"    opsctl_python: {sys.executable}", "  hosts:", "    rack07-ct01:",
        f"    rack07-ct02: {{opsctl_python: {dies}}}"]) + "\n")
    rack = load_inventory(path).rack("rack07")
    results = {r.tray: r for r in run_on_trays(rack, ["snapshot", "--window", "1", "--json"],
                                               options=FanoutOptions(via="slurm", run_timeout_s=120),
                                               workdir=tmp_path)}
    assert results["ct01"].complete and results["ct01"].document["tray"] == "ct01"
    assert results["ct01"].transport == "slurm"
    assert not results["ct02"].complete
    assert results["ct02"].reason.startswith("Slurm task died before the probe ended: ")
    assert "rack07-ct02" in results["ct02"].reason, results["ct02"].reason
