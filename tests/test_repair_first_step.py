"""A repair for XID evidence starts with NVIDIA's first step (the Xid catalog's immediate action):
the tray's xid check, the localizer's repair of the GPU, the XID's runbook and its alert all name
the same step, and a field-replaceable unit is named only when link evidence points at it."""

import sys
from pathlib import Path

import pytest
import yaml

from opsctl.localize import localize_snapshot
from opsctl.mttr import load_mttr_model
from opsctl.runbooks import load_runbooks
from probes.xids import rule

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from test_localize import faults_of, snapshot_of  # noqa: E402  the module's snapshot cache: healthy trays are read once

# XID -> (the first step's words, the repair opsctl/data/mttr.yaml gives the GPU, what it idles on GB200 and HGX)
FIRST_STEPS = {
    79: ("reboot the machine", "reboot_machine", 4, 8),   # RESTART_BM: the machine, not nvidia-smi -r
    74: ("reset the GPU", "reset_gpu_nvlink", 1, 1),     # WORKFLOW_NVLINK_ERR: reset, then the NVLink workflow
    149: ("reset the GPU", "reset_gpu_nvlink", 1, 1),    # undecoded: its most severe row, RESET_GPU
    140: ("reset the GPU", "reset_gpu", 1, 1),           # RESET_GPU
}
FRU_REPAIRS = {"replace_compute_tray", "replace_baseboard", "rma_gpu", "replace_cartridge", "replace_switch_tray"}


def alert_for(code):
    rules = yaml.safe_load((REPO / "exporters/rules/xid.yml").read_text())
    for group in rules["groups"]:
        for entry in group["rules"]:
            expr = entry.get("expr", "")
            if f'xid="{code}"' in expr or (f"|{code}|" in expr or f'"{code}|' in expr or f'|{code}"' in expr):
                return entry
    return None


def localized(topology, gpu, code):
    snapshot = snapshot_of("seed: 1\nfaults: []\n", topology)
    for entry in snapshot["gpus"]:
        if entry["id"] == gpu:
            entry["xids"] = [code]
    return [s for s in localize_snapshot(snapshot, topology)["suspects"] if "alternative_to" not in s]


@pytest.mark.parametrize("code", sorted(FIRST_STEPS))
def test_the_xid_check_the_runbook_and_the_alert_name_the_same_first_step(code):
    step, repair, _, _ = FIRST_STEPS[code]
    step = step.lower()
    assert step in rule(code).action.lower()
    assert step in load_mttr_model().actions[repair].action.lower()
    runbooks = [r for r in load_runbooks() if code in r.xids]
    if code != 140:  # 140's runbook is the memory one, shared with other XIDs
        [runbook] = runbooks
        assert runbook.action == repair
    alert = alert_for(code)
    assert alert is not None and step in alert["annotations"]["description"].lower()


@pytest.mark.slow  # a simulated rack's snapshot per code
@pytest.mark.parametrize("code", sorted(FIRST_STEPS))
def test_a_lone_xid_is_repaired_by_its_first_step_not_a_replacement(code, rack07_topology, hgx_topology):
    _, repair, idled_gb200, idled_hgx = FIRST_STEPS[code]
    for topology, gpu, idled in ((rack07_topology, "rack07/ct03/gpu1", idled_gb200), (hgx_topology, "hgx01/gpu3", idled_hgx)):
        if code == 149 and topology is hgx_topology:
            continue  # an NVLink 5 XID: Blackwell only
        [suspect] = localized(topology, gpu, code)
        assert (suspect["component"], suspect["repair"], suspect["gpus_idled"]) == (gpu, repair, idled)
        assert suspect["repair"] not in FRU_REPAIRS
        assert "opsctl estimate" in suspect["repair_source"]


def test_link_evidence_still_names_the_part_it_points_at(hgx_topology):
    """An NVLink XID with its link down: the link's evidence, not the XID alone, names the part."""
    snapshot = snapshot_of("seed: 1\nfaults:\n  - {kind: link_down, link: gpu5/nvl07, start_s: 2}\n", hgx_topology)
    for entry in snapshot["gpus"]:
        if entry["id"] == "hgx01/gpu5":
            entry["xids"] = [74]
    suspects = [s for s in localize_snapshot(snapshot, hgx_topology)["suspects"] if "alternative_to" not in s]
    assert [(s["component"], s["repair"]) for s in suspects] == [("hgx01/gpu5/nvl07", "replace_baseboard")]


@pytest.mark.parametrize("code", [185, 165])
def test_an_xid_nvidia_gives_no_action_for_is_reset_first_not_replaced(code, rack07_topology):
    """185 has no catalog row, 165 a row without a bucket: both fail (opsctl's rule), and the
    repair is the reset the xid check names, not a compute tray."""
    assert "reset the gpu" in rule(code).action.lower() and "opsctl's rule" in rule(code).action
    [suspect] = localized(rack07_topology, "rack07/ct03/gpu1", code)
    assert (suspect["repair"], suspect["gpus_idled"]) == ("reset_gpu", 1)


def test_a_lost_gpu_that_logged_xid_79_is_rebooted_in_a_burn_in_too():
    """A burn-in's GPU fails its own gpu.lost check as well as logging 79: the reboot still wins
    over the reset-grade faults, and an RMA-grade fault still wins over both."""
    from opsctl.localize.result import gpu_repair_context
    assert gpu_repair_context([79], True, [{"check": "gpu.lost"}]) == "reboot"
    assert gpu_repair_context([], True, [{"check": "gpu.lost"}]) == "reboot"  # GPU_IS_LOST without its XID 79
    assert gpu_repair_context([], False, [{"check": "gpu.hung"}]) == "reset"
    assert gpu_repair_context([79], True, [{"check": "gemm.bf16.mismatches"}]) == "rma"
    assert gpu_repair_context([119], False) == "reset"


# --- what a GPU or link arrived with (its totals since the driver loaded, DCGM 4.6) -------------
ARRIVED = [
    # (topology, fault, the link, what its snapshot row fails)
    ("rack07", "{kind: link_totals, link: ct03/gpu1/nvl05, recovery_failed: 2}", "rack07/ct03/gpu1/nvl05",
     "nvlink.total.recovery_failed"),
    ("hgx01", "{kind: link_totals, link: gpu3/nvl05, replay: 1}", "hgx01/gpu3/nvl05", "nvlink.total.replay_errors"),
]


def _topology(name, rack07_topology, hgx_topology):
    return rack07_topology if name == "rack07" else hgx_topology


def _link_row(snapshot, link):
    gpu, port = link.rsplit("/nvl", 1)
    [row] = [r for r in snapshot["links"] if r.get("gpu") == gpu and r.get("port") == int(port) and r["side"] == "gpu"]
    return row


@pytest.mark.parametrize("rack, fault, link, check", ARRIVED)
def test_a_link_that_arrived_with_failed_totals_is_named_and_reset_first(rack, fault, link, check, rack07_topology,
                                                                         hgx_topology):
    """Its window is clean, so only the totals it arrived with name it (triage's snapshot reads
    them before the window); the first step is a reset of its GPU, which clears them — not a
    reseat of a tray (GB200) or a baseboard (HGX)."""
    topology = _topology(rack, rack07_topology, hgx_topology)
    snapshot = snapshot_of(f"seed: 1\nfaults:\n  - {fault}\n", topology)
    assert [c["check"] for c in _link_row(snapshot, link)["failed_checks"]] == [check]
    [suspect] = faults_of(localize_snapshot(snapshot, topology))
    assert (suspect["component"], suspect["repair"], suspect["gpus_idled"]) == (link, "reset_gpu_nvlink", 1)
    assert suspect["runbook"] == "runbooks/link.md"


def test_a_link_that_also_errs_in_the_window_is_repaired_as_its_part(rack07_topology):
    snapshot = snapshot_of("seed: 1\nfaults:\n  - {kind: link_totals, link: ct03/gpu1/nvl05, recovery_failed: 2}\n"
                           "  - {kind: link_errors, link: ct03/gpu1/nvl05, symbol_per_s: 5}\n", rack07_topology)
    [suspect] = faults_of(localize_snapshot(snapshot, rack07_topology))
    assert (suspect["component"], suspect["repair"]) == ("rack07/ct03/gpu1/nvl05", "reseat_compute_tray")


def test_a_total_dcgm_only_warns_on_names_nothing(rack07_topology):
    """A successful NVLink 5 recovery since the driver loaded warns (DCGM), so the snapshot, which
    carries what fails, names no part; a failed one (above) does."""
    snapshot = snapshot_of("seed: 1\nfaults:\n  - {kind: link_totals, link: ct03/gpu1/nvl05, recovery_successful: 3}\n",
                           rack07_topology)
    assert "failed_checks" not in _link_row(snapshot, "rack07/ct03/gpu1/nvl05")
    assert faults_of(localize_snapshot(snapshot, rack07_topology)) == []


@pytest.mark.parametrize("fault, check, repair", [
    ("volatile_dbe", "ecc.volatile_dbe_total", "reset_gpu"),          # a reset clears the count (XID 48's workflow)
    ("memory_unrepairable", "memory.unrepairable", "rma_gpu"),       # no spare rows left
])
def test_a_gpu_that_arrived_with_a_memory_fault_gets_its_first_step(fault, check, repair, rack07_topology):
    snapshot = snapshot_of(f"seed: 1\nfaults:\n  - {{kind: {fault}, gpu: ct04/gpu2}}\n", rack07_topology)
    [entry] = [g for g in snapshot["gpus"] if g["id"] == "rack07/ct04/gpu2"]
    assert [c["check"] for c in entry["failed_checks"]] == [check]
    [suspect] = faults_of(localize_snapshot(snapshot, rack07_topology))
    assert (suspect["component"], suspect["repair"]) == ("rack07/ct04/gpu2", repair)
    assert suspect["runbook"] == "runbooks/xid-memory.md"
