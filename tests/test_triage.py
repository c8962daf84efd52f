"""`opsctl triage RACK`: snapshot every tray through the real fan-out, localize, and lay out
each fault with its repair, MTTR, blast radius and runbook — locally and over ssh."""

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, assert_one_line_error
from tests.test_snapshot_cli import sim_inventory

SEEDED_FAULTS = {"rack07/ct05/gpu1/nvl07", "rack07/ct12/j2", "rack07/ct07/gpu0/nvl13"}
PENDING_REMAP = "rack07/ct17/gpu1"  # needs no load to be seen: triage names it too


@pytest.fixture(scope="module")
def rack07_triage(tmp_path_factory):
    """One triage of the built-in rack07 (27 trays, its seeded faults) as a real process: its
    exit code, its JSON and the snapshot it kept. The trays share one timeline on which the
    flapping link drops every 15 s: a 16 s window sees it drop."""
    saved = tmp_path_factory.mktemp("triage") / "rack07.json"
    env = {k: v for k, v in os.environ.items() if k != "OPSCTL_INVENTORY"}
    proc = subprocess.run([sys.executable, "-m", "opsctl", "triage", "rack07", "--window", "16", "--json", "--save", str(saved)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode in (0, 1, 3), proc.stderr
    return proc.returncode, json.loads(proc.stdout), saved, proc.stderr


@pytest.mark.slow
def test_triage_of_rack07_names_its_faults_with_what_to_do(rack07_triage):
    code, result, _, _ = rack07_triage
    assert code == 1
    faults = [s for s in result["suspects"] if "alternative_to" not in s]
    assert {s["component"] for s in faults} == SEEDED_FAULTS | {PENDING_REMAP}
    # docs/triage.md shows this triage: the same number of faults, each of them in its table.
    doc = (REPO / "docs/triage.md").read_text()
    assert f"rack07 (gb200-nvl72) — faulty: {len(faults)} fault(s) found" in doc
    assert all(f" {s['component']} (" in doc for s in faults)
    for s in faults:
        assert s["score"] > 0.9 and s["action"] and s["mttr_hours"] > 0
        assert s["gpus_idled"] == (1 if s["component"] == PENDING_REMAP else 4)
        assert s["runbook"].startswith("runbooks/")
    remap = next(s for s in faults if s["component"] == PENDING_REMAP)
    assert remap["repair"] == "reset_gpu" and remap["runbook"] == "runbooks/xid-memory.md"
    assert "memory.remapped_rows" in remap["evidence"][0]
    # Together the four repairs idle 13 GPUs: more than the rack's 8 hot spares.
    plan = result["repair_plan"]
    assert (plan["gpus_out"], plan["spare_gpus"], plan["gpus_lost_to_training"]) == (13, 8, 5)
    assert len(result["trays"]) == 27 and all(t["status"] == "complete" for t in result["trays"])
    assert result["observed"]["switch_side_links"] == 1296  # the simulated switch trays answered
    assert result["xids"]["nvlink_xid_gpus"] == ["rack07/ct07/gpu0"]  # the flap's own GPU, and no other


@pytest.mark.slow
def test_the_kept_snapshot_localizes_to_the_same_answer(rack07_triage, opsctl):
    _, result, saved, _ = rack07_triage
    again = opsctl("localize", saved, "--json")
    assert again.code == 1
    assert [s["component"] for s in again.json()["racks"][0]["suspects"]] == [s["component"] for s in result["suspects"]]


@pytest.mark.slow
@pytest.mark.slow
def test_triage_speaks_while_it_waits_names_its_xids_and_says_the_window_was_short(rack07_triage):
    """Issue 26: a line every few seconds while the 16 s window runs; each XID with its GPU and
    the catalog's meaning; the flap seen too few times for a rate, and a window shorter than the
    default, each warned."""
    _, result, saved, stderr = rack07_triage
    lines = stderr.splitlines()
    assert lines[0] == "rack07: reading 27 tray(s) over a 16 s window …"
    assert any(re.fullmatch(r"rack07: \d+ s of 16, \d+ s left; 0 answered, 27 reading", line) for line in lines), lines
    seen = {(x["gpu"], x["xid"]): x for x in result["xids"]["seen"]}
    flap = seen[("rack07/ct07/gpu0", 149)]
    assert flap["name"] == "NVLINK_NETIR_ERROR" and flap["meaning"] and flap["action"]
    assert ("rack07/ct17/gpu1", 63) in seen  # the pending remap's own XID
    warnings = result["window_warnings"]
    # The window as measured on the trays: 16 s and what a busy machine adds.
    assert re.match(r"a 1[6-9](\.\d)? s window sees only what happens within it", warnings[0]), warnings
    assert "run again with --window 60 (the default)" in warnings[0]
    # The link drops every 15 s: a window of 16 s and a little more sees one drop, or two when it opens
    # within a second before one (a tray that starts reading quickly): the warning gives the count seen.
    [flapping] = [link for link in json.loads(saved.read_text())["links"] if link.get("side", "gpu") == "gpu"
                  and (link["gpu"], link["port"]) == ("rack07/ct07/gpu0", 13)]
    drops = flapping["link_down_events"]
    assert drops in (1, 2), flapping
    said = f"went down too few times for a rate: rack07/ct07/gpu0/nvl13 ({drops} drop{'s' if drops > 1 else ''} in 1"
    assert any(w.startswith(said) for w in warnings), warnings


@pytest.mark.slow
def test_on_an_80_column_terminal_its_tables_wrap_and_never_cut_an_id(rack07_triage):
    from rich.console import Console

    from opsctl.localize.render import render_summary, render_triage

    _, result, _, _ = rack07_triage
    for render in (render_summary, render_triage):
        out = Console(width=80, record=True, highlight=False)
        render(result, out)
        text = out.export_text()
        assert "…" not in text and max(map(len, text.splitlines())) <= 80, text
        assert all(s["component"] in text for s in result["suspects"])


def test_triage_reads_well_for_a_person(opsctl, tmp_path):
    # The GSP times out every second: whatever 2 s window the tray reads on the rack's timeline sees one.
    inventory = sim_inventory(tmp_path, "seed: 3\nfaults:\n  - {kind: xid, gpu: gpu6, xid: 119, at_s: 0.5, repeat_s: 1}\n")
    result = opsctl("--inventory", inventory, "triage", "lab1", "--window", "2")
    assert result.code == 1, result.err
    out = result.out
    assert "faulty: 1 fault(s) found" in out and "lab1/gpu6 (gpu)" in out
    assert "XID 119 (GSP RPC Timeout)" in out and "reset the GPU" in out  # the catalog's own words
    assert "runbook: runbooks/xid-gsp.md" in out and "idles: 1 GPU(s)" in out


@pytest.mark.slow
def test_a_healthy_server_and_an_unread_one(opsctl, tmp_path):
    healthy = opsctl("triage", "hgx01", "--window", "1")
    assert healthy.code == 0 and "healthy" in healthy.out
    # Healthy in 1 s is not healthy in a minute: the text says so (issue 26).
    assert "window: a 1" in healthy.out and "run again with --window 60 (the default)" in healthy.out
    assert healthy.err.startswith("hgx01: reading 1 tray(s) over a 1 s window …")
    inventory = sim_inventory(tmp_path, "faults:\n  - {kind: tray_unreachable, tray: node}\n")
    unread = opsctl("--inventory", inventory, "triage", "lab1", "--window", "1", "--json")
    assert unread.code == 3
    document = unread.json()
    assert document["status"] == "incomplete" and not document["healthy"] and document["suspects"] == []
    assert document["unread_trays"] == ["node"] and "unreachable" in document["trays"][0]["error"]


@pytest.mark.slow
def test_triage_over_ssh(sshd, tmp_path, opsctl):
    """The trays of an HGX server reached over ssh (a real sshd on loopback)."""
    (tmp_path / "scenario.yaml").write_text("faults:\n  - {kind: link_errors, link: gpu2/nvl11, crc_per_s: 400, replay_per_s: 2}\n")
    known = sshd.write_known_hosts(tmp_path / "known_hosts", sshd.addresses[:1])
    inventory = sshd.inventory(tmp_path / "inventory.yaml", rack="srv1", model="hgx-h100", trays=["node"],
                               scenario="scenario.yaml", known_hosts=known)
    result = opsctl("--inventory", inventory, "triage", "srv1", "--window", "2", "--json")
    assert result.code == 1, result.err
    (fault,) = [s for s in result.json()["suspects"] if "alternative_to" not in s]
    assert fault["component"] == "srv1/gpu2/nvl11" and fault["repair"] == "replace_baseboard"


def test_bad_triage_input_is_refused_before_any_tray_is_read(opsctl, tmp_path):
    bad = tmp_path / "mttr.yaml"
    bad.write_text("actions:\n  reset_gpu:\n    repair_h: -3\n")
    assert_one_line_error(opsctl("triage", "hgx01", "--mttr-config", bad), 2, "repair_h (hours) must be a number at least 0")
    assert_one_line_error(opsctl("triage", "nosuchrack"), 2, "unknown rack 'nosuchrack'")
