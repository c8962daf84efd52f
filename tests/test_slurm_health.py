"""`opsctl health`: the tray judged from NVML alone, and, with --slurm, its own node drained and
resumed in a real slurmctld (tests/slurm_cluster.py) as NHC would — node state read back from
slurmctld."""

import pytest

from tests.test_slurm_containment import inventory


@pytest.mark.slow
def test_a_tray_with_a_failing_gpu_is_unhealthy_and_drains_its_node(slurm, opsctl):
    result = opsctl("health", "rack07/ct17", "--slurm", "--json")
    assert result.code == 1, result.err
    failing = result.json()["failing"]
    # The rulebook's own check, with its reading, threshold and source (the GPU's pending row remap).
    assert [(c["component"], c["check"]) for c in failing] == [("gpu1", "memory.remapped_rows")]
    assert failing[0]["source"]
    assert slurm.drained() == ["rack07-ct17"]
    assert slurm.node("rack07-ct17")["Reason"] == "opsctl: rack07/ct17 health_check gpu1:memory.remapped_rows"


@pytest.mark.slow
def test_a_healthy_tray_passes_and_its_node_stays_in_service(slurm, opsctl):
    result = opsctl("health", "rack07/ct01", "--slurm")
    assert result.code == 0, result.err
    assert "healthy" in result.out
    assert slurm.drained() == []


@pytest.mark.slow
def test_healthy_again_resumes_only_a_node_the_health_check_drained(slurm, opsctl, tmp_path):
    assert opsctl("health", "rack07/ct17", "--slurm").code == 1
    # Its hold is the health check's to release: a resume of the rack leaves it (issue 26).
    kept = opsctl("resume", "rack07", "--db", tmp_path / "ledger.sqlite")
    assert kept.code == 3 and "rack07-ct17: left drained, not validated: rack07/ct17: held by its health check" in kept.out
    assert slurm.drained() == ["rack07-ct17"]
    slurm.drain("rack07-ct01", "memory test by the site team")
    assert opsctl("drain", "rack07/ct12/j2", "--no-ledger").code == 0
    healthy = inventory(tmp_path)  # rack07 after its repairs: no fault left
    for tray in ("ct17", "ct01", "ct12"):
        result = opsctl("health", f"rack07/{tray}", "--slurm", "--inventory", healthy)
        assert result.code == 0, result.err
    # ct17 was drained by its own health check: back. ct01 by someone else, ct12 for a repair: left.
    assert slurm.drained() == ["rack07-ct01", "rack07-ct12"]
    assert slurm.node("rack07-ct01")["Reason"] == "memory test by the site team"
    assert slurm.node("rack07-ct12")["Reason"] == "opsctl: rack07/ct12/j2 reseat_compute_tray"


def test_a_tray_not_in_the_inventory_is_bad_input(opsctl):
    result = opsctl("health", "rack07/ct99")
    assert result.code == 2 and len(result.err.splitlines()) == 1
