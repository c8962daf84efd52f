"""`opsctl fleet plan` and `opsctl report` without Ansible: the test does what burnin.yml does
on each tray (puts the probe's JSON and Ansible's record where the plan says), then checks
that the report judges it as `opsctl burnin` does and says why a tray did not report.
tests/test_ansible.py runs the real playbooks."""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from opsctl.fleet.ansible_results import NOT_REACHED
from tests.conftest import assert_one_line_error

REPO = Path(__file__).resolve().parent.parent
FAULT = """scenario: hgxb-bad-link
seed: 3
faults:
  - {kind: link_errors, link: gpu3/nvl02, crc_per_s: 180, replay_per_s: 0.8}
"""


def write_fleet(root):
    """Two simulated HGX racks on the local transport: hgxa healthy, hgxb with a bad NVLink."""
    (root / "hgxb-bad-link.yaml").write_text(FAULT)
    inventory = root / "fleet.yaml"
    inventory.write_text("""all:
  vars: {opsctl_model: hgx-h100, opsctl_transport: local, opsctl_backend: sim}
  children:
    hgxa: {hosts: {hgxa-node: }}
    hgxb: {vars: {opsctl_scenario: hgxb-bad-link.yaml}, hosts: {hgxb-node: }}
""")
    return inventory


def record(entry, **fields):
    """What burnin.yml records on the controller for a tray (see ansible/roles/opsctl_probes)."""
    Path(entry["record"]).write_text(json.dumps({"host": "h", "tray": entry["tray"], **fields}))


@pytest.mark.slow
def test_report_judges_what_ansible_fetched_as_burnin_judges_it(opsctl, tmp_path):
    inventory = write_fleet(tmp_path)
    burnin = opsctl("--inventory", inventory, "burnin", "hgxb", "--duration", "1", "--out", tmp_path / "burnin", "--json")
    assert burnin.code == 1, burnin.err
    by_burnin = burnin.json()
    planned = opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "fleet", "--racks", "hgxb", "--duration", "1",
                     "--json")
    assert planned.code == 0, planned.err
    entry = planned.json()["trays"]["hgxb-node"]
    # burnin's own probe command for 1 s of load (run timeout: 120 s more); the playbook adds
    # `--sim-spec` with where the spec landed on the tray.
    argv = entry["argv"]
    assert argv[:3] == ["run", "--duration", "1"] and "--json" in argv and argv[-4:] == ["--backend", "sim", "--tray", "node"]
    assert Path(entry["sim_spec"]).is_file() and entry["run_timeout_s"] == 121
    ran = [e for e in _journal(tmp_path / "burnin") if e["event"] == "tray_finished"][0]
    shutil.copy(tmp_path / "burnin" / "trays" / "hgxb.json", entry["result"])  # an HGX tray goes by its name
    record(entry, rc=ran["exit_code"], stderr="", delta="0:00:03.500000")

    report = opsctl("report", tmp_path / "fleet", "--json")

    assert report.code == 1, report.err
    fleet = report.json()
    assert fleet["verdict"] == "FAIL" and fleet["counts"] == {"PASS": 0, "FAIL": 1, "INCOMPLETE": 0}
    by_report = json.loads((tmp_path / "fleet" / "hgxb" / "summary.json").read_text())
    for key in ("verdict", "failing", "checks", "suspects", "gpus", "links"):
        assert by_report[key] == by_burnin[key], key
    assert "hgxb/gpu3/nvl02" in by_report["failing"]["links"]
    [rack] = fleet["racks"]
    assert rack["verdict"] == "FAIL" and rack["trays_reported"] == 1
    failed = [c for c in rack["checks"] if c["component"] == "hgxb/gpu3/nvl02" and c["verdict"] == "fail"]
    assert failed and all(c["threshold"] is not None and c["source"] for c in failed)
    for name in ("report", "junit", "summary"):
        assert Path(rack["files"][name]).is_file(), name
    assert json.loads((tmp_path / "fleet" / "fleet-summary.json").read_text())["verdict"] == "FAIL"


@pytest.mark.slow
def test_report_says_which_trays_ansible_did_not_bring_back(opsctl, tmp_path):
    inventory = write_fleet(tmp_path)
    planned = opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "fleet", "--duration", "1", "--json")
    assert planned.code == 0, planned.err
    trays = planned.json()["trays"]
    assert sorted(trays) == ["hgxa-node", "hgxb-node"] and planned.json()["racks"] == ["hgxa", "hgxb"]
    # hgxa's probe ran past the plan's run timeout (Ansible's async killed it and says so); hgxb
    # was never reached (no record at all).
    record(trays["hgxa-node"], rc=None, stderr="", msg="Timeout exceeded")

    first = opsctl("report", tmp_path / "fleet", "--json")
    again = opsctl("report", tmp_path / "fleet")

    assert first.code == 3, first.err
    fleet = first.json()
    assert fleet["verdict"] == "INCOMPLETE" and fleet["exit_code"] == 3
    reasons = {r["rack"]: [t["reason"] for t in r["not_reported"]] for r in fleet["racks"]}
    assert reasons == {"hgxa": ["the probe did not finish under Ansible: Timeout exceeded"], "hgxb": [NOT_REACHED]}
    assert again.code == 3 and "fleet: INCOMPLETE (exit 3)" in again.out and "hgxb: INCOMPLETE" in again.out
    # Judging twice journals each tray's outcome once: nothing new was learnt the second time.
    finished = [e for e in _journal(tmp_path / "fleet" / "hgxa") if e["event"] == "tray_finished"]
    assert len(finished) == 1 and finished[0]["transport"] == "ansible"


def test_an_acceptance_run_is_judged_only_by_the_criteria_it_was_planned_with(opsctl, tmp_path):
    inventory = write_fleet(tmp_path)
    criteria = tmp_path / "criteria.yaml"
    criteria.write_text((REPO / "opsctl" / "data" / "criteria" / "default.yaml").read_text()
                        .replace("duration_s: 900", "duration_s: 2").replace('version: "1.2"', 'version: "site-1"'))
    planned = opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "fleet", "--racks", "hgxa", "--kind", "accept",
                     "--criteria", criteria, "--json")
    assert planned.code == 0, planned.err
    assert planned.json()["kind"] == "accept" and planned.json()["duration_s"] == 2  # the criteria's duration
    run = json.loads((tmp_path / "fleet" / "hgxa" / "run.json").read_text())
    assert run["kind"] == "accept" and run["criteria"]["version"] == "site-1"
    criteria.write_text(criteria.read_text().replace("duration_s: 2", "duration_s: 3"))
    assert_one_line_error(opsctl("report", tmp_path / "fleet"), 2, "changed since run hgxa started")


@pytest.mark.slow
def test_report_judges_a_burnin_run_folder_again_as_burnin_judged_it(opsctl, tmp_path):
    inventory = write_fleet(tmp_path)
    run, ledger = tmp_path / "burnin", tmp_path / "ledger.sqlite"
    burnin = opsctl("--inventory", inventory, "burnin", "hgxb", "--duration", "1", "--out", run, "--json", "--no-ledger")
    assert burnin.code == 1, burnin.err
    by_burnin = burnin.json()
    judged = ("summary.json", "snapshot.json", "report.html", "junit.xml")
    for name in judged:  # as a run killed before it was judged leaves it
        (run / name).unlink()

    again = opsctl("report", run, "--json", "--db", f"sqlite:///{ledger}")

    assert again.code == 1, again.err
    by_report = again.json()
    for key in ("kind", "rack", "verdict", "exit_code", "failing", "checks", "suspects", "gpus", "links", "files"):
        assert by_report[key] == by_burnin[key], key
    assert json.loads((run / "summary.json").read_text()) == by_report and all((run / name).is_file() for name in judged)
    # Recorded as any judged run is: one row per run, however often it is judged.
    assert "recorded in the ledger" in again.err
    shown = opsctl("report", run, "--db", f"sqlite:///{ledger}")
    assert shown.code == 1 and "hgxb burn-in: FAIL (exit 1)" in shown.out and "hgxb/gpu3/nvl02" in shown.out
    with sqlite3.connect(ledger) as db:
        assert db.execute("SELECT rack, kind, verdict FROM runs").fetchall() == [("hgxb", "burnin", "fail")]


@pytest.mark.slow
def test_a_trial_acceptance_judged_by_report_is_recorded_as_a_burnin_not_a_handover(opsctl, tmp_path):
    inventory = write_fleet(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    burnin = opsctl("--inventory", inventory, "burnin", "hgxa", "--duration", "1", "--out", tmp_path / "burnin", "--json",
                    "--no-ledger")
    assert burnin.code == 0, burnin.err
    planned = opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "fleet", "--racks", "hgxa", "--kind", "accept",
                     "--duration", "1", "--json")
    assert planned.code == 0, planned.err
    entry = planned.json()["trays"]["hgxa-node"]
    shutil.copy(tmp_path / "burnin" / "trays" / "hgxa.json", entry["result"])
    record(entry, rc=0, stderr="", delta="0:00:03.000000")

    report = opsctl("report", tmp_path / "fleet", "--json", "--db", f"sqlite:///{ledger}")

    assert report.code == 0, report.err
    fleet = report.json()
    assert fleet["trial"] is True and fleet["duration_s"] == 1 and fleet["criteria_duration_s"] == 900
    assert fleet["racks"][0]["verdict"] == "PASS" and fleet["racks"][0]["trial"] is True
    html = (tmp_path / "fleet" / "hgxa" / "report.html").read_text()
    assert "Trial acceptance report: hgxa" in html and "not the 900 s" in html
    with sqlite3.connect(ledger) as db:
        assert db.execute("SELECT rack, kind, verdict FROM runs").fetchall() == [("hgxa", "burnin", "pass")]
        assert db.execute("SELECT handover_at FROM racks WHERE rack = 'hgxa'").fetchall() in ([], [(None,)])
    assert "a trial acceptance: 1 s of load per tray, not the criteria's 900 s" in opsctl("report", tmp_path / "fleet", "--no-ledger").out


def test_fleet_trays_names_each_host_of_the_example_inventory(opsctl):
    result = opsctl("--inventory", REPO / "ansible" / "inventory.example.yaml", "fleet", "trays", "--json")
    assert result.code == 0, result.err
    trays = result.json()["trays"]
    assert len(trays) == 2 * 27 + 2
    assert trays["rack12-ct03"] == {"rack": "rack12", "tray": "ct03", "id": "rack12/ct03", "model": "gb200-nvl72",
                                    "backend": "nvml", "switch_tray": False}
    assert trays["rack13-st9"]["switch_tray"] is True
    assert trays["10.20.1.22"]["rack"] == "hgx22" and trays["10.20.1.22"]["tray"] == "node"


def test_bad_input_is_one_line_and_exit_2(opsctl, tmp_path):
    inventory = write_fleet(tmp_path)
    assert_one_line_error(opsctl("report", tmp_path / "nowhere"), 2, "not a run folder")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "fleet.json").write_text("{not json")
    assert_one_line_error(opsctl("report", tmp_path / "broken"), 2, "fleet.json: cannot read")
    assert_one_line_error(opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "r", "--racks", "hgxa,nosuch"),
                          2, "unknown rack 'nosuch'")
    assert_one_line_error(opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "r", "--criteria", "c.yaml"),
                          2, "--criteria goes with --kind accept")
    assert_one_line_error(opsctl("--inventory", inventory, "fleet", "trays", "--racks", ","), 2, "names no rack")
    assert opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "r", "--duration", "1").code == 0
    assert_one_line_error(opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "r"), 2, "already holds a fleet run")


def _journal(run):
    return [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
