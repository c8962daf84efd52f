"""The burn-in hands its failing links to the localizer, so the verdict names parts to repair:
the connector whose bent pins made three links fail, not only the three links."""

import pytest


@pytest.mark.slow
def test_the_verdict_names_the_part_behind_the_failing_links(rack07_over_ssh):
    summary = rack07_over_ssh.summary()
    parts = {s["component"]: s for s in summary["suspects"] if not s.get("alternative_to")}
    assert set(parts) == {"rack07/ct12/j2", "rack07/ct05/gpu1/nvl07", "rack07/ct07/gpu0/nvl13",
                          "rack07/ct03/gpu3", "rack07/ct09/gpu2", "rack07/ct15/gpu0", "rack07/ct17/gpu1"}
    connector = parts["rack07/ct12/j2"]
    assert connector["kind"] == "connector" and sorted(connector["links"]) == [
        "rack07/ct12/gpu2/nvl02", "rack07/ct12/gpu3/nvl00", "rack07/ct12/gpu3/nvl04"]
    assert connector["action"] and connector["mttr_hours"] > 0
    assert "rack07/ct12/j2" in summary["failing_parts"]
    assert "rack07/ct12/j2 (connector" in rack07_over_ssh.out
    assert "rack07/ct12/j2" in (rack07_over_ssh.run / "report.html").read_text()


def test_every_failing_gpu_gets_the_repair_of_its_own_fault(rack07_over_ssh):
    """The GPUs that fail on their own account are parts to repair too, each with the action,
    MTTR, blast radius and runbook of its fault."""
    summary = rack07_over_ssh.summary()
    parts = {s["component"]: s for s in summary["suspects"] if not s.get("alternative_to")}
    expected = {"rack07/ct03/gpu3": ("rma_gpu", "runbooks/silent-data-corruption.md", 4),
                "rack07/ct09/gpu2": ("service_cooling", "runbooks/thermal-throttle.md", 4),
                "rack07/ct15/gpu0": ("reset_gpu", "runbooks/slow-gpu.md", 1),
                "rack07/ct17/gpu1": ("reset_gpu", "runbooks/xid-memory.md", 1)}
    for gpu, (repair, runbook, idled) in expected.items():
        s = parts[gpu]
        assert (s["repair"], s["runbook"], s["gpus_idled"]) == (repair, runbook, idled), gpu
        assert s["score"] == 1.0 and s["mttr_hours"] > 0 and s["evidence"][0].startswith("failed ")
        assert gpu in summary["failing_parts"]
    plan = summary["repair_plan"]
    # ct03, ct05, ct07, ct09, ct12 trays (4 GPUs each) and two single GPUs: 22 out, 14 beyond the 8 spares.
    assert (plan["gpus_out"], plan["spare_gpus"], plan["gpus_lost_to_training"]) == (22, 8, 14)
    assert "together" in rack07_over_ssh.out and "14 more than the 8 hot spares" in rack07_over_ssh.out
