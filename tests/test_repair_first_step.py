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
from test_localize import snapshot_of  # noqa: E402  the module's snapshot cache: healthy trays are read once

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
