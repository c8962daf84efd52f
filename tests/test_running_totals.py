"""The state a GPU arrives in (probes/running_totals.py): each of DCGM 4.6's running-total rules
just below and at its limit, on readings as the reader writes them, and the simulator's faults
that inject each state, read back through NVML as a tray reads it."""

import pytest
import yaml

from probes import running_totals
from probes.sku_references import load_references
from probes.nvml_reader import NvmlReader
from tests.conftest import REPO, read_tray_twice


@pytest.fixture(scope="module")
def gb200():
    return load_references("NVIDIA GB200")


@pytest.fixture(scope="module")
def h100():
    return load_references("NVIDIA H100 80GB HBM3")


def reading(links=(), **fields):
    return {"index": 0, "lost": False, "hung": False, "links": list(links), "ecc": {}, "remapped_rows": None,
            "errors": {}, "power_w": 100.0, **fields}


def nvlink(port, **counters):
    return {"port": port, "counters": counters}


def by_check(checks, name):
    return [c for c in checks if c["check"] == name]


# --- NVLink totals (DCGM MonitorNVLinkErrorFields) ---------------------------------------------
@pytest.mark.parametrize("failed, verdict", [(0, "pass"), (1, "fail")])
def test_a_blackwell_link_that_arrives_with_a_failed_recovery_fails(gb200, failed, verdict):
    links = [nvlink(p, recovery_failed=0, recovery_successful=0) for p in range(18)]
    links[5]["counters"]["recovery_failed"] = failed
    found = by_check(running_totals.arrival_checks("gpu2", reading(links), gb200), "nvlink.total.recovery_failed")
    assert [c["verdict"] for c in found] == [verdict]
    assert found[0]["component"] == ("gpu2/nvl05" if failed else "gpu2")
    assert "MonitorNVLinkErrorFields" in found[0]["source"] and "RECOVERY_FAILED" in found[0]["source"]


@pytest.mark.parametrize("successful, verdict", [(0, "pass"), (1, "warn")])
def test_a_successful_recovery_since_the_driver_loaded_warns(gb200, successful, verdict):
    links = [nvlink(0, recovery_failed=0, recovery_successful=successful)]
    found = by_check(running_totals.arrival_checks("gpu0", reading(links), gb200), "nvlink.total.recovery_successful")
    assert [c["verdict"] for c in found] == [verdict]


def test_issue_case_three_failed_three_successful_fails_and_warns(gb200):
    checks = running_totals.arrival_checks("gpu0", reading([nvlink(7, recovery_failed=3, recovery_successful=3)]), gb200)
    assert {(c["check"], c["verdict"]) for c in checks if c["check"].startswith("nvlink.total")} == {
        ("nvlink.total.recovery_failed", "fail"), ("nvlink.total.recovery_successful", "warn")}


@pytest.mark.parametrize("counter", ["crc_errors", "replay_errors", "recovery_errors"])
@pytest.mark.parametrize("total, verdict", [(0, "pass"), (1, "fail")])
def test_hopper_data_link_totals_fail_above_zero(h100, counter, total, verdict):
    counters = {"crc_errors": 0, "replay_errors": 0, "recovery_errors": 0, counter: total}
    found = by_check(running_totals.arrival_checks("gpu0", reading([nvlink(3, **counters)]), h100), f"nvlink.total.{counter}")
    assert [c["verdict"] for c in found] == [verdict]


def test_blackwell_is_not_judged_on_the_deprecated_data_link_totals(gb200):
    checks = running_totals.arrival_checks("gpu0", reading([nvlink(0, crc_errors=90, recovery_failed=0)]), gb200)
    assert by_check(checks, "nvlink.total.crc_errors") == []


# --- memory, InfoROM, power -----------------------------------------------------------------------
@pytest.mark.parametrize("dbe, verdict", [(0, "pass"), (1, "fail")])
def test_a_volatile_double_bit_error_fails_without_a_row_remap(h100, dbe, verdict):
    rows = {"corrected": 0, "uncorrected": 0, "pending": False, "failure": False}
    checks = running_totals.arrival_checks("gpu0", reading(ecc={"uncorrected_volatile": dbe}, remapped_rows=rows), h100)
    assert [c["verdict"] for c in by_check(checks, "ecc.volatile_dbe_total")] == [verdict]
    assert "MonitorMemVolatileDbes" in by_check(checks, "ecc.volatile_dbe_total")[0]["source"]


@pytest.mark.parametrize("rows, verdict", [(511, "pass"), (512, "warn"), (600, "warn")])
def test_uncorrectable_row_remaps_warn_at_512(gb200, rows, verdict):
    remapped = {"corrected": 0, "uncorrected": rows, "pending": False, "failure": False}
    found = by_check(running_totals.arrival_checks("gpu0", reading(remapped_rows=remapped), gb200),
                     "memory.row_remap_uncorrectable")
    assert [c["verdict"] for c in found] == [verdict]
    assert found[0]["threshold"] == 512 and "DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE" in found[0]["source"]


@pytest.mark.parametrize("flag, verdict", [(False, "pass"), (True, "fail")])
def test_the_memory_unrepairable_flag_fails(gb200, flag, verdict):
    found = by_check(running_totals.arrival_checks("gpu0", reading(memory_unrepairable=flag), gb200), "memory.unrepairable")
    assert [c["verdict"] for c in found] == [verdict]


@pytest.mark.parametrize("valid, verdict", [(True, "pass"), (False, "warn")])
def test_a_corrupt_inforom_warns(gb200, valid, verdict):
    found = by_check(running_totals.arrival_checks("gpu0", reading(inforom_valid=valid), gb200), "inforom.valid")
    assert [c["verdict"] for c in found] == [verdict]


def test_an_unreadable_power_reading_warns_and_not_supported_does_not(gb200):
    unreadable = reading(power_w=None, errors={"nvmlDeviceGetPowerUsage": "Unknown Error"})
    assert [c["verdict"] for c in by_check(running_totals.arrival_checks("gpu0", unreadable, gb200), "power.readable")] == ["warn"]
    unsupported = reading(power_w=None, unsupported=["nvmlDeviceGetPowerUsage"])
    assert by_check(running_totals.arrival_checks("gpu0", unsupported, gb200), "power.readable") == []


# --- DCGM's NVLink 4 CRC warn tier and NVIDIA's NVLink speed ------------------------------------
def window(crc, seconds=10.0):
    return {"window_s": seconds, "links": [{"port": 4, "deltas": {"crc_errors": crc},
                                            "rates_per_s": {"crc_errors": crc / seconds}}]}


@pytest.mark.parametrize("crc, verdict", [(0, "pass"), (1, "warn"), (500, "warn"), (999, "warn"), (1000, "pass")])
def test_hopper_crc_errors_below_100_per_second_warn(h100, crc, verdict):
    # 1000 in 10 s is 100/s: the failing rule (rules.yaml link_counters) has it, not the warn tier.
    found = running_totals.crc_warn_checks("gpu0", window(crc), h100)
    assert [c["verdict"] for c in found] == [verdict]


def test_h100_crc_at_50_per_second_warns(h100):
    assert running_totals.crc_warn_checks("gpu0", window(500), h100)[0]["component"] == "gpu0/nvl04"


def test_the_crc_warn_tier_is_nvlink_4s(gb200):
    assert running_totals.crc_warn_checks("gpu0", window(5), gb200) == []


@pytest.mark.parametrize("sku, expected", [("NVIDIA GB200", 53125), ("NVIDIA H100 80GB HBM3", 26562)])
def test_nvlink_speed_against_nvidias_figure(sku, expected):
    refs = load_references(sku)
    assert running_totals.speed_checks("gpu0", expected, refs)[0]["verdict"] == "pass"
    below = running_totals.speed_checks("gpu0", expected - 1, refs)[0]
    assert below["verdict"] == "fail" and "nvlink_bandwidth_count_speed" in below["source"]
    assert running_totals.speed_checks("gpu0", 25000, load_references("NVIDIA H200")) == []  # NVIDIA gives no H200 figure


# --- the simulator: healthy totals are zero, and each state can be injected ---------------------
def first_reading(sim_rack, faults, tray="ct01", topology=None):
    from probes.sim import SimNvml

    nvml = SimNvml(sim_rack(f"seed: 3\nfaults:\n{faults}" if faults else "seed: 3\n", topology), tray)
    nvml.nvmlInit()
    try:
        return NvmlReader(nvml, now=nvml.rack.clock.now).read_all()
    finally:
        nvml.nvmlShutdown()


def test_healthy_simulated_gpus_carry_no_total_dcgm_judges(sim_rack, gb200):
    for gpu in first_reading(sim_rack, ""):
        checks = running_totals.arrival_checks(f"gpu{gpu.index}", gpu.to_dict(), gb200)
        assert checks and {c["verdict"] for c in checks} == {"pass"}, [c for c in checks if c["verdict"] != "pass"]


def test_healthy_simulated_h100s_carry_no_total_either(sim_rack, hgx_topology, h100):
    for gpu in first_reading(sim_rack, "", tray=None, topology=hgx_topology):
        checks = running_totals.arrival_checks(f"gpu{gpu.index}", gpu.to_dict(), h100)
        assert {c["verdict"] for c in checks} == {"pass"}


def test_each_arrival_state_can_be_injected(sim_rack, gb200):
    faults = ("  - {kind: link_totals, link: ct01/gpu0/nvl03, recovery_failed: 3, recovery_successful: 3}\n"
              "  - {kind: volatile_dbe, gpu: ct01/gpu1}\n"
              "  - {kind: memory_unrepairable, gpu: ct01/gpu2}\n"
              "  - {kind: inforom_invalid, gpu: ct01/gpu3}\n"
              "  - {kind: power_unreadable, gpu: ct01/gpu3}\n")
    readings = first_reading(sim_rack, faults)
    found = {(c["check"], c["component"], c["verdict"]) for gpu in readings
             for c in running_totals.arrival_checks(f"gpu{gpu.index}", gpu.to_dict(), gb200) if c["verdict"] != "pass"}
    assert found == {("nvlink.total.recovery_failed", "gpu0/nvl03", "fail"),
                     ("nvlink.total.recovery_successful", "gpu0/nvl03", "warn"),
                     ("ecc.volatile_dbe_total", "gpu1", "fail"),
                     ("memory.unrepairable", "gpu2", "fail"),
                     ("inforom.valid", "gpu3", "warn"),
                     ("power.readable", "gpu3", "warn")}
    assert readings[1].remapped_rows["uncorrected"] == 0  # a volatile DBE without a row remap


@pytest.mark.parametrize("fault, expect", [
    ("{kind: fabric_degraded, gpu: ct01/gpu0, degraded_bw: false, incorrect_configuration: insufficient_nvlinks}",
     {"incorrect_configuration": True, "degraded_bw": False}),
    ("{kind: fabric_degraded, gpu: ct01/gpu0, degraded_bw: false, route_recovery: true}", {"route_recovery": True}),
    ("{kind: fabric_degraded, gpu: ct01/gpu0, degraded_bw: false, gfm_disconnected: true}", {"gfm_disconnected": True}),
])
def test_the_fabric_flags_nvml_defines_can_be_injected(sim_rack, fault, expect):
    fabric = first_reading(sim_rack, f"  - {fault}\n")[0].fabric
    assert {key: fabric["health"][key] for key in expect} == expect
    assert first_reading(sim_rack, "")[0].fabric["health"]["gfm_disconnected"] is False


@pytest.mark.parametrize("state", ["in_progress", "not_started"])
def test_a_fabric_registration_in_progress_or_not_started_can_be_injected(sim_rack, state):
    fault = f"  - {{kind: fabric_degraded, gpu: ct01/gpu0, degraded_bw: false, state: {state}}}\n"
    assert first_reading(sim_rack, fault)[0].fabric["state"] == state


def test_the_simulator_reports_nvidias_nvlink_speed(sim_rack, hgx_topology):
    from probes.sim import SimNvml

    for topology, expected in ((None, 53125), (hgx_topology, 26562)):
        nvml = SimNvml(sim_rack("seed: 1\n", topology), None)
        nvml.nvmlInit()
        value = nvml.nvmlDeviceGetFieldValues(nvml.nvmlDeviceGetHandleByIndex(0), [nvml.NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON])[0]
        assert value.value.uiVal == expected
        nvml.nvmlShutdown()


def test_a_simulated_gb200_reports_its_pcie_link_as_nvidias_gb200_tray_does(sim_rack):
    # NVIDIA/k8s-test-infra's real-hardware nvidia-smi capture of a GB200 tray: Gen5 x16, max and current.
    from probes.sim import SimNvml

    nvml = SimNvml(sim_rack("seed: 1\n"), "ct01")
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    assert (nvml.nvmlDeviceGetGpuMaxPcieLinkGeneration(handle), nvml.nvmlDeviceGetMaxPcieLinkWidth(handle),
            nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle), nvml.nvmlDeviceGetCurrPcieLinkWidth(handle)) == (5, 16, 5, 16)
    nvml.nvmlShutdown()


def test_the_two_gpus_of_a_superchip_share_its_board_serial(sim_rack, hgx_topology):
    from probes.sim import SimNvml

    nvml = SimNvml(sim_rack("seed: 1\n"), "ct01")
    nvml.nvmlInit()
    serials = [nvml.nvmlDeviceGetSerial(nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(4)]
    nvml.nvmlShutdown()
    assert serials[0] == serials[1] != serials[2] == serials[3]
    hgx = SimNvml(sim_rack("seed: 1\n", hgx_topology), None)
    hgx.nvmlInit()
    assert len({hgx.nvmlDeviceGetSerial(hgx.nvmlDeviceGetHandleByIndex(i)) for i in range(8)}) == 8
    hgx.nvmlShutdown()


def test_every_link_total_the_rulebook_judges_reaches_the_localizer():
    """A burn-in hands a link's failed totals to the localizer as the link's failed checks
    (opsctl/burnin/parts.py): every total the rulebook judges, of either NVLink generation."""
    from opsctl.burnin.parts import LINK_MEASUREMENTS

    book = yaml.safe_load((REPO / "probes/references/rules.yaml").read_text())["running_totals"]["nvlink"]
    judged = {f"nvlink.total.{rule['counter']}" for rules in book.values() for rule in rules}
    assert judged and judged <= set(LINK_MEASUREMENTS)


def test_a_successful_recovery_fails_in_the_window_and_only_warns_as_a_total_before_it(sim_rack, gb200):
    """DCGM 4.6 judges the two apart: MonitorNVLink5Fields fails any recovery event in its window,
    successful or not; MonitorNVLinkErrorFields warns on a successful recovery total. Port 3
    arrived with one successful recovery and is quiet in the window; port 5 recovers in the window."""
    from probes import c2c_link
    from probes.counters import gpu_window
    from probes.tray_judge import judge_gpu

    rack = sim_rack("seed: 3\nfaults:\n  - {kind: link_totals, link: ct01/gpu0/nvl03, recovery_successful: 1}\n"
                    "  - {kind: link_errors, link: ct01/gpu0/nvl05, recovery_successful_per_s: 0.2}\n")
    before, after = read_tray_twice(rack, "ct01", 30)
    entry = {"index": 0, "before": before[0].to_dict(), "counters": gpu_window(before[0], after[0], []),
             "c2c": c2c_link.window(before[0], after[0])}  # the run document's sections these readings make
    bad = {(c["check"], c["component"], c["verdict"]) for c in judge_gpu(entry, gb200, {}) if c["verdict"] != "pass"}
    assert bad == {("nvlink.total.recovery_successful", "gpu0/nvl03", "warn"),
                   ("nvlink.recovery_successful", "gpu0/nvl05", "fail"), ("nvlink.recovery_events", "gpu0/nvl05", "fail")}
