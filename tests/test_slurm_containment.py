"""Drain and resume against a real slurmctld (tests/slurm_cluster.py): every assertion on a
node reads it back from slurmctld (`scontrol show node`, sinfo), never from opsctl's output."""

import re
import shlex
import subprocess

import yaml

import pytest

from opsctl.inventory import DEFAULT_INVENTORY
from tests.slurm_cluster import NODES

SEEDED = DEFAULT_INVENTORY.parent / "scenarios" / "rack07-seeded.yaml"


def node_of(tray):
    return f"rack07-{tray}"


def inventory(tmp_path, scenario_text=None):
    """rack07, simulated, with this scenario (None: healthy)."""
    lines = ["all:", "  children:", "    rack07:", "      vars:", "        opsctl_model: gb200-nvl72",
             "        opsctl_transport: local", "        opsctl_backend: sim"]
    if scenario_text is not None:
        (tmp_path / "scenario.yaml").write_text(scenario_text)
        lines.append("        opsctl_scenario: scenario.yaml")
    lines += ["      hosts:", "        rack07-ct[01:18]:", "        rack07-st[1:9]:"]
    path = tmp_path / "inventory.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def without_fault(part):
    """The seeded scenario with one fault repaired."""
    scenario = yaml.safe_load(SEEDED.read_text())
    scenario["faults"] = [f for f in scenario["faults"] if f.get("part") != part and f.get("link") != part]
    return yaml.safe_dump(scenario)


@pytest.mark.slow
def test_triage_drain_takes_out_exactly_the_nodes_of_the_parts_it_names(slurm, opsctl, tmp_path):
    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    result = opsctl("triage", "rack07", "--drain", "--json", "--db", db)
    assert result.code == 1, result.err
    faults = [s for s in result.json()["suspects"] if not s.get("alternative_to")]
    # Each part the triage names is served from its own compute tray (a link, a connector, a GPU):
    # the tray is in its id, and its out-of-service unit is that tray or one of its GPUs.
    assert {s["out_of_service"] for s in faults} <= {"gpu", "compute_tray"}
    expected = {node_of(s["component"].split("/")[1]) for s in faults}
    assert {"rack07-ct05", "rack07-ct07", "rack07-ct12"} <= expected
    assert slurm.drained() == sorted(expected)
    for s in faults:
        node = slurm.node(node_of(s["component"].split("/")[1]))
        assert "DRAIN" in node["State"]
        assert node["Reason"].startswith("opsctl: ")
        assert f"{s['component']} {s['repair']} incident inc-" in node["Reason"]
    # The ledger holds when each node went out.
    from opsctl.ledger import open_ledger

    with open_ledger(db, read_only=True) as ledger:
        rows = ledger.records("drains")
    assert {r["node"] for r in rows} == expected and all(r["resumed_at"] is None for r in rows)


def test_a_switch_tray_fault_drains_every_compute_tray_and_its_resume_gives_them_back(slurm, opsctl):
    result = opsctl("drain", "rack07/st3", "--no-ledger")
    assert result.code == 0, result.err
    assert slurm.drained() == sorted(NODES)
    assert {slurm.node(n)["Reason"] for n in NODES} == {"opsctl: rack07/st3 replace_switch_tray"}
    assert opsctl("resume", "rack07/st3", "--no-ledger").code == 0
    assert slurm.drained() == []


@pytest.mark.slow
def test_a_gpu_fault_drains_its_tray_alone(slurm, opsctl):
    assert opsctl("drain", "rack07/ct09/gpu2", "--no-ledger").code == 0
    assert slurm.drained() == ["rack07-ct09"]


def test_dry_run_changes_nothing_and_prints_the_exact_commands(slurm, opsctl):
    result = opsctl("drain", "rack07/ct12/j2", "--dry-run", "--no-ledger")
    assert result.code == 0, result.err
    assert slurm.drained() == []
    commands = [line.split(": ", 1)[1] for line in result.out.splitlines() if line.startswith("would run: ")]
    assert commands == ["scontrol update NodeName=rack07-ct12 State=DRAIN "
                        "'Reason=opsctl: rack07/ct12/j2 reseat_compute_tray'"]
    subprocess.run(shlex.split(commands[0]), check=True, env=slurm.env)  # what it printed is what it would do
    assert slurm.drained() == ["rack07-ct12"]
    assert slurm.node("rack07-ct12")["Reason"] == "opsctl: rack07/ct12/j2 reseat_compute_tray"


def test_a_drain_someone_else_set_is_left_and_reported(slurm, opsctl):
    slurm.drain("rack07-ct05", "fan 3 replaced, waiting on vendor")
    result = opsctl("drain", "rack07/st3", "--no-ledger")
    assert result.code == 0, result.err
    assert "rack07-ct05: left as it is" in result.out and "fan 3 replaced" in result.out
    assert slurm.node("rack07-ct05")["Reason"] == "fan 3 replaced, waiting on vendor"
    # Resuming the whole rack gives back what opsctl drained, never ct05.
    result = opsctl("resume", "rack07", "--no-ledger")
    assert result.code == 0
    assert "rack07-ct05: left drained" in result.out
    assert slurm.drained() == ["rack07-ct05"]
    assert slurm.node("rack07-ct05")["Reason"] == "fan 3 replaced, waiting on vendor"


def test_resuming_one_part_keeps_a_node_another_part_still_holds(slurm, opsctl):
    assert opsctl("drain", "rack07/st3", "--no-ledger").code == 0
    assert opsctl("drain", "rack07/ct12/j2", "--no-ledger").code == 0
    assert slurm.node("rack07-ct12")["Reason"] == \
        "opsctl: rack07/st3 replace_switch_tray; rack07/ct12/j2 reseat_compute_tray"
    assert opsctl("resume", "rack07/st3", "--no-ledger").code == 0
    assert slurm.drained() == ["rack07-ct12"]
    assert slurm.node("rack07-ct12")["Reason"] == "opsctl: rack07/ct12/j2 reseat_compute_tray"


@pytest.mark.slow
def test_repair_close_resumes_the_part_s_node_after_a_passing_validation_and_no_other(slurm, opsctl, tmp_path):
    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    for part in ("rack07/ct12/j2", "rack07/ct05/gpu1/nvl07"):
        assert opsctl("repair", "open", part, "--db", db).code == 0
        assert opsctl("drain", part, "--db", db).code == 0
    assert slurm.drained() == ["rack07-ct05", "rack07-ct12"]
    # No validation yet: the resume is refused (incomplete: nothing has judged the repair), the node
    # stays out, and nothing is recorded back in service — the repair stays open (issue 26).
    result = opsctl("repair", "close", "rack07/ct12/j2", "--resume", "--db", db)
    assert result.code == 3 and "not resuming rack07/ct12/j2's nodes: no complete burn-in" in result.err
    assert "the repair stays open" in result.err
    assert slurm.drained() == ["rack07-ct05", "rack07-ct12"]
    from opsctl.ledger import open_ledger

    with open_ledger(db, read_only=True) as ledger:
        (still,) = ledger.records("repairs", "part = :part", {"part": "rack07/ct12/j2"})
        assert still["closed_at"] is None and still["back_in_service_at"] is None
    # Nor does `opsctl resume` of the rack give them back: nothing has judged either part since its drain.
    result = opsctl("resume", "rack07", "--db", db)
    assert result.code == 3, result.err
    assert "rack07-ct12: left drained, not validated: rack07/ct12/j2: no complete burn-in" in result.out
    assert slurm.drained() == ["rack07-ct05", "rack07-ct12"]
    # The connector reseated: a burn-in of the rack no longer names it (ct05's cable still fails).
    fixed = inventory(tmp_path, without_fault("ct12/j2"))
    burnin = opsctl("burnin", "rack07", "--inventory", fixed, "--duration", "4", "--db", db, "--json")
    assert burnin.code == 1, burnin.err
    assert "rack07/ct12/j2" not in burnin.json()["failing_parts"]
    # The cable the burn-in still fails stays out, whoever asks (exit 1: a run since fails it).
    result = opsctl("resume", "rack07/ct05/gpu1/nvl07", "--db", db)
    assert result.code == 1 and "still fails rack07/ct05/gpu1/nvl07" in result.out, result.out
    assert slurm.drained() == ["rack07-ct05", "rack07-ct12"]
    result = opsctl("repair", "close", "rack07/ct12/j2", "--resume", "--db", db)
    assert result.code == 0 and "resuming rack07/ct12/j2's nodes" in result.err
    assert slurm.drained() == ["rack07-ct05"]
    with open_ledger(db, read_only=True) as ledger:
        rows = {r["node"]: r for r in ledger.records("drains")}
    assert rows["rack07-ct12"]["resumed_at"] is not None and rows["rack07-ct05"]["resumed_at"] is None
    # Said aloud, the operator may still put it back unvalidated.
    result = opsctl("resume", "rack07", "--unvalidated", "--db", db)
    assert result.code == 0 and "without checking each part's validation" in result.err
    assert slurm.drained() == []


@pytest.mark.slow
def test_an_unreachable_controller_is_incomplete_not_done(slurm, opsctl, tmp_path, monkeypatch):
    from tests.conftest import free_port

    conf = tmp_path / "slurm.conf"  # the same cluster, but a controller port nobody listens on
    conf.write_text(re.sub(r"SlurmctldPort=\d+", f"SlurmctldPort={free_port()}", slurm.conf.read_text()))
    monkeypatch.setenv("SLURM_CONF", str(conf))
    result = opsctl("drain", "rack07/ct12/j2", "--no-ledger")
    assert result.code == 3
    assert result.err.startswith("opsctl: scontrol show node rack07-ct12: ") and len(result.err.splitlines()) == 1
