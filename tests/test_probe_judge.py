"""Judging is a pure function of readings and reference data: each rule at its threshold, the
XID catalog, the peer rule, and the reference files themselves."""

import pytest
import yaml

from probes.judge import (REFERENCES, judge_gpu, link_rule_checks, gpu_link, load_references, peer_medians,
                          sku_files, xid_checks)


@pytest.fixture(scope="module")
def gb200():
    return load_references("NVIDIA GB200")


def link(port=0, state="up", ber=1e-15, **deltas):
    window = 10.0
    return {"port": port, "side": "gpu", "state": state, "deltas": deltas,
            "rates_per_s": {k: v / window for k, v in deltas.items()}, "effective_ber": ber}


def verdicts(checks):
    return {(c["check"], c["component"]): c["verdict"] for c in checks}


def test_every_reference_file_gives_its_figures_with_sources():
    for path in sku_files():
        data = yaml.safe_load(path.read_text())
        for section in ("nvlink_links", "membw", "nvlink_peer", "collective", "gemm"):
            assert section in data, (path.name, section)
        for figure in (data["nvlink_links"], data["membw"], data["nvlink_peer"], data["collective"], *data["gemm"].values()):
            assert "FIGURES.md" in figure["source"] or "datasheet" in figure["source"], (path.name, figure)
    assert {p.stem for p in sku_files()} == {"h100", "h200", "b200", "gb200"}
    rules = yaml.safe_load((REFERENCES / "rules.yaml").read_text())
    assert all(rule["source"] for rule in rules["link_counters"])


@pytest.mark.parametrize("name, sku", [("NVIDIA GB200", "gb200"), ("NVIDIA H100 80GB HBM3", "h100"),
                                       ("NVIDIA H200", "h200"), ("NVIDIA B200", "b200"), ("NVIDIA A100-SXM4-80GB", None)])
def test_the_reference_follows_the_gpu_name(name, sku):
    refs = load_references(name)
    assert (refs.sku or {}).get("sku") == sku


@pytest.mark.parametrize("rate, verdict", [(99.9, "pass"), (100.0, "fail")])
def test_crc_errors_fail_at_100_per_second(gb200, rate, verdict):
    checks = link_rule_checks([link(3, crc_errors=int(rate * 10))], 10.0, gb200.rules, gpu_link("gpu1"), "gpu1")
    crc = [c for c in checks if c["check"] == "nvlink.crc_errors"]
    assert len(crc) == 1 and crc[0]["verdict"] == verdict
    assert crc[0]["component"] == ("gpu1/nvl03" if verdict == "fail" else "gpu1")
    assert "DCGM" in crc[0]["source"] and crc[0]["threshold"] == 100


def test_one_replay_or_a_high_ber_fails_only_its_link(gb200):
    links = [link(p, replay_errors=0, crc_errors=1) for p in range(18)]
    links[5] = link(5, replay_errors=1, crc_errors=1)
    links[9] = link(9, ber=2e-12, replay_errors=0, crc_errors=1)
    found = verdicts(link_rule_checks(links, 10.0, gb200.rules, gpu_link("gpu2"), "gpu2"))
    assert found[("nvlink.replay_errors", "gpu2/nvl05")] == "fail"
    assert found[("nvlink.effective_ber", "gpu2/nvl09")] == "fail"
    assert found[("nvlink.crc_errors", "gpu2")] == "pass" and found[("nvlink.state", "gpu2")] == "pass"
    assert not any(component.endswith(("nvl00", "nvl01")) for _, component in found)


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


def test_xids_are_judged_by_the_catalog(gb200):
    events = [{"xid": 145}, {"xid": 145}, {"xid": 149}, {"xid": 63}, {"xid": 9999}]
    checks = {c["value"]: c for c in xid_checks("gpu0", events, gb200.xids)}
    assert checks[149]["verdict"] == "fail" and "NETIR_LINK_DOWN" in checks[149]["reason"]
    assert checks[145]["verdict"] == "warn" and "2×" in checks[145]["reason"]  # downstream, not the origin
    assert checks[63]["verdict"] == "warn" and checks[9999]["verdict"] == "warn"
    assert [c["verdict"] for c in xid_checks("gpu0", [], gb200.xids)] == ["pass"]


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
    fabric = {"state": "completed", "summary": "limited_capacity", "clique_id": 7,
              "health": {"degraded_bw": True, "route_recovery": False, "route_unhealthy": False,
                         "access_timeout_recovery": False}}
    counters = {"window_s": 60.0, "links": [], "xids": [], "fabric": fabric, "ecc": {"uncorrected_volatile": 0},
                "remapped_rows": {"corrected": 0, "uncorrected": 0, "pending": False, "failure": False}}
    found = verdicts(judge_gpu({"index": 3, "counters": counters}, gb200, {}))
    assert found[("fabric.health", "gpu3")] == "warn"
    assert found[("ecc.uncorrected_volatile", "gpu3")] == "pass" and found[("memory.remapped_rows", "gpu3")] == "pass"
    fabric["health"]["route_unhealthy"] = True
    assert verdicts(judge_gpu({"index": 3, "counters": counters}, gb200, {}))[("fabric.health", "gpu3")] == "fail"
    counters["remapped_rows"].update(uncorrected=1, pending=True)
    remap = next(c for c in judge_gpu({"index": 3, "counters": counters}, gb200, {}) if c["check"] == "memory.remapped_rows")
    # The check states what fails it, so a report can print "fails when any of pending, failure".
    assert (remap["verdict"], remap["value"], remap["op"], remap["threshold"]) == ("fail", ["pending"], "any of", ["pending", "failure"])


def test_a_references_file_of_ones_own_replaces_the_skus(tmp_path):
    strict = tmp_path / "strict.yaml"
    strict.write_text("sku: gb200\ngemm:\n  bf16: {min_tflops: 2400, source: acceptance criteria v3}\n")
    refs = load_references("NVIDIA GB200", strict)
    check = next(c for c in judge_gpu(gpu(0, 1950.0), refs, {}) if c["check"] == "gemm.bf16.tflops")
    assert check["verdict"] == "fail" and check["threshold"] == 2400 and check["source"] == "acceptance criteria v3"
