"""Tray depth, judged: configuration (ECC, MIG, power limit, clocks), the host link (PCIe
generation, width, replays), the HBM memory test — each a reading just above and just below
its threshold — and the simulator's memory test and deterministic corruption doing real work."""

import threading

import numpy as np
import pytest

from probes import configuration, host_links
from probes.compute.memory_patterns import PATTERNS
from probes.sku_references import load_references
from probes.nvml_reader import NvmlReader
from probes.hbm_checks import hbm_checks

RULES = load_references().rules


def verdicts(found):
    return {c["check"]: c["verdict"] for c in found}


def config(**changes):
    base = {"driver_version": "570.133.20", "vbios": "97.00.A5.00.2F", "inforom": "G548.0201.00.06", "unread": {},
            "ecc_mode": "enabled", "ecc_mode_pending": "enabled", "persistence_mode": "enabled", "mig_mode": "disabled",
            "power_limit_w": 1200.0, "default_power_limit_w": 1200.0, "applications_clocks": "default",
            "applications_clocks_mhz": {"sm": {"mhz": 2062, "default_mhz": 2062}}}
    return {**base, **changes}


def test_a_configured_gpu_passes_every_configuration_check():
    assert set(verdicts(configuration.checks("gpu0", config(), RULES)).values()) == {"pass"}


@pytest.mark.parametrize("changes, name", [
    ({"ecc_mode": "disabled"}, "config.ecc_mode"),
    ({"mig_mode": "enabled"}, "config.mig_mode"),
    ({"power_limit_w": 1199.0}, "config.power_limit"),  # one watt below the default
    ({"applications_clocks": "set"}, "config.applications_clocks"),
])
def test_each_setting_away_from_what_every_gpu_needs_fails(changes, name):
    found = configuration.checks("gpu0", config(**changes), RULES)
    assert verdicts(found)[name] == "fail"
    assert next(c for c in found if c["check"] == name)["source"] == RULES["configuration"][name.split(".")[1]]["source"]


def test_an_ecc_mode_nvml_does_not_give_is_incomplete_never_a_pass():
    found = configuration.checks("gpu0", config(ecc_mode=None, unread={"ecc_mode": "nvmlDeviceGetEccMode: Unknown"}), RULES)
    assert verdicts(found)["config.ecc_mode"] == "incomplete"


def link(**changes):
    return {"generation": 5, "max_generation": 5, "width": 16, "max_width": 16, "replays": 0, "window_s": 60.0,
            "unread": {}, **changes}


@pytest.mark.parametrize("changes, name, verdict", [
    ({"generation": 4}, "host_link.pcie_generation", "fail"),
    ({"generation": 5}, "host_link.pcie_generation", "pass"),
    ({"width": 8}, "host_link.pcie_width", "fail"),
    ({"width": 16}, "host_link.pcie_width", "pass"),
    ({"replays": 9}, "host_link.pcie_replays", "fail"),  # 9 a minute: above DCGM's 8
    ({"replays": 8}, "host_link.pcie_replays", "pass"),
])
def test_the_host_link_against_its_best_and_dcgms_replay_limit(changes, name, verdict):
    assert verdicts(host_links.checks("gpu0", link(**changes), RULES))[name] == verdict


@pytest.mark.parametrize("errors, verdict", [
    ({"correctable": 40, "non_fatal": 0, "fatal": 0}, "pass"),  # correctable: shown, not judged
    ({"correctable": 0, "non_fatal": 1, "fatal": 0}, "fail"),  # one uncorrectable error: above 0
    ({"correctable": 0, "non_fatal": 0, "fatal": 1}, "fail"),
])
def test_any_uncorrectable_pcie_aer_error_over_the_run_fails(errors, verdict):
    found = next(c for c in host_links.checks("gpu0", link(aer_errors=errors), RULES) if c["check"] == "host_link.pcie_aer")
    assert found["verdict"] == verdict and found["threshold"] == 0
    assert f"{errors['correctable']} correctable" in found["reason"] and "Base Specification" in found["source"]


@pytest.mark.parametrize("changes, correctable, verdict", [
    ({}, 32, "pass"), ({}, 33, "fail"),  # a Gen5 x16 GPU: DCGM's 32 a minute
    ({"max_generation": 4, "generation": 4}, 16, "pass"), ({"max_generation": 4, "generation": 4}, 17, "fail"),  # else 16
    ({"window_s": 59.0}, 1000, None),  # under a minute: DCGM does not judge the rate, nor do we
])
def test_correctable_aer_errors_a_minute_against_dcgms_pcie_plugin_limit(changes, correctable, verdict):
    errors = {"correctable": correctable, "non_fatal": 0, "fatal": 0}
    found = verdicts(host_links.checks("gpu0", link(aer_errors=errors, **changes), RULES))
    assert found.get("host_link.pcie_aer_correctable") == verdict and found["host_link.pcie_aer"] == "pass"


def test_aer_counters_not_read_add_no_check_and_say_why():
    assert "host_link.pcie_aer" not in verdicts(host_links.checks("gpu0", link(), RULES))


def read_host_links(sim_rack, hgx_topology, text, seconds):
    from probes.gpu_deadline import GpuWorkers
    from probes.sim import SimNvml
    from probes.tray_depth import DepthReading

    rack = sim_rack(text, topology=hgx_topology)
    nvml = SimNvml(rack)  # the server's one tray
    nvml.nvmlInit()
    reader = NvmlReader(nvml, now=rack.clock.now)
    before = reader.read_all(links=False)
    depth = DepthReading(nvml, reader.handles, before, reader.system(), rack.clock.now, ["configuration"],
                         GpuWorkers("NVML", 10.0))
    rack.clock.advance(seconds)
    gpus = [{"index": r.index} for r in before]
    depth.finish(gpus)
    return gpus


def test_the_simulators_aer_errors_count_on_their_gpu_from_before_to_after(sim_rack, hgx_topology):
    # 6 non-fatal errors a minute over a 20 s window: 2 errors on gpu3, none anywhere else.
    gpus = read_host_links(sim_rack, hgx_topology, "faults:\n  - {kind: pcie_degraded, gpu: gpu3, non_fatal_per_minute: 6}\n", 20)
    assert [g["host_link"]["aer_errors"] for g in gpus][3] == {"correctable": 0, "non_fatal": 2, "fatal": 0}
    assert all(g["host_link"]["aer_errors"] == {"correctable": 0, "non_fatal": 0, "fatal": 0} for i, g in enumerate(gpus) if i != 3)
    aer = [verdicts(host_links.checks(f"gpu{g['index']}", g["host_link"], RULES, required=True))["host_link.pcie_aer"] for g in gpus]
    assert aer == ["pass"] * 3 + ["fail"] + ["pass"] * 4
    assert gpus[3]["host_link"]["width"] == 16  # the AER errors alone: the link still trained at its best


@pytest.mark.slow
def test_a_gpu_whose_nvml_hangs_in_the_configuration_reading_costs_one_deadline_and_is_named(hgx_with_a_gpu_that_hangs):
    import time

    from probes.tray_depth import DepthReading

    # gpu1's driver stops answering 1 s in (wall clock): after the first reading, before the configuration's.
    rack, nvml, reader = hgx_with_a_gpu_that_hangs("gpu1")
    before = reader.read_all(links=False)
    time.sleep(max(0.0, 1.2 - rack.now()))
    began = time.monotonic()
    depth = DepthReading(nvml, reader.handles, before, reader.system(), rack.clock.now, ["configuration"], reader.workers)
    took = time.monotonic() - began
    assert sorted(depth.configs) == [0, 2, 3, 4, 5, 6, 7] and 0.5 <= took < 5  # one deadline for the tray
    assert "configuration reading did not return within 0.5 s" in reader.workers.hung[1]
    assert reader.read_gpu(1).hung  # what follows names it hung, at once


def test_a_pcie_link_that_must_be_read_and_is_not_is_incomplete():
    unread = link(generation=None, max_generation=None, width=None, max_width=None, replays=None,
                  unread={"generation": "Not Supported", "width": "Not Supported"})
    assert set(verdicts(host_links.checks("gpu0", unread, RULES, required=True)).values()) == {"incomplete"}
    assert host_links.checks("gpu0", unread, RULES, required=False) == []  # GB200: C2C, no PCIe link to read


def hbm(errors=0, coverage=0.95, finished=True):
    return {"patterns": {p: {"errors": 0, "seconds": 0.1} for p in PATTERNS}, "errors": errors,
            "error_ranges": [[2**30, 2**30 + 2**20]] if errors else [], "finished": finished,
            "free_bytes": 100 * 2**30, "tested_bytes": int(coverage * 100 * 2**30), "coverage": coverage}


@pytest.mark.parametrize("result, name, verdict", [
    (hbm(errors=1), "hbm.errors", "fail"),
    (hbm(errors=0), "hbm.errors", "pass"),
    (hbm(coverage=0.89), "hbm.coverage", "incomplete"),  # below 90% of free memory: the rest unjudged
    (hbm(coverage=0.90), "hbm.coverage", "pass"),
    (hbm(finished=False), "hbm.finished", "incomplete"),
])
def test_the_memory_test_judged(result, name, verdict):
    counters = {"ecc": {"corrected_volatile": 0, "uncorrected_volatile": 0}, "remapped_rows": {"corrected": 0, "uncorrected": 1, "pending": True}}
    found = hbm_checks("gpu0", result, counters, RULES)
    assert verdicts(found)[name] == verdict
    errors = next(c for c in found if c["check"] == "hbm.errors")
    assert "remap pending" in errors["reason"]  # tied to the run's ECC and remap counters
    if result["errors"]:
        assert "1.000–1.001 GiB" in errors["reason"]


# --- the simulator's side -------------------------------------------------------------------------
def sim_gpu(sim_rack, text, gpu="rack07/ct03/gpu1"):
    from probes.compute.sim_device import SimDevice
    from probes.sim import SimComputeDevice

    rack = sim_rack(text)
    return SimDevice(SimComputeDevice(rack, next(g for g in rack.gpus() if g.id == gpu)))


def test_bad_hbm_cells_read_back_wrong_in_their_range_and_only_where_the_test_reaches(sim_rack):
    device = sim_gpu(sim_rack, "faults:\n  - {kind: hbm_bad_cells, gpu: ct03/gpu1, offset_gib: 100, size_mib: 2}\n")
    free, tested, errors, ranges, _ = device.memory_test("moving_inversions", 0.95, 0)
    assert errors > 0 and ranges == [[100 * 2**30, 100 * 2**30 + 2 * 2**20]]
    healthy = sim_gpu(sim_rack, "seed: 1\n")
    assert healthy.memory_test("random", 0.95, 0)[2] == 0
    # Cells just past what the test reaches are not seen; just inside, they are.
    for offset_gib, seen in ((tested / 2**30 - 0.001, True), (tested / 2**30, False)):
        device = sim_gpu(sim_rack, f"faults:\n  - {{kind: hbm_bad_cells, gpu: ct03/gpu1, offset_gib: {offset_gib}, size_mib: 1}}\n")
        assert (device.memory_test("address_in_address", 0.95, 0)[2] > 0) is seen


def test_every_pattern_writes_a_0_and_a_1_to_every_bit():
    addresses = np.arange(1024, dtype=np.uint64)
    from probes.sim.memory import numpy_words

    for pattern, passes in PATTERNS.items():
        words = [numpy_words(recipe, addresses, 7) for recipe in passes]
        assert np.all(np.bitwise_or.reduce(words) == np.uint64(2**64 - 1)), pattern
        assert np.all(np.bitwise_and.reduce(words) == 0), pattern


def test_a_deterministic_sdc_gpu_agrees_with_itself_and_not_with_its_siblings(sim_rack):
    from probes import gemm

    text = "faults:\n  - {kind: deterministic_sdc, gpu: ct03/gpu1}\n"
    results = {}
    for gpu in ("rack07/ct03/gpu0", "rack07/ct03/gpu1"):
        results[gpu] = gemm.burn(sim_gpu(sim_rack, text, gpu), "bf16", 0.05, 16384, 0.02, threading.Event())
    bad, good = results["rack07/ct03/gpu1"], results["rack07/ct03/gpu0"]
    assert bad["mismatches"] == 0 and good["mismatches"] == 0  # gpu-burn's own check cannot see it
    assert bad["golden_checksum"] != good["golden_checksum"]


def test_the_reference_block_reaches_the_far_end_of_the_result():
    from probes.gemm import spread

    rows = range(16384)[spread(16384, 16)]
    assert len(rows) == 16 and rows[0] == 0 and rows[-1] > 15000


@pytest.mark.slow
def test_the_torch_memory_test_and_checksum_on_the_cpu():
    torch = pytest.importorskip("torch")
    from probes.compute.torch_device import TorchDevice

    device = TorchDevice("cpu")
    for pattern in PATTERNS:
        free, tested, errors, ranges, _ = device.memory_test(pattern, 0.95, 0)
        assert errors == 0 and ranges == [] and tested / free >= 0.9
    a = torch.randn(64, 64).to(torch.bfloat16)
    b = a.clone()
    assert device.checksum(a) == device.checksum(b)
    b.view(torch.int16)[10, 20] ^= 1  # one bit
    assert device.checksum(a) != device.checksum(b)


def test_the_hbm_test_runs_every_pattern_and_each_finds_stuck_cells_on_its_own(sim_rack):
    from probes import hbm_test

    device = sim_gpu(sim_rack, "faults:\n  - {kind: hbm_bad_cells, gpu: ct03/gpu1, offset_gib: 10, size_mib: 1}\n")
    result = hbm_test.run(device, threading.Event(), {})
    assert list(result["patterns"]) == list(PATTERNS) and result["finished"] is True
    for pattern, found in result["patterns"].items():
        assert found["errors"] > 0, pattern  # each pattern alone sees the stuck bit
    assert result["errors"] == sum(found["errors"] for found in result["patterns"].values())
    stopped = threading.Event()
    stopped.set()
    assert hbm_test.run(device, stopped, {})["finished"] is False  # a test cut short never says it finished


@pytest.mark.parametrize("pstate, judged", [(0, True), (None, True), (2, False), (8, False)])
def test_the_link_is_judged_at_p0_only_as_dcgms_pcie_plugin_does(pstate, judged):
    # A Gen4 link on a Gen5 GPU: failed at P0 (and where NVML gives no state), not judged out of
    # P0, where a GPU may slow its link to save power (DCGM: bg_check_pci_link skips the GPU).
    found = verdicts(host_links.checks("gpu0", link(generation=4, width=8, pstate=pstate, read="during the host copies"),
                                       RULES, required=True))
    expected = {"host_link.pcie_generation": "fail", "host_link.pcie_width": "fail"} if judged else {}
    assert {k: v for k, v in found.items() if k in ("host_link.pcie_generation", "host_link.pcie_width")} == expected
    assert found["host_link.pcie_replays"] == "pass"  # the replays are judged whatever the state


def test_the_host_copies_read_the_link_as_they_run_and_that_reading_is_judged(sim_rack, hgx_topology):
    from probes.compute.sim_device import SimDevice
    from probes.gpu_deadline import GpuWorkers
    from probes.host_copy import measure
    from probes.sim import SimComputeDevice, SimNvml
    from probes.tray_depth import DepthReading

    rack = sim_rack("faults:\n  - {kind: pcie_degraded, gpu: gpu3, gen: 4}\n", topology=hgx_topology)
    nvml = SimNvml(rack)
    nvml.nvmlInit()
    reader = NvmlReader(nvml, now=rack.clock.now)
    before = reader.read_all(links=False)
    depth = DepthReading(nvml, reader.handles, before, reader.system(), rack.clock.now, ["configuration"],
                         GpuWorkers("NVML", 10.0))
    for index in (2, 3):
        measure(SimDevice(SimComputeDevice(rack, rack.trays["node"].gpus[index])), 2**20, 2,
                while_copying=lambda index=index: depth.read_during_copies(index))
    gpus = [{"index": r.index} for r in before]
    depth.finish(gpus)
    assert sorted(depth.under_copies) == [2, 3]
    assert [gpus[i]["host_link"]["read"] for i in (1, 2, 3)] == ["at the end of the run"] + ["during the host copies"] * 2
    assert gpus[3]["host_link"]["pstate"] == 0 and gpus[3]["host_link"]["generation"] == 4
    generation = next(c for c in host_links.checks("gpu3", gpus[3]["host_link"], RULES, required=True)
                      if c["check"] == "host_link.pcie_generation")
    assert generation["verdict"] == "fail" and "read during the host copies at P0" in generation["reason"]
    assert "bg_check_pci_link" in generation["source"]
