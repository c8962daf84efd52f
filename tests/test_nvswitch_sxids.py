"""The NVSwitch SXids of an HGX host's kernel log (probes/nvswitch_sxids.py), judged as DCGM's
health watch does (MonitorNvSwitchErrorCounts): fatal fails, non-fatal warns; a line that states
neither fails by opsctl's rule. A GB200 compute tray, whose switches are in switch trays, is not
judged on them."""

import pytest

from opsctl.errors import InputError
from opsctl.simulation.compiler import compile_rack_spec
from opsctl.simulation.scenario import scenario_from_text
from probes.nvswitch_sxids import parse_sxid_lines, recorded_sxids, tray_checks
from probes.sku_references import load_references
from tests.test_burnin_tray_depth import burnin
from tests.test_snapshot_cli import sim_inventory

NON_FATAL = "nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 19084, Non-fatal, Link 29 AN1 Heartbeat Timeout Error (First)"
FATAL = "nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 20034, Fatal, Link 28 LTSSM Fault Up"
UNSTATED = "nvidia-nvswitch2: SXid (PCI:0000:c4:00.0): 10002, Severity 5 Engine instance 00 Sub-engine instance 00"
GPU_XID = "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
LOAD = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.161.08  Release Build"
H100, GB200 = load_references(sku="h100"), load_references(sku="gb200")


def test_the_three_driver_line_forms_parse_and_a_gpu_xid_line_is_not_an_sxid():
    found = parse_sxid_lines([f"[ 12.5] {NON_FATAL}", FATAL, UNSTATED, GPU_XID])
    assert [(e["switch"], e["pci_bus_id"], e["sxid"], e["fatal"]) for e in found] == [
        ("nvswitch4", "0000:c6:00.0", 19084, False), ("nvswitch0", "0000:c2:00.0", 20034, True),
        ("nvswitch2", "0000:c4:00.0", 10002, None)]
    assert found[1]["text"] == "Fatal, Link 28 LTSSM Fault Up" and found[0]["line"].endswith("(First)")


def judged(lines, refs=H100, why=None):
    document = {"nvswitch": recorded_sxids((lines, why), refs)}
    return {c["component"]: c for c in tray_checks(document, refs)}


def test_fatal_fails_non_fatal_warns_unstated_fails_by_opsctls_rule_and_none_passes():
    checks = judged([NON_FATAL, FATAL, UNSTATED])
    assert {component: c["verdict"] for component, c in checks.items()} == {"nvs0": "fail", "nvs2": "fail", "nvs4": "warn"}
    assert checks["nvs0"]["value"] == [20034] and "Fatal" in checks["nvs0"]["reason"]
    assert "opsctl's rule" in checks["nvs2"]["reason"] and "opsctl's rule" not in checks["nvs0"]["reason"]
    for c in checks.values():
        assert "MonitorNvSwitchErrorCounts" in c["source"] and "DCGM_FI_DEV_NVSWITCH_FATAL_ERRORS" in c["source"]
    assert [(c["component"], c["verdict"]) for c in judged([GPU_XID]).values()] == [("tray", "pass")]


def test_only_what_came_after_the_last_driver_load_counts_and_an_unread_log_is_incomplete():
    assert [c["verdict"] for c in judged([FATAL, LOAD, NON_FATAL]).values()] == ["warn"]
    unread = judged([], why="dmesg: Operation not permitted")
    assert [c["verdict"] for c in unread.values()] == ["incomplete"]
    assert "Operation not permitted" in unread["tray"]["reason"]


def test_a_gb200_compute_tray_has_no_nvswitch_section_and_no_check():
    assert recorded_sxids(([GPU_XID], None), GB200) is None
    assert tray_checks({"nvswitch": None}, GB200) == [] and tray_checks({}, GB200) == []


def test_the_sxid_fault_is_refused_on_gb200_and_on_a_part_that_is_not_a_switch_chip(rack07_topology, hgx_topology):
    with pytest.raises(InputError, match="HGX fault"):
        compile_rack_spec(scenario_from_text("faults:\n  - {kind: sxid, part: st1/sw0, sxid: 20034}\n"), rack07_topology)
    with pytest.raises(InputError, match="switch_chip"):
        compile_rack_spec(scenario_from_text("faults:\n  - {kind: sxid, part: gpu0, sxid: 20034}\n"), hgx_topology)
    spec = compile_rack_spec(scenario_from_text("faults:\n  - {kind: sxid, part: nvs2, sxid: 20034, fatal: true}\n"),
                             hgx_topology)
    (effect,) = spec.tray("node").effects
    assert effect.kind == "sxid" and effect.params["switch"] == 2 and effect.params["fatal"] is True


@pytest.mark.slow
def test_a_fatal_sxid_before_the_burnin_fails_hgx_naming_the_switch_chip_and_the_baseboards_repair(tmp_path):
    # A burn-in of its own: the fault is on the host's kernel log, which no shared rack run carries.
    result = burnin(tmp_path, "hgx-h100", "hgx01", ["hgx01-node"],
                    ["{kind: sxid, part: nvs2, sxid: 20034, fatal: true}"], duration="1")
    assert result.code == 1, result.err[-2000:]
    summary = result.json()
    assert "hgx01/nvs2" in summary["failing_parts"]
    (suspect,) = [s for s in summary["suspects"] if not s.get("alternative_to")]
    assert suspect["component"] == "hgx01/baseboard" and suspect["repair"] == "replace_baseboard"
    (sxid,) = [c for c in summary["checks"] if c["check"] == "nvswitch.sxid.recorded"]
    assert sxid["component"] == "hgx01/nvs2" and sxid["verdict"] == "fail" and sxid["value"] == [20034]


@pytest.mark.slow
def test_a_non_fatal_sxid_is_a_warning_the_burnin_passes(tmp_path):
    result = burnin(tmp_path, "hgx-h100", "hgx01", ["hgx01-node"],
                    ["{kind: sxid, part: nvs1, sxid: 19084, fatal: false}"], duration="1")
    assert result.code == 0, result.err[-2000:]
    (sxid,) = [c for c in result.json()["checks"] if c["check"] == "nvswitch.sxid.recorded"]
    assert sxid["component"] == "hgx01/nvs1" and sxid["verdict"] == "warn"


@pytest.mark.slow
def test_health_fails_an_hgx_host_whose_switch_logged_a_fatal_sxid(opsctl, tmp_path):
    inventory = sim_inventory(tmp_path, "faults:\n  - {kind: sxid, part: nvs3, sxid: 20034, fatal: true}\n")
    result = opsctl("--inventory", inventory, "health", "lab1/node")
    assert result.code == 1, result.out + result.err
    assert "nvswitch.sxid.recorded" in result.out and "nvs3" in result.out


@pytest.mark.slow
@pytest.mark.parametrize("fatal", [True, False])
def test_triage_charges_a_fatal_sxid_to_the_baseboard_and_passes_a_non_fatal_one(opsctl, tmp_path, fatal):
    # Triage's snapshot reads the host's kernel log as the burn-in does: a fatal SXid logged
    # before the window is the baseboard's (its switch chip is on it), a non-fatal one is not a fault.
    inventory = sim_inventory(tmp_path, f"faults:\n  - {{kind: sxid, part: nvs2, sxid: 20034, fatal: {str(fatal).lower()}}}\n")
    result = opsctl("--inventory", inventory, "triage", "lab1", "--window", "1", "--json", "--no-ledger")
    assert result.code == (1 if fatal else 0), result.out + result.err
    triage = result.json()
    if not fatal:
        assert triage["status"] == "healthy" and not triage["suspects"]
        return
    (suspect,) = triage["suspects"]
    assert suspect["component"] == "lab1/baseboard" and suspect["repair"] == "replace_baseboard"
    (evidence,) = suspect["evidence"]
    assert evidence.startswith("failed nvswitch.sxid.recorded: nvs2: ") and "20034" in evidence and "1 fatal" in evidence
    assert "MonitorNvSwitchErrorCounts" in suspect["judgement"]["source"]
