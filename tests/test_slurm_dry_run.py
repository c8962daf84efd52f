"""`--drain --dry-run` of triage and burnin against a real slurmctld (tests/slurm_cluster.py):
the exact scontrol commands are printed and nothing changes — node state is read back from
slurmctld (`scontrol show node`, sinfo) — and running the printed lines drains the nodes."""

import shlex
import subprocess

import pytest

from opsctl.ledger import open_ledger
from tests.conftest import assert_one_line_error
from tests.slurm_cluster import NODES


def would_run(text):
    return [shlex.split(line.split(": ", 1)[1]) for line in text.splitlines() if line.startswith("would run: ")]


def assert_nothing_drained(slurm):
    assert slurm.drained() == []
    for node in NODES:  # each node as slurmctld reports it, not only sinfo's summary
        assert "DRAIN" not in slurm.node(node)["State"]


def nodes_of(parts):
    """Each part here is served from one compute tray, named in its id (rack07/ct12/j2 → rack07-ct12)."""
    assert all(part.split("/")[1].startswith("ct") for part in parts), parts
    return sorted({f"rack07-{part.split('/')[1]}" for part in parts})


@pytest.mark.slow
def test_triage_drain_dry_run_prints_the_commands_and_changes_nothing(slurm, opsctl, tmp_path):
    db = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    result = opsctl("triage", "rack07", "--drain", "--dry-run", "--db", db, "--json")
    assert result.code == 1, result.err
    faults = [s for s in result.json()["suspects"] if not s.get("alternative_to")]
    commands = would_run(result.err)  # with --json the drain speaks on stderr
    assert commands and all(argv[:2] == ["scontrol", "update"] for argv in commands)
    # It says only what it would do: no node "drained" that was not (issue 26).
    nodes = [line for line in result.err.splitlines() if line.startswith("rack07-ct")]
    assert nodes and all(": would drain: opsctl: " in line for line in nodes), nodes
    assert_nothing_drained(slurm)
    with open_ledger(db, read_only=True) as ledger:
        assert ledger.records("drains") == []  # the triage is recorded, no drain is
        assert ledger.records("incidents")
    for argv in commands:  # what it printed is what a drain does
        subprocess.run(argv, check=True, env=slurm.env, capture_output=True)
    assert slurm.drained() == nodes_of([s["component"] for s in faults])
    for s in faults:
        reason = slurm.node(f"rack07-{s['component'].split('/')[1]}")["Reason"]
        assert reason.startswith("opsctl: ") and f"{s['component']} {s['repair']} incident inc-" in reason


@pytest.mark.slow
def test_burnin_drain_dry_run_prints_the_commands_and_changes_nothing(slurm, opsctl):
    result = opsctl("burnin", "rack07", "--duration", "4", "--drain", "--dry-run", "--no-ledger", "--json")
    assert result.code == 1, result.err
    failing = result.json()["failing_parts"]
    commands = would_run(result.err)
    assert commands
    assert_nothing_drained(slurm)
    for argv in commands:
        subprocess.run(argv, check=True, env=slurm.env, capture_output=True)
    assert slurm.drained() == nodes_of(failing)


@pytest.mark.parametrize("command", [["triage", "rack07"], ["burnin", "rack07"], ["accept", "rack07"]])
def test_dry_run_without_drain_is_refused_before_anything_runs(opsctl, command, tmp_path):
    result = opsctl(*command, "--dry-run", "--out" if command[0] != "triage" else "--save", tmp_path / "out")
    assert_one_line_error(result, 2, "--dry-run goes with --drain")
    assert not (tmp_path / "out").exists()


def test_a_dry_run_needs_no_controller_and_says_it_could_not_check(opsctl_process, tmp_path):
    """No Slurm client at all here (PATH without scontrol): the dry run still prints the commands,
    says it could not check current drains, and exits 0; a real drain is incomplete (exit 3)."""
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPSCTL_INVENTORY"}
    env["PATH"] = os.path.dirname(sys.executable)
    dry = opsctl_process("drain", "rack07/ct12/j2", "--dry-run", "--no-ledger", env=env)
    assert dry.code == 0, dry.err
    lines = dry.out.splitlines()
    assert lines[0].startswith("could not check current drains (scontrol not found")
    assert lines[1] == ("would run: scontrol update NodeName=rack07-ct12 State=DRAIN "
                        "'Reason=opsctl: rack07/ct12/j2 reseat_compute_tray'")
    assert lines[2] == "rack07-ct12: would drain: opsctl: rack07/ct12/j2 reseat_compute_tray"
    resume = opsctl_process("resume", "rack07/ct12/j2", "--dry-run", "--no-ledger", "--json", env=env)
    assert resume.code == 0 and resume.json()["checked_current_drains"] is False
    assert resume.json()["commands"] == ["scontrol update NodeName=rack07-ct12 State=RESUME"]
    real = opsctl_process("drain", "rack07/ct12/j2", "--no-ledger", env=env)
    assert real.code == 3 and "scontrol not found" in real.err
