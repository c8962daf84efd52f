"""Judging is a pure function of readings and reference data: each rule at its threshold, the
XID catalog, the peer rule, and the reference files themselves."""

import pytest
import yaml

from probes.link_rules import gpu_link, link_rule_checks
from probes.nvlink_ber import decode_ber
from probes.peer_throughput import peer_medians
from probes.sku_references import load_references, REFERENCES, sku_files
from probes.tray_judge import judge_gpu
from probes.xid_checks import xid_checks
from tests.conftest import PRIVATE_SOURCES, read_tray_twice


@pytest.fixture(scope="module")
def gb200():
    return load_references("NVIDIA GB200")


@pytest.fixture(scope="module")
def h100():
    return load_references("NVIDIA H100 80GB HBM3")


def link(port=0, state="up", ber=1e-15, symbol_ber_raw=None, **deltas):
    window = 10.0
    symbol_ber = None if symbol_ber_raw is None else decode_ber(symbol_ber_raw)
    return {"port": port, "side": "gpu", "state": state, "deltas": deltas,
            "rates_per_s": {k: v / window for k, v in deltas.items()}, "effective_ber": ber,
            "symbol_ber": symbol_ber, "symbol_ber_raw": symbol_ber_raw}


def verdicts(checks):
    return {(c["check"], c["component"]): c["verdict"] for c in checks}




def test_every_reference_file_gives_its_figures_with_sources():
    for path in sku_files():
        data = yaml.safe_load(path.read_text())
        for section in ("nvlink_links", "membw", "nvlink_peer", "collective", "gemm"):
            assert section in data, (path.name, section)
        for figure in (data["nvlink_links"], data["membw"], data["nvlink_peer"], data["collective"], *data["gemm"].values()):
            # A public source: a datasheet, or docs/sources.md, which names it; never a private note.
            assert "datasheet" in figure["source"] or "docs/sources.md" in figure["source"], (path.name, figure)
            assert not any(note in figure["source"] for note in PRIVATE_SOURCES), (path.name, figure)
    assert {p.stem for p in sku_files()} == {"h100", "h200", "b200", "gb200"}
    rules = yaml.safe_load((REFERENCES / "rules.yaml").read_text())
    assert all(rule["source"] for rule in rules["link_counters"])
    # Every rule of the rulebook names a public source, never the team's private notes.
    text = (REFERENCES / "rules.yaml").read_text() + (REFERENCES / "xids.yaml").read_text()
    assert [name for name in PRIVATE_SOURCES if name in text] == []


@pytest.mark.parametrize("name, sku", [("NVIDIA GB200", "gb200"), ("NVIDIA H100 80GB HBM3", "h100"),
                                       ("NVIDIA H200", "h200"), ("NVIDIA B200", "b200"), ("NVIDIA A100-SXM4-80GB", None)])
def test_the_reference_follows_the_gpu_name(name, sku):
    refs = load_references(name)
    assert (refs.sku or {}).get("sku") == sku


@pytest.mark.parametrize("rate, verdict", [(99.9, "pass"), (100.0, "fail")])
def test_crc_errors_fail_at_100_per_second(h100, rate, verdict):
    # An HGX H100's data-link counters (NVLink 4), as DCGM's MonitorNVLink4Fields judges them.
    checks = link_rule_checks([link(3, ber=None, crc_errors=int(rate * 10))], 10.0, h100.rules, gpu_link("gpu1"), "gpu1")
    crc = [c for c in checks if c["check"] == "nvlink.crc_errors"]
    assert len(crc) == 1 and crc[0]["verdict"] == verdict
    assert crc[0]["component"] == ("gpu1/nvl03" if verdict == "fail" else "gpu1")
    assert "DCGM" in crc[0]["source"] and crc[0]["threshold"] == 100


NVLINK5 = ("symbol_errors", "rcv_errors", "malformed_packet_errors", "buffer_overrun_errors",
           "local_link_integrity_errors", "effective_errors", "rcv_remote_errors", "rcv_general_errors")
# What a healthy NVLink 5 link reports over a window: every counter DCGM 4.6's MonitorNVLink5Fields
# reads at 0, and the recovery split NVML also gives.
NVLINK5_CLEAN = {**dict.fromkeys(NVLINK5, 0), "recovery_events": 0, "recovery_failed": 0, "recovery_successful": 0}


@pytest.mark.parametrize("sku, counter, check, count, verdict", [
    # NVLink 5 (GB200): DCGM MonitorNVLink5Fields' counters, and its recovery events: any recovery
    # in the window fails, whether it failed or succeeded ("irrespective of the result").
    *[("gb200", c, c, n, v) for c in NVLINK5 for n, v in ((0, "pass"), (1, "fail"))],
    ("gb200", "recovery_events", "recovery_events", 0, "pass"), ("gb200", "recovery_events", "recovery_events", 1, "fail"),
    ("gb200", "recovery_failed", "link_down_events", 0, "pass"), ("gb200", "recovery_failed", "link_down_events", 1, "fail"),
    ("gb200", "recovery_successful", "recovery_successful", 0, "pass"),
    ("gb200", "recovery_successful", "recovery_successful", 1, "fail"),
    # NVLink 4 (H100): DCGM MonitorNVLink4Fields' data-link replays and recoveries, which Blackwell does not have.
    *[("h100", c, c, n, v) for c in ("replay_errors", "recovery_errors") for n, v in ((0, "pass"), (1, "fail"))],
])
def test_each_nvlink_counter_is_judged_at_dcgms_limit(gb200, h100, sku, counter, check, count, verdict):
    # DCGM_LIMIT_MAX_NVLINK_ERROR = 1: one count in the window is the decision point.
    refs = gb200 if sku == "gb200" else h100
    links = [link(p, **{counter: 0}) for p in range(18)]
    links[7] = link(7, **{counter: count})
    found = verdicts(link_rule_checks(links, 60.0, refs.rules, gpu_link("gpu0"), "gpu0"))
    component = "gpu0/nvl07" if verdict != "pass" else "gpu0"
    assert found[(f"nvlink.{check}", component)] == verdict
    assert "DCGM" in next(r["source"] for r in refs.rules["link_counters"] if r["counter"] == counter)


@pytest.mark.parametrize("ber, verdict", [(1.0e-12, "pass"), (1.1e-12, "fail")])
def test_effective_ber_fails_above_1e_12(gb200, ber, verdict):
    links = [link(p) for p in range(18)]
    links[4] = link(4, ber=ber)
    found = verdicts(link_rule_checks(links, 60.0, gb200.rules, gpu_link("gpu0"), "gpu0"))
    assert found[("nvlink.effective_ber", "gpu0/nvl04" if verdict == "fail" else "gpu0")] == verdict


def ber_code(mantissa, exponent):
    """A symbol BER as NVML packs it (nvml.h NVML_NVLINK_BER_MANTISSA_SHIFT 8, _EXP_SHIFT 0)."""
    return mantissa << 8 | exponent


@pytest.mark.parametrize("raw, verdict", [
    (ber_code(15, 238), "pass"),   # at DCGM's Blackwell floor (DCGM_SYMBOL_BER_FLOOR_EXP_AGGREGATED = 238, mantissa 15)
    (ber_code(1, 237), "fail"),    # just worse: one exponent below the floor
    (ber_code(10, 238), "pass"),   # the same number as 1e-237, but at the floor's exponent: DCGM compares the code
    (ber_code(1, 239), "pass"),    # just better
    (ber_code(0, 5), "pass"),      # a mantissa of 0 is a BER of 0, whatever the exponent
    (ber_code(15, 255), "pass"),   # NVML's zero (DCGM's test_health.py: 4095 is a healthy raw symbol BER)
    (1000, "fail"),                # DCGM's test_health.py error value: 3e-232
    (73710, "pass"),               # DCGM's DcgmHealthWatchTests.cpp, Blackwell: 15e-238 with bits above the 12 read set
    (ber_code(15, 237), "fail"),   # the same test's "worse than floor exponent"
    (ber_code(1, 13), "fail"),     # and its "non-zero symbol BER fails"
    (ber_code(3, 11), "fail"),     # 3e-11: a real link's bad BER
])
def test_symbol_ber_fails_worse_than_dcgms_floor(gb200, raw, verdict):
    # DCGM 4.6 MonitorNVLink5Fields / IsSymbolBerThresholdExceeded, on the packed mantissa and exponent.
    links = [link(p, symbol_ber_raw=0) for p in range(18)]
    links[6] = link(6, symbol_ber_raw=raw)
    checks = link_rule_checks(links, 60.0, gb200.rules, gpu_link("gpu0"), "gpu0")
    [found] = [c for c in checks if c["check"] == "nvlink.symbol_ber"]
    assert found["verdict"] == verdict and found["component"] == ("gpu0/nvl06" if verdict == "fail" else "gpu0")
    assert found["threshold"] == "15e-238" and found["value"] == decode_ber(raw)
    assert "IsSymbolBerThresholdExceeded" in found["source"] and "DCGM_SYMBOL_BER_FLOOR_EXP_AGGREGATED = 238" in found["source"]


def test_a_link_that_reports_no_symbol_ber_is_not_judged_on_it(h100):
    # NVLink 4 (dcgm_fields.h: the symbol BER is 'NVLink5+ only'): nothing to judge, no check.
    checks = link_rule_checks([link(p, ber=None, replay_errors=0) for p in range(18)], 60.0, h100.rules, gpu_link("gpu0"), "gpu0")
    assert not [c for c in checks if c["check"] == "nvlink.symbol_ber"]


@pytest.mark.parametrize("count, verdict", [(0, "pass"), (1, "fail")])
def test_the_gpus_nvlink_ecc_data_total_fails_at_one_error(gb200, count, verdict):
    # DCGM 4.6 MonitorNVLink5Fields: DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL, the GPU's total over all its
    # links: judged on the GPU, which no link of it can be named from.
    links = [link(p, symbol_ber_raw=0, **NVLINK5_CLEAN) for p in range(18)]
    counters = {"window_s": 60.0, "links": links, "xids": [], "nvlink_gpu": {"ecc_data_errors": count}}
    checks = judge_gpu({"index": 0, "counters": counters}, gb200, {})
    [found] = [c for c in checks if c["check"] == "nvlink.gpu.ecc_data_errors"]
    assert (found["component"], found["verdict"], found["value"], found["threshold"]) == ("gpu0", verdict, count, 1)
    assert "DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL" in found["source"] and "MonitorNVLink5Fields" in found["source"]
    assert not [c for c in checks if c["component"].startswith("gpu0/nvl") and c["verdict"] != "pass"]


def test_a_gpu_that_does_not_report_its_nvlink_ecc_total_is_judged_without_it(gb200):
    # Judged where reported, required nowhere: a GPU without it is complete and passes.
    links = [link(p, symbol_ber_raw=0, **NVLINK5_CLEAN) for p in range(18)]
    checks = judge_gpu({"index": 0, "counters": {"window_s": 60.0, "links": links, "xids": [], "nvlink_gpu": {}}}, gb200, {})
    assert not [c for c in checks if c["check"] == "nvlink.gpu.ecc_data_errors"]
    assert {c["verdict"] for c in checks if c["check"].startswith("nvlink")} == {"pass"}


REQUIRED5 = ("symbol_errors", "rcv_errors", "rcv_remote_errors", "rcv_general_errors", "malformed_packet_errors",
             "buffer_overrun_errors", "local_link_integrity_errors", "recovery_events", "recovery_failed", "recovery_successful")


@pytest.mark.parametrize("reported, symbol_ber, verdict", [(REQUIRED5, 0, "pass"), (REQUIRED5, None, "incomplete"),
                                                           (tuple(c for c in REQUIRED5 if c != "rcv_remote_errors"), 0, "incomplete"),
                                                           (tuple(c for c in REQUIRED5 if c != "recovery_events"), 0, "incomplete"),
                                                           (("symbol_errors", "rcv_errors"), 0, "incomplete"), ((), None, "incomplete")])
def test_a_blackwell_gpu_that_does_not_report_its_nvlink5_counters_is_incomplete(gb200, reported, symbol_ber, verdict):
    # Every field of DCGM's MonitorNVLink5Fields that nvml.h gives NVLink 5 undeprecated, the symbol
    # BER (a reading at the window's end, not a delta) among them; the effective ones and the GPU's
    # NVLink ECC total are judged where reported, not required.
    links = [link(p, symbol_ber_raw=symbol_ber, **{c: 0 for c in reported}) for p in range(18)]
    checks = judge_gpu({"index": 0, "counters": {"window_s": 60.0, "links": links, "xids": []}}, gb200, {})
    found = next(c for c in checks if c["check"] == "nvlink.counters_read")
    assert found["verdict"] == verdict
    if symbol_ber is None and verdict == "incomplete":
        assert "symbol_ber on 18 of 18 links" in found["reason"]


def test_a_healthy_gb200_without_data_link_counters_is_judged_complete_and_passing(sim_rack, gb200):
    """Read through the simulated NVML, which answers NOT_SUPPORTED for the data-link counters as a
    Blackwell driver does: every NVLink 5 counter judged, nothing incomplete, nothing failed."""
    from probes import c2c_link
    from probes.counters import gpu_window

    rack = sim_rack("seed: 4\n")
    before, after = read_tray_twice(rack, "ct04", 60)
    for first, last in zip(before, after):
        assert "nvmlDeviceGetNvLinkErrorCounter" in last.unsupported and "crc_errors" in last.links[0].unsupported
        entry = {"index": last.index, "before": first.to_dict(), "counters": gpu_window(first, last, []),
                 "c2c": c2c_link.window(first, last)}  # the run document's sections these readings make
        checks = judge_gpu(entry, gb200, {})
        assert {c["verdict"] for c in checks} == {"pass"}, [c for c in checks if c["verdict"] != "pass"]
        names = {c["check"] for c in checks}
        assert {f"nvlink.{counter}" for counter in NVLINK5} | {"nvlink.total.recovery_failed", "nvlink.counters_read"} <= names
        assert {"nvlink.recovery_events", "nvlink.recovery_successful", "nvlink.symbol_ber", "nvlink.gpu.ecc_data_errors"} <= names
        assert not any(".crc_errors" in name or ".replay_errors" in name or ".recovery_errors" in name for name in names)
        read = next(c for c in checks if c["check"] == "nvlink.counters_read")
        assert read["reason"].endswith("crc_errors, replay_errors, recovery_errors not reported, as NVLink 5 has none")
        assert "nvml-api/change-log.html" in read["source"] and "MonitorNVLinkErrorFields" in read["source"]


@pytest.mark.parametrize("field, verdict", [("NVML_FI_DEV_NVLINK_COUNT_RCV_REMOTE_ERRORS", "incomplete"),
                                            ("NVML_FI_DEV_NVLINK_COUNT_SYMBOL_BER", "incomplete"),
                                            ("NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL", "pass")])
def test_a_gb200_that_answers_not_supported_for_a_new_field(sim_rack, gb200, field, verdict):
    """Read through the simulated NVML: a field NVLink 5 must report (rules.yaml nvlink_required)
    that answers NOT_SUPPORTED leaves its rule unjudged — incomplete; the GPU's NVLink ECC total,
    judged only where reported, leaves the GPU complete and passing."""
    from probes.counters import gpu_window

    rack = sim_rack(f"faults:\n  - {{kind: not_supported, gpu: ct02/gpu1, fields: [{field}]}}\n")
    before, after = read_tray_twice(rack, "ct02", 60)
    assert not after[1].lost and after[1].errors == {}  # recorded as not supported, the reading goes on
    checks = judge_gpu({"index": 1, "counters": gpu_window(before[1], after[1], [])}, gb200, {})
    assert verdicts(checks)[("nvlink.counters_read", "gpu1")] == verdict
    assert not [c for c in checks if c["verdict"] == "fail"]
    if verdict == "pass":
        assert field in after[1].unsupported and not [c for c in checks if c["check"] == "nvlink.gpu.ecc_data_errors"]


def test_a_blackwell_link_that_does_report_a_data_link_counter_is_still_judged_on_it(gb200):
    # Absent is not this generation's; present (an older driver) is evidence, as DCGM's
    # MonitorNVLink4Fields judges whatever the GPU reports.
    links = [link(p, symbol_ber_raw=0, **NVLINK5_CLEAN) for p in range(18)]
    links[2]["deltas"]["replay_errors"] = 1
    checks = judge_gpu({"index": 0, "counters": {"window_s": 10.0, "links": links, "xids": []}}, gb200, {})
    assert verdicts(checks)[("nvlink.replay_errors", "gpu0/nvl02")] == "fail"
    assert verdicts(checks)[("nvlink.counters_read", "gpu0")] == "pass"


@pytest.mark.parametrize("name, device, sku", [
    ("NVIDIA H100 80GB HBM3", "2330", "h100"), ("NVIDIA H100 NVL", "2321", None), ("NVIDIA H100 NVL", "233a", None),
    ("NVIDIA H200", "2335", "h200"), ("NVIDIA H200 NVL", "233b", None), ("NVIDIA GB200", "2941", "gb200"),
    ("NVIDIA B200", "2901", "b200"), ("NVIDIA H100 80GB HBM3", None, "h100"),
])
def test_the_pci_device_id_tells_sxm_from_nvl_parts(name, device, sku):
    # DCGM's diag-skus.yaml.in: the NVL parts have their own device ids and figures.
    assert (load_references(name, device_id=device).sku or {}).get("sku") == sku


def test_one_replay_fails_only_its_link(h100):
    links = [link(p, ber=None, replay_errors=0, crc_errors=1) for p in range(18)]
    links[5] = link(5, ber=None, replay_errors=1, crc_errors=1)
    found = verdicts(link_rule_checks(links, 10.0, h100.rules, gpu_link("gpu2"), "gpu2"))
    assert found[("nvlink.replay_errors", "gpu2/nvl05")] == "fail"
    assert found[("nvlink.crc_errors", "gpu2")] == "pass" and found[("nvlink.state", "gpu2")] == "pass"
    assert not any(component.endswith(("nvl00", "nvl01")) for _, component in found)


def test_one_receive_error_or_a_high_ber_fails_only_its_link(gb200):
    links = [link(p, rcv_errors=0, symbol_errors=0) for p in range(18)]
    links[5] = link(5, rcv_errors=1, symbol_errors=0)
    links[9] = link(9, ber=2e-12, rcv_errors=0, symbol_errors=0)
    found = verdicts(link_rule_checks(links, 10.0, gb200.rules, gpu_link("gpu2"), "gpu2"))
    assert found[("nvlink.rcv_errors", "gpu2/nvl05")] == "fail"
    assert found[("nvlink.effective_ber", "gpu2/nvl09")] == "fail"
    assert found[("nvlink.symbol_errors", "gpu2")] == "pass" and found[("nvlink.state", "gpu2")] == "pass"
    assert not any(component.endswith(("nvl00", "nvl01")) for _, component in found)
    assert not any(check in ("nvlink.crc_errors", "nvlink.replay_errors") for check, _ in found)  # none reported: none judged


@pytest.mark.parametrize("reported, down, verdict", [(18, [], "pass"), (18, [13], "pass"), (18, list(range(18)), "pass"),
                                                     (17, [], "fail"), (0, [], "incomplete")])
def test_a_gpu_fails_its_link_count_only_for_links_it_does_not_report(gb200, reported, down, verdict):
    # Whether a flapping link is down at the moment of reading decides its link's checks, never
    # its GPU's: the GPU fails only when it reports fewer NVLinks than its model has.
    links = [link(p, state="down" if p in down else "up") for p in range(reported)]
    counters = {"window_s": 10.0, "links": links, "xids": []}
    checks = judge_gpu({"index": 0, "counters": counters}, gb200, {})
    gpu_checks = {c["check"]: c["verdict"] for c in checks if c["component"] == "gpu0" and c["check"].startswith("nvlink")}
    assert gpu_checks["nvlink.link_count"] == verdict
    assert all(v != "fail" for name, v in gpu_checks.items() if name != "nvlink.link_count")
    failing_links = {c["component"] for c in checks if c["check"] == "nvlink.state" and c["verdict"] == "fail"}
    assert failing_links == {f"gpu0/nvl{p:02d}" for p in down}


@pytest.mark.parametrize("code, verdict, bucket", [
    (140, "fail", "RESET_GPU"),        # catalog: reset now, not at the next drain
    (150, "fail", "RESET_GPU"),        # NVLink 5 MSE: fatal
    (149, "fail", "RESET_GPU"),        # no sub-code: the catalog's most severe row for 149
    (145, "fail", "RESET_GPU"),        # likewise: some RLW units are fatal
    (147, "warn", "IGNORE"),           # every TREX row is non-fatal
    (121, "warn", "IGNORE"),           # corrected C2C errors: ignore, contact support — not an RMA
    (13, "warn", "RESTART_APP"),
    (63, "warn", "IGNORE"),
    (79, "fail", "RESTART_BM"),
    (48, "fail", "WORKFLOW_XID_48"),
    (154, "warn", "XID_154"),
    (9999, "fail", None),              # not in the catalog: never a pass
    (162, "fail", None),               # listed without a resolution: never a pass
])
def test_xids_are_judged_by_nvidias_catalog(gb200, code, verdict, bucket):
    [found] = xid_checks("gpu0", [{"xid": code}, {"xid": code}], gb200.xids)
    assert (found["verdict"], found["threshold"]) == (verdict, bucket)
    assert "2×" in found["reason"] and "Xid Catalog" in found["source"]
    assert [c["verdict"] for c in xid_checks("gpu0", [], gb200.xids)] == ["pass"]


def _intr_info(unit, version="intrinfo_v2"):
    """An intrInfo register that fits the decode sheet's mask for `unit` (its "-" bits zero)."""
    from probes.xids import catalog
    mask = next(row[version] for row in catalog()["nvlink5_decode"] if row["unit"] == unit)
    return int(mask.replace("-", "0"), 2)


@pytest.mark.parametrize("unit, status, driver, verdict", [
    ("RLW_REMAP", 0x40, 580, "fail"), ("RLW_REMAP", 0x100, 580, "warn"), ("RLW_TAGSTATE", 0x2, 580, "fail"),
    ("RLW_TAGSTATE", 0x10000, 580, "warn"), ("RLW_REMAP", 0x100, None, "warn"),
    ("RLW_REMAP", 0x12345678, 580, "fail"),  # a status no row has: the most severe row
])
def test_an_nvlink5_xid_with_its_kernel_log_registers_is_decoded(gb200, unit, status, driver, verdict):
    event = {"xid": 145, "intr_info": _intr_info(unit), "error_status": status, "driver_major": driver}
    [found] = xid_checks("gpu0", [event], gb200.xids)
    assert found["verdict"] == verdict
    assert (f"unit {unit}" in found["reason"]) == (status != 0x12345678)


def test_either_decode_layout_is_read_whatever_the_drivers_branch():
    """A kernel log keeps lines of an earlier driver; a line in the pre-R575 layout still decodes
    under R580 (tests/test_xid_catalog.py has the lines drivers write)."""
    from probes.xids import decode
    v1, v2 = _intr_info("RLW_REMAP", "intrinfo_v1"), _intr_info("RLW_REMAP", "intrinfo_v2")
    for driver in (570, 580, None):
        assert decode(145, v1, 0x40, driver_major=driver)["unit"] == "RLW_REMAP"
        assert decode(145, v2, 0x40, driver_major=driver)["unit"] == "RLW_REMAP"


def gpu(index, bf16, membw_gbps=6800.0, **more):
    return {"index": index, "gemm": {"bf16": {"tflops_median": bf16, "tflops_min": bf16, "tflops_windows": [bf16] * 4,
                                              "drop_pct": 0.0, "mismatches": 0, "corrupted_results": 0, "checks": 100,
                                              "max_rel_error": 0.002, "tolerance": 0.03, "n": 16384}},
            "membw": {"gbps": membw_gbps}, **more}


def test_a_gpu_slower_than_its_tray_fails_the_peer_rule_even_above_the_reference(gb200):
    gpus = [gpu(0, 1950.0), gpu(1, 1940.0), gpu(2, 1700.0), gpu(3, 1960.0)]
    tray = peer_medians(gpus, gb200)
    found = {i: verdicts(judge_gpu(g, gb200, tray)) for i, g in enumerate(gpus)}
    assert found[2][("gemm.bf16.tflops", "gpu2")] == "pass"  # above 0.75 × the expected 1,946
    assert found[2][("gemm.bf16.tflops.peers", "gpu2")] == "fail"
    assert all(v == "pass" for i in (0, 1, 3) for v in found[i].values())
    skipped = judge_gpu({"index": 0, "gemm": {"fp8": {"skipped": "no fp8"}}}, gb200, {})
    assert skipped == []  # a skip is recorded in the document, never judged a pass


def test_throttling_and_the_fabric_are_judged(gb200):
    hot = gpu(1, 1900.0, under_load={"clocks_event_reasons": ["sw_power_cap", "hw_thermal_slowdown"],
                                     "temperature_c_max": 92, "sm_clock_mhz_median": 1480})
    hot["gemm"]["bf16"]["drop_pct"] = 25.0
    found = verdicts(judge_gpu(hot, gb200, {}))
    assert found[("under_load.clocks_event_reasons", "gpu1")] == "fail"
    assert found[("gemm.bf16.drop_pct", "gpu1")] == "fail"
    capped = gpu(0, 1950.0, under_load={"clocks_event_reasons": ["sw_power_cap"]})
    assert verdicts(judge_gpu(capped, gb200, {}))[("under_load.clocks_event_reasons", "gpu0")] == "pass"
    counters = {"window_s": 60.0, "links": [], "xids": [], "fabric": _fabric(), "ecc": {"uncorrected_volatile": 0, "corrected_volatile": 0},
                "remapped_rows": {"corrected": 0, "uncorrected": 0, "pending": False, "failure": False}}
    found = verdicts(judge_gpu({"index": 3, "counters": counters}, gb200, {}))
    assert found[("fabric.health", "gpu3")] == "pass"
    assert found[("ecc.uncorrected_volatile", "gpu3")] == "pass" and found[("memory.remapped_rows", "gpu3")] == "pass"
    counters["remapped_rows"].update(uncorrected=1, pending=True)
    remap = next(c for c in judge_gpu({"index": 3, "counters": counters}, gb200, {}) if c["check"] == "memory.remapped_rows")
    # The check states what fails it, so a report can print "fails when any of pending, failure".
    assert (remap["verdict"], remap["value"], remap["op"], remap["threshold"]) == ("fail", ["pending"], "any of", ["pending", "failure"])


def _fabric(state="completed", status=0, summary="healthy", **flags):
    health = {"degraded_bw": False, "route_recovery": False, "route_unhealthy": False, "access_timeout_recovery": False,
              "incorrect_configuration": False, **flags}
    return {"state": state, "status": status, "summary": summary, "clique_id": 7, "cluster_uuid": "ab" * 16, "health": health}


@pytest.mark.parametrize("fabric, verdict", [
    (_fabric(), "pass"),
    (_fabric(degraded_bw=True), "fail"), (_fabric(route_recovery=True), "fail"), (_fabric(route_unhealthy=True), "fail"),
    (_fabric(access_timeout_recovery=True), "fail"), (_fabric(incorrect_configuration=True), "fail"),
    (_fabric(summary="limited_capacity"), "warn"), (_fabric(summary="unhealthy"), "fail"),
    (_fabric(status=3), "fail"),                     # completed, but NVML's status is an error
    (_fabric(state="in_progress", status=3), "warn"),  # status is not read before completion
    (_fabric(state="not_started"), "fail"),
    ({"state": "not_supported"}, "incomplete"),      # GB200 must register with its NVL72 fabric
    (None, "incomplete"),                             # the read failed
])
def test_the_fabric_is_judged_by_dcgms_rule(gb200, fabric, verdict):
    counters = {"window_s": 60.0, "links": [], "xids": [], "fabric": fabric}
    assert verdicts(judge_gpu({"index": 3, "counters": counters}, gb200, {}))[("fabric.health", "gpu3")] == verdict


def test_hopper_without_a_fabric_makes_no_fabric_check():
    h100 = load_references("NVIDIA H100 80GB HBM3")
    counters = {"window_s": 60.0, "links": [], "xids": [], "fabric": {"state": "not_supported"}}
    assert not any(c["check"] == "fabric.health" for c in judge_gpu({"index": 0, "counters": counters}, h100, {}))


@pytest.mark.parametrize("missing, verdict", [((), "pass"), (("uncorrected_volatile",), "incomplete")])
def test_unreadable_ecc_is_incomplete_never_a_pass(gb200, missing, verdict):
    ecc = {k: 0 for k in ("uncorrected_volatile", "corrected_volatile") if k not in missing}
    counters = {"window_s": 60.0, "links": [], "xids": [], "ecc": ecc, "remapped_rows": None}
    found = verdicts(judge_gpu({"index": 0, "counters": counters}, gb200, {}))
    assert found[("ecc.uncorrected_volatile", "gpu0")] == verdict
    assert found[("memory.remapped_rows", "gpu0")] == "incomplete"


@pytest.mark.parametrize("action, verdict", [("none", "pass"), ("drain_p2p", "warn"), ("drain_and_reset", "warn"),
                                             ("gpu_reset", "fail"), ("node_reboot", "fail")])
def test_the_gpu_recovery_action_is_judged_by_dcgms_rule(gb200, action, verdict):
    counters = {"window_s": 60.0, "links": [], "xids": [], "recovery_action": action}
    assert verdicts(judge_gpu({"index": 0, "counters": counters}, gb200, {}))[("gpu.recovery_action", "gpu0")] == verdict


@pytest.mark.parametrize("retired, pending, verdict", [(62, False, "pass"), (63, False, "fail"), (0, True, "warn"),
                                                     (63, True, "fail")])
def test_retired_pages_fail_at_dcgms_limit_or_when_pending(gb200, retired, pending, verdict):
    counters = {"window_s": 60.0, "links": [], "xids": [], "retired_pages": {"single_bit": retired, "double_bit": 0, "pending": pending}}
    assert verdicts(judge_gpu({"index": 0, "counters": counters}, gb200, {}))[("memory.retired_pages", "gpu0")] == verdict


def test_a_references_file_of_ones_own_replaces_the_skus(tmp_path):
    strict = tmp_path / "strict.yaml"
    strict.write_text("sku: gb200\ngemm:\n  bf16: {min_tflops: 2400, source: acceptance criteria v3}\n")
    refs = load_references("NVIDIA GB200", strict)
    check = next(c for c in judge_gpu(gpu(0, 1950.0), refs, {}) if c["check"] == "gemm.bf16.tflops")
    assert check["verdict"] == "fail" and check["threshold"] == 2400 and check["source"] == "acceptance criteria v3"


@pytest.mark.parametrize("temperature, incomplete", [(71.0, False), (None, True)])
def test_an_unread_temperature_under_load_is_incomplete(gb200, temperature, incomplete):
    loaded = gpu(0, 1950.0, under_load={"clocks_event_reasons": [], "temperature_c_max": temperature})
    found = verdicts(judge_gpu(loaded, gb200, {}))
    assert (found.get(("under_load.temperature", "gpu0")) == "incomplete") == incomplete


@pytest.mark.parametrize("violation, verdict", [({"thermal": 0.0, "power": 0.0}, "pass"), ({"thermal": 0.5, "power": 0.0}, "warn"),
                                                ({"thermal": 0.0, "power": 2.0}, "pass")])  # the cap at full load
def test_thermal_violation_time_warns_as_dcgm_does(gb200, violation, verdict):
    counters = {"window_s": 60.0, "links": [], "xids": [], "violation_s": violation}
    assert verdicts(judge_gpu({"index": 0, "counters": counters}, gb200, {}))[("clocks.violation_s", "gpu0")] == verdict
