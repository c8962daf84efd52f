"""A GPU that failed a rulebook check of its own (a snapshot's `failed_checks`) is a fault to
repair: the localizer names it with the repair of that fault, once, and sums what all the
rack's repairs take out of service against its hot spares."""

import pytest

from opsctl.localize import localize_snapshot


def snapshot(topology, failed=None, bad_links=()):
    """Every link read clean at its GPU end but `bad_links` (one receive error each: NVLink 5, no
    data-link counter on Blackwell); `failed`: {GPU id: [failed check, …]}."""
    links = [{"gpu": link.gpu, "port": link.port, "state": "up", "symbol_errors": 0,
              "rcv_errors": 1 if link_id in bad_links else 0} for link_id, link in sorted(topology.links.items())]
    gpus = [{"id": gpu, "reachable": True, "xids": [], "failed_checks": checks} for gpu, checks in (failed or {}).items()]
    return {"rack": topology.rack, "model": topology.model.name, "window_seconds": 60, "links": links, "gpus": gpus}


def faults(result):
    return {s["component"]: s for s in result["suspects"] if "alternative_to" not in s}


@pytest.mark.parametrize("check, value, repair, runbook", [
    ("gemm.bf16.mismatches", 12, "rma_gpu", "runbooks/silent-data-corruption.md"),
    ("under_load.clocks_event_reasons", ["hw_thermal_slowdown"], "service_cooling", "runbooks/thermal-throttle.md"),
    ("under_load.clocks_event_reasons", ["hw_power_brake_slowdown"], "service_power", "runbooks/power-brake.md"),
    ("memory.remapped_rows", ["pending"], "reset_gpu", "runbooks/xid-memory.md"),
    ("rack.gemm_bf16_tflops", 1695.0, "reset_gpu", "runbooks/slow-gpu.md"),
    ("fabric.health", ["route_unhealthy"], "reseat_compute_tray", "runbooks/fabric-degraded.md"),
    # NVLink data ECC errors NVML counts over all of the GPU's links: no link named, the NVLink workflow's GPU reset first.
    ("nvlink.gpu.ecc_data_errors", 2, "reset_gpu_nvlink", "runbooks/link.md"),
])
def test_a_gpus_own_failure_gets_the_repair_of_its_fault(rack07_topology, check, value, repair, runbook):
    result = localize_snapshot(snapshot(rack07_topology, {"rack07/ct04/gpu1": [{"check": check, "value": value, "reason": "r"}]}),
                               rack07_topology)
    [gpu] = faults(result).values()
    assert gpu["component"] == "rack07/ct04/gpu1" and gpu["score"] == 1.0
    assert (gpu["repair"], gpu["runbook"]) == (repair, runbook)
    assert gpu["evidence"] == [f"failed {check}: r"] and "rulebook" in gpu["judgement"]["judged"]
    assert result["status"] == "faulty"


def test_the_worst_fault_decides_a_gpus_repair(rack07_topology):
    checks = [{"check": "rack.gemm_bf16_tflops", "value": 1.0}, {"check": "gemm.bf16.mismatches", "value": 3}]
    [gpu] = faults(localize_snapshot(snapshot(rack07_topology, {"rack07/ct04/gpu1": checks}), rack07_topology)).values()
    assert gpu["repair"] == "rma_gpu"  # corrupt results outrank slowness


def test_each_failing_gpu_is_named_however_many_there_are(rack07_topology):
    # More than the localizer's limit of inferred faults, and of equal weight: none crowds out another.
    failed = {f"rack07/ct{t:02d}/gpu0": [{"check": "memory.remapped_rows", "value": ["pending"]}] for t in range(1, 10)}
    found = faults(localize_snapshot(snapshot(rack07_topology, failed), rack07_topology))
    assert set(found) == set(failed) and all(s["score"] == 1.0 for s in found.values())


@pytest.mark.parametrize("bad, gpus_out, lost", [
    (("rack07/ct01/gpu0/nvl01",), 4, 0),
    (("rack07/ct01/gpu0/nvl01", "rack07/ct05/gpu2/nvl03"), 8, 0),  # exactly the 8 spares
    (("rack07/ct01/gpu0/nvl01", "rack07/ct05/gpu2/nvl03", "rack07/ct09/gpu1/nvl07"), 12, 4),
])
def test_concurrent_repairs_are_summed_against_the_spares(rack07_topology, bad, gpus_out, lost):
    plan = localize_snapshot(snapshot(rack07_topology, bad_links=bad), rack07_topology)["repair_plan"]
    assert (plan["gpus_out"], plan["spare_gpus"], plan["gpus_lost_to_training"]) == (gpus_out, 8, lost)
    assert ("train on" in plan["advice"]) == (lost == 0)


def test_a_gpu_on_a_tray_already_being_replaced_is_idled_once(rack07_topology):
    failed = {"rack07/ct01/gpu2": [{"check": "memory.remapped_rows", "value": ["pending"]}]}
    result = localize_snapshot(snapshot(rack07_topology, failed, bad_links=("rack07/ct01/gpu0/nvl01",)), rack07_topology)
    assert set(faults(result)) == {"rack07/ct01/gpu0/nvl01", "rack07/ct01/gpu2"}
    assert result["repair_plan"]["gpus_out"] == 4  # the reseat idles ct01 whole; its GPU reset adds nothing


def test_malformed_failed_checks_are_refused_in_one_line(rack07_topology):
    from opsctl.errors import InputError
    document = snapshot(rack07_topology, {"rack07/ct04/gpu1": ["gemm.bf16.mismatches"]})
    with pytest.raises(InputError, match=r"gpus\[\d+\]\.failed_checks\[0\]: expected `object`, got `str`$"):
        localize_snapshot(document, rack07_topology)
