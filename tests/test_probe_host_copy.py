"""Pinned host↔device copies (probes/host_copy.py): judged against half the theoretical figure
of the GPU's best PCIe link, just above and just below it; the simulator's copies slow down with
the link a `pcie_degraded` fault trains; on GB200 (NVLink-C2C) they are shown, not judged; the
torch device really copies (on the CPU here)."""

import pytest

from probes import host_copy
from probes.sku_references import load_references

RULES = load_references().rules
GEN5_X16 = {"generation": 5, "max_generation": 5, "width": 16, "max_width": 16}


def verdicts(found):
    return {c["check"]: c["verdict"] for c in found}


def test_the_theoretical_figure_of_a_gen5_x16_link():
    assert host_copy.pcie_gbps(5, 16) == pytest.approx(63.015, abs=0.001)  # 32 GT/s × 16 × 128/130 / 8
    assert host_copy.pcie_gbps(4, 16) == pytest.approx(host_copy.pcie_gbps(5, 8))
    assert host_copy.pcie_gbps(None, 16) is None and host_copy.pcie_gbps(7, 16) is None


@pytest.mark.parametrize("gbps, verdict", [(31.52, "pass"), (31.5, "fail")])  # floor: 0.5 × 63.015 = 31.51
def test_pinned_copies_against_half_the_best_links_figure(gbps, verdict):
    found = host_copy.checks("gpu0", {"h2d_gbps": gbps, "d2h_gbps": 50.0}, GEN5_X16, RULES)
    assert verdicts(found) == {"host_link.h2d_bandwidth": verdict, "host_link.d2h_bandwidth": "pass"}
    assert found[0]["threshold"] == 31.51 and "h2d_d2h_single_pinned" in found[0]["source"]


def test_without_a_pcie_link_the_copies_are_shown_not_judged():
    assert host_copy.checks("gpu0", {"h2d_gbps": 1.0, "d2h_gbps": 1.0}, None, RULES) == []
    c2c = {"generation": None, "max_generation": None, "width": None, "max_width": None}
    assert host_copy.checks("gpu0", {"h2d_gbps": 1.0, "d2h_gbps": 1.0}, c2c, RULES) == []


def sim_device(sim_rack, topology, text, gpu):
    from probes.compute.sim_device import SimDevice
    from probes.sim import SimComputeDevice

    rack = sim_rack(text, topology=topology)
    return SimDevice(SimComputeDevice(rack, next(g for g in rack.gpus() if g.id == gpu)))


@pytest.mark.parametrize("fault, verdict", [
    ("", "pass"),
    ("{kind: pcie_degraded, gpu: gpu3, width: 8}", "fail"),
    ("{kind: pcie_degraded, gpu: gpu3, gen: 4}", "fail"),
])
def test_the_simulators_copies_follow_the_link_as_trained(sim_rack, hgx_topology, fault, verdict):
    device = sim_device(sim_rack, hgx_topology, f"faults:\n  - {fault}\n" if fault else "seed: 1\n", "hgx01/gpu3")
    measured = host_copy.measure(device, nbytes=2**26, iterations=2)
    assert set(verdicts(host_copy.checks("gpu3", measured, GEN5_X16, RULES)).values()) == {verdict}


def test_gb200_copies_cross_c2c_and_are_measured(sim_rack, rack07_topology):
    device = sim_device(sim_rack, rack07_topology, "seed: 1\n", "rack07/ct01/gpu0")
    measured = host_copy.measure(device, nbytes=2**26, iterations=2)
    assert measured["h2d_gbps"] > host_copy.pcie_gbps(5, 16)  # NVLink-C2C, not PCIe


def test_the_torch_device_really_copies_host_memory():
    from probes.compute.torch_device import TorchDevice

    measured = host_copy.measure(TorchDevice("cpu"), nbytes=2**20, iterations=2)
    assert measured["h2d_gbps"] > 0 and measured["d2h_gbps"] > 0
