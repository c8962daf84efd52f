"""`opsctl fleet plan` and `opsctl report` on what an operator sees: a run folder that cannot be
made is one line and exit 2; the plan prints each tray's probe command; a rack whose trays did
not report is unreported, not failing, and says so in a sentence."""

import json

import pytest

from tests.conftest import assert_one_line_error
from tests.test_report_cli import record, write_fleet


def test_a_run_folder_that_cannot_be_made_is_one_line_and_exit_2(opsctl, tmp_path):
    a_file = tmp_path / "file.json"
    a_file.write_text("{}")
    assert_one_line_error(opsctl("fleet", "plan", "/proc/x", "--racks", "hgx01"), 2, "/proc/x: cannot create the run folder")
    assert_one_line_error(opsctl("fleet", "plan", a_file / "x", "--racks", "hgx01"), 2, "cannot create the run folder",
                          "Not a directory")
    assert_one_line_error(opsctl("fleet", "plan", "/proc", "--racks", "hgx01"), 2, "/proc: cannot write the run folder")
    assert a_file.read_text() == "{}"


def test_the_plan_prints_each_trays_probe_command(opsctl, tmp_path):
    inventory = write_fleet(tmp_path)
    result = opsctl("--inventory", inventory, "fleet", "plan", tmp_path / "run", "--duration", "1")
    assert result.code == 0, result.err
    planned = json.loads((tmp_path / "run" / "fleet.json").read_text())
    assert planned["racks"] == ["hgxa", "hgxb"]
    lines = result.out.splitlines()
    for host, tray in (("hgxa-node", "hgxa"), ("hgxb-node", "hgxb")):
        [line] = [line for line in lines if host in line]
        assert f" {tray} " in line and "python -m probes run --duration 1 " in line, line
    assert "--sim-spec SPEC" in result.out and "opsctl report" in result.out


@pytest.mark.slow
def test_trays_that_did_not_report_are_unreported_not_failing(opsctl, tmp_path):
    planned = opsctl("fleet", "plan", tmp_path / "run", "--racks", "rack07", "--duration", "1")
    assert planned.code == 0, planned.err

    report = opsctl("report", tmp_path / "run", "--no-ledger")

    assert report.code == 3, report.err
    [row] = [line for line in report.out.splitlines() if line.startswith("│ rack07")]
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert cells[2:5] == ["INCOMPLETE", "0/27", "-"], cells  # nothing failed: nothing was judged
    assert "27 of 27 trays did not report: Ansible fetched no result" in report.out
    assert "tray.reported" not in report.out and "fails !=" not in report.out
    fleet = json.loads((tmp_path / "run" / "fleet-summary.json").read_text())
    [rack] = fleet["racks"]
    assert "trays" not in rack["failing"] and not any(rack["failing"].values())
    assert len(rack["not_reported"]) == 27 and rack["verdict"] == "INCOMPLETE"


@pytest.mark.slow
def test_trays_with_different_reasons_are_named_by_reason(opsctl, tmp_path):
    planned = opsctl("fleet", "plan", tmp_path / "run", "--racks", "rack07", "--duration", "1", "--json")
    assert planned.code == 0, planned.err
    record(planned.json()["trays"]["rack07-ct02"], rc=None, stderr="", msg="Timeout exceeded")

    report = opsctl("report", tmp_path / "run", "--no-ledger")

    assert report.code == 3, report.err
    assert "27 of 27 trays did not report:" in report.out
    assert "rack07/ct02: the probe did not finish under Ansible: Timeout exceeded" in report.out
    assert "rack07/ct01, rack07/ct03, rack07/ct04, rack07/ct05 and 22 more: Ansible fetched no result" in report.out
