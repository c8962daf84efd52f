"""A run's files are for others to read (the vendor, CI): written atomically, yet with the mode
open() gives a file (0666 less the umask), not tempfile's 0600. And an HGX server's one tray is
called by its name (hgx01) in progress lines, trays/ file names, the summary and the report."""

import json
import os
import stat

import pytest

from opsctl.rack_models import MODELS
from opsctl.runs.atomic_file import write_bytes_atomic, write_json_atomic
from opsctl.runs.run_directory import RunDirectory
from opsctl.runs.tray_names import tray_label


@pytest.fixture
def umask():
    def set_umask(mask):
        os.umask(mask)
    previous = os.umask(0o022)
    yield set_umask
    os.umask(previous)


def modes(folder):
    return {str(p.relative_to(folder)): stat.S_IMODE(p.stat().st_mode) for p in folder.rglob("*") if p.is_file()}


def test_atomic_writes_get_the_mode_open_would_give(tmp_path, umask):
    write_bytes_atomic(tmp_path / "a" / "report.html", b"<html>")
    assert stat.S_IMODE((tmp_path / "a" / "report.html").stat().st_mode) == 0o644
    umask(0o027)
    write_json_atomic(tmp_path / "a" / "summary.json", {"verdict": "PASS"})
    assert stat.S_IMODE((tmp_path / "a" / "summary.json").stat().st_mode) == 0o640
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["report.html", "summary.json"]  # no temporary left


@pytest.mark.slow
def test_a_burnins_run_folder_and_a_snapshot_are_readable_by_others(opsctl, tmp_path, umask, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    result = opsctl("burnin", "hgx01", "--duration", "1", "--out", tmp_path / "run", "--no-ledger")
    assert result.code == 0, result.err
    found = modes(tmp_path / "run")
    for name in ("report.html", "junit.xml", "summary.json", "snapshot.json", "run.json", "journal.jsonl", "trays/hgx01.json"):
        assert found.pop(name) == 0o644, name
    assert set(found.values()) <= {0o644}, found
    assert opsctl("snapshot", "hgx01", "-o", tmp_path / "snap.json", "--window", "1").code == 0
    assert stat.S_IMODE((tmp_path / "snap.json").stat().st_mode) == 0o644


@pytest.mark.slow
def test_a_fleet_runs_files_are_readable_by_others(opsctl, tmp_path, umask):
    assert opsctl("fleet", "plan", tmp_path / "fleet", "--racks", "hgx01", "--duration", "1").code == 0
    assert opsctl("report", tmp_path / "fleet", "--no-ledger").code == 3
    found = modes(tmp_path / "fleet")
    assert found["fleet.json"] == found["fleet-summary.json"] == found["hgx01/report.html"] == 0o644
    assert set(found.values()) == {0o644}, found


@pytest.mark.slow
def test_an_hgx_tray_is_called_by_its_name_everywhere(opsctl, tmp_path):
    result = opsctl("burnin", "hgx01", "--duration", "1", "--out", tmp_path / "run", "--no-ledger", "--json")
    assert result.code == 0, result.err
    assert "  hgx01 started on hgx01-node" in result.err and "  hgx01 reported in" in result.err
    assert "node started" not in result.err and "node reported" not in result.err
    assert [p.name for p in (tmp_path / "run" / "trays").iterdir()] == ["hgx01.json"]
    [tray] = json.loads((tmp_path / "run" / "summary.json").read_text())["trays"]
    assert tray["id"] == "hgx01" and tray["file"] == "trays/hgx01.json"
    html = (tmp_path / "run" / "report.html").read_text()
    assert "trays/hgx01.json" in html and "node.json" not in html and ">node<" not in html and "hgx01/node" not in html
    # Component ids keep their documented form (docs/topology.md): an HGX has no tray level.
    assert {g["id"] for g in result.json()["gpus"]} == {f"hgx01/gpu{i}" for i in range(8)}
    shown = opsctl("inventory", "show", "hgx01", "--json")
    assert [t["id"] for t in shown.json()["tray_list"]] == ["hgx01"]


def test_the_label_is_the_trays_id_without_its_rack_for_every_model():
    for model in MODELS.values():
        for tray in model.tray_names():
            assert tray_label("r1", tray) == model.tray_id("r1", tray).removeprefix("r1/"), (model.name, tray)


def test_a_run_made_before_keeps_finding_its_trays_node_json(tmp_path):
    run = RunDirectory.create("hgx01", "burnin", {}, tmp_path / "old")
    (tmp_path / "old" / "trays" / "node.json").write_text("{}")
    assert RunDirectory(tmp_path / "old").tray_file("node") == tmp_path / "old" / "trays" / "node.json"
    assert run.tray_file("ct03") == tmp_path / "old" / "trays" / "ct03.json"
