"""`opsctl snapshot RACK -o FILE`: every tray read through the real fan-out (local processes
running `python -m probes snapshot` on the simulator), assembled into the rack's snapshot."""

import json

import pytest

from tests.conftest import assert_one_line_error


def sim_inventory(tmp_path, scenario_text, rack="lab1", model="hgx-h100", hosts="lab1-node:"):
    (tmp_path / "scenario.yaml").write_text(scenario_text)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"all:\n  children:\n    {rack}:\n      vars:\n        opsctl_model: {model}\n"
                         "        opsctl_transport: local\n        opsctl_backend: sim\n"
                         f"        opsctl_scenario: scenario.yaml\n      hosts:\n        {hosts}\n")
    return inventory


@pytest.mark.slow
def test_a_snapshot_file_is_the_contract_document(opsctl, tmp_path):
    out = tmp_path / "hgx01.json"
    result = opsctl("snapshot", "hgx01", "-o", out, "--window", "2", "--json")
    assert result.code == 0, result.err
    assert result.json()["links_read"] == {"gpu": 144, "switch": 0}
    snapshot = json.loads(out.read_text())
    assert (snapshot["rack"], snapshot["model"]) == ("hgx01", "hgx-h100") and 2.0 <= snapshot["window_seconds"] < 10
    assert len(snapshot["links"]) == 144 and len(snapshot["gpus"]) == 8
    link = snapshot["links"][0]
    assert link["gpu"] == "hgx01/gpu0" and link["port"] == 0 and link["state"] == "up"
    assert {"crc_errors", "replay_errors", "recovery_errors"} <= set(link)
    assert snapshot["trays"] == [{"tray": "node", "status": "complete", "error": None}]
    assert opsctl("localize", out).code == 0  # a healthy server


def test_an_unreachable_tray_is_written_down_and_exits_3(opsctl, tmp_path):
    inventory = sim_inventory(tmp_path, "faults:\n  - {kind: tray_unreachable, tray: node}\n")
    out = tmp_path / "lab1.json"
    result = opsctl("--inventory", inventory, "snapshot", "lab1", "-o", out, "--window", "1")
    assert result.code == 3 and "not read" in result.out and "node" in result.out
    snapshot = json.loads(out.read_text())
    assert snapshot["links"] == [] and snapshot["trays"][0]["status"] == "unread"
    assert "unreachable" in snapshot["trays"][0]["error"]
    localized = opsctl("localize", out, "--json")
    assert localized.code == 3 and localized.json()["racks"][0]["status"] == "incomplete"


@pytest.mark.slow
def test_snapshot_to_stdout_from_a_real_process(opsctl_process):
    result = opsctl_process("snapshot", "hgx01", "-o", "-", "--window", "1")
    assert result.code == 0, result.err
    assert json.loads(result.out)["rack"] == "hgx01"


@pytest.mark.slow
def test_bad_snapshot_invocations(opsctl, tmp_path):
    assert_one_line_error(opsctl("snapshot", "rack99", "-o", tmp_path / "x.json"), 2, "unknown rack 'rack99'")
    assert_one_line_error(opsctl("snapshot", "hgx01", "-o", tmp_path / "x.json", "--window", "0"), 2, "--window")
    assert_one_line_error(opsctl("snapshot", "hgx01"), 2, "Missing option '-o'")
    assert_one_line_error(opsctl("snapshot", "hgx01", "-o", tmp_path / "no" / "such" / "dir.json", "--window", "1"), 2,
                          "cannot write here")
