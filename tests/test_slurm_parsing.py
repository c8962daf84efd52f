"""The pure parts of the Slurm support: what `scontrol show node` says, what an opsctl reason
holds, which tray a Slurm node is, and how a job's labelled output splits into trays."""

import pytest

from opsctl.errors import InputError
from opsctl.fanout.slurm import task_outcomes
from opsctl.inventory import load_inventory
from opsctl.slurm.containment import Hold, covers, holds_in, reason_of
from opsctl.slurm.scontrol import parse_show_node

# As Debian's slurm-wlm 22.05 prints it (two nodes; the second drained by an operator).
SHOW_NODE = """\
NodeName=rack07-ct01 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=4.83
   State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=rack07

NodeName=rack07-ct05 Arch=x86_64 CoresPerSocket=1
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Reason=fan 3 replaced; State=ok is not a field [root@2026-11-30T23:58:05]
"""


def test_show_node_keeps_a_reason_whole_and_says_who_set_it():
    nodes = parse_show_node(SHOW_NODE)
    assert set(nodes) == {"rack07-ct01", "rack07-ct05"}
    assert not nodes["rack07-ct01"].drained and nodes["rack07-ct01"].reason == ""
    ct05 = nodes["rack07-ct05"]
    assert ct05.drained and ct05.state == "IDLE+DRAIN"
    assert ct05.reason == "fan 3 replaced; State=ok is not a field"
    assert (ct05.reason_by, ct05.reason_at) == ("root", "2026-11-30T23:58:05")


@pytest.mark.parametrize("state, out", [("IDLE", False), ("ALLOCATED", False), ("IDLE+DRAIN", True),
                                        ("MIXED+DRAIN", True), ("DOWN", True), ("IDLE*", True)])
def test_which_states_are_out_of_service(state, out):
    node = parse_show_node(f"NodeName=n1 State={state}\n")["n1"]
    assert node.out_of_service is out


def test_a_reason_round_trips_its_holds():
    holds = [Hold("rack07/st3", "replace_switch_tray"),
             Hold("rack07/ct12/j2", "reseat_compute_tray", "inc-3f9c0e6a21d4b7e8"),
             Hold("rack07/ct17", "health_check", None, "gpu1:memory.remapped_rows")]
    reason = reason_of(holds)
    assert reason == ("opsctl: rack07/st3 replace_switch_tray; rack07/ct12/j2 reseat_compute_tray incident "
                      "inc-3f9c0e6a21d4b7e8; rack07/ct17 health_check gpu1:memory.remapped_rows")
    assert holds_in(reason) == holds
    assert holds_in("fan 3 replaced") is None  # someone else's
    assert holds_in("Opsctl: looks like ours") is None


@pytest.mark.parametrize("asked, held, released", [
    ("rack07/ct12/j2", "rack07/ct12/j2", True),
    ("rack07/ct12", "rack07/ct12/j2", True),   # the tray replaced: its connector's hold goes too
    ("rack07", "rack07/st3", True),            # the rack
    ("rack07/ct1", "rack07/ct12/j2", False),   # a prefix of the name, not of the path
    ("rack07/ct05/gpu1/nvl07", "rack07/ct12/j2", False),
])
def test_which_holds_a_resume_releases(asked, held, released):
    assert covers(asked, held) is released


def test_the_slurm_node_is_the_host_name_unless_the_inventory_says(tmp_path):
    path = tmp_path / "inventory.yaml"
    path.write_text("rack07:\n  vars: {opsctl_model: gb200-nvl72}\n  hosts:\n    rack07-ct01:\n"
                    "    gpu-b12-07: {opsctl_tray: ct03, opsctl_slurm_node: b12n07}\n")
    rack = load_inventory(path).rack("rack07")
    assert rack.tray("ct01").slurm_node == "rack07-ct01"
    assert rack.tray("ct03").slurm_node == "b12n07"
    path.write_text("rack07:\n  vars: {opsctl_model: gb200-nvl72}\n  hosts:\n"
                    "    rack07-ct01: {opsctl_slurm_node: 'b12n07;reboot'}\n")
    with pytest.raises(InputError, match="host rack07-ct01: opsctl_slurm_node: expected `str` matching regex"):
        load_inventory(path)


def test_a_job_s_output_splits_into_trays_and_a_task_that_died_has_no_exit_code():
    stdout = "\n".join([" 0: opsctl-tray ct01", ' 0: {"kind": "run",', ' 0:  "tray": "ct01"}', " 0: opsctl-exit 1",
                        " 1: opsctl-tray ct02", ' 1: {"kind": "run"'])
    stderr = " 1: Killed\nsrun: error: rack07-ct02: task 1: Killed\n"
    outcomes = task_outcomes(stdout, stderr)
    assert outcomes["ct01"] == (1, b'{"kind": "run",\n "tray": "ct01"}', "")
    assert outcomes["ct02"][0] is None and outcomes["ct02"][2] == "Killed"
