"""The NVLink domain test's decisions (nvlink_domain.py, probes/collective.py): the bisection's
margin, NCCL's transport lines, the prerequisites; and the new scenario fault kinds compiled."""

import pytest

from opsctl.burnin.nvlink_domain import blocking, prerequisites, slow_tray
from opsctl.inventory import load_inventory
from opsctl.simulation import compile_rack_spec
from opsctl.simulation.scenario import scenario_from_text
from probes.collective import busbw, nccl_paths, parse_sizes, slower_half
from probes.sku_references import load_references

MARGIN = load_references().rules["collective_trays"]["max_below_pct"]


@pytest.mark.parametrize("slow, expected", [(900 * (1 - MARGIN / 100) - 1, 1), (900 * (1 - MARGIN / 100) + 1, None)])
def test_a_half_is_slower_only_beyond_the_margin(slow, expected):
    assert slower_half(900.0, slow, MARGIN) == expected
    assert slower_half(slow, 900.0, MARGIN) == (None if expected is None else 0)


def test_bus_bandwidth_follows_nccl_tests_formulas():
    assert busbw("all_reduce", 100.0, 72) == pytest.approx(100 * 2 * 71 / 72)
    for op in ("all_gather", "reduce_scatter", "all_to_all"):
        assert busbw(op, 100.0, 8) == pytest.approx(100 * 7 / 8)
    assert parse_sizes("8K,1M, 4G") == [8192, 2**20, 4 * 2**30]


def test_nccl_lines_say_which_path_each_channel_took():
    lines = ["host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/MNNVL/read",
             "host:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
             "host:1:1 [0] NCCL INFO NVLS multicast support is available on dev 0", "NCCL INFO Bootstrap : Using eth0"]
    assert nccl_paths(lines) == {"paths": {"NET/IB": 1, "P2P/MNNVL": 1}, "nvls": True}
    assert nccl_paths([]) == {"paths": {}, "nvls": False}


def test_the_bisection_names_a_tray_only_when_it_narrowed_to_one():
    def half(trays, bw):
        return {"trays": trays, "gpus": 4 * len(trays), "busbw_gbps": bw}

    narrowed = [{"halves": [half(["ct01"], 850), half(["ct02", "ct03"], 690)], "slower": 1},
                {"halves": [half(["ct02"], 690), half(["ct03"], 850)], "slower": 0}]
    assert slow_tray(narrowed) == {"tray": "ct02", "busbw_gbps": 690, "other_gbps": 850}
    assert slow_tray(narrowed[:1]) is None  # a half of two trays: not one tray yet
    assert slow_tray([{"halves": [half(["ct01"], 850), half(["ct02"], 849)], "slower": None}]) is None


def _gpu(state="completed", status=0, clique=7, cluster="ab" * 16):
    return {"counters": {"fabric": {"state": state, "status": status, "clique_id": clique, "cluster_uuid": cluster}}}


def test_prerequisites_say_why_the_load_does_not_run():
    rack = load_inventory(None).rack("rack07")
    trays = rack.model.compute_tray_names()
    gpus = {rack.model.gpu_id("rack07", i): _gpu() for i in range(72)}
    systems = {t: {"driver_version": "570.133.20"} for t in trays}
    imex = {t: {"service": "active", "channels": ["channel0"], "checks": [{"verdict": "pass", "reason": "ok"}]} for t in trays}
    assert blocking(prerequisites(rack, gpus, systems, imex)) == []
    gpus["rack07/ct06/gpu2"] = _gpu(clique=9)
    gpus["rack07/ct08/gpu1"] = _gpu(state="in_progress")
    systems["ct11"] = {"driver_version": "570.86.10"}
    imex["ct04"] = {"service": "inactive", "channels": [],
                    "checks": [{"verdict": "fail", "reason": "nvidia-imex is inactive"}]}
    del imex["ct05"]  # its IMEX state never came back
    reasons = blocking(prerequisites(rack, gpus, systems, imex))
    assert len(reasons) == 4
    assert "rack07/ct04: IMEX nvidia-imex is inactive" in reasons[0] and "rack07/ct05" in reasons[0]
    assert "rack07/ct08/gpu1: fabric in_progress" in reasons[1]
    assert "rack07/ct06/gpu2 is in clique 9" in reasons[2]
    assert "rack07/ct11 runs driver 570.86.10" in reasons[3]


def test_the_domain_fault_kinds_compile_to_what_the_hardware_shows(rack07_topology):
    spec = compile_rack_spec(scenario_from_text(
        "faults:\n  - {kind: imex_missing, tray: ct04}\n  - {kind: fabric_clique, gpu: ct06/gpu2, clique_id: 9}\n"
        "  - {kind: nccl_fallback}\n  - {kind: switch_chip_degraded, part: st3/sw0, factor: 0.5}\n"), rack07_topology)
    assert spec.domain == {"imex_missing": ["ct04"], "nccl_fallback": True}
    gpu = spec.tray("ct06").gpus[2]
    assert [(e.kind, e.params) for e in gpu.effects] == [("fabric", {"clique_id": 9})]
    degraded = [link for tray in spec.trays for g in tray.gpus for link in g.links
                if any(e.kind == "bandwidth" for e in link.effects)]
    assert len(degraded) == 72 and {link.remote_switch for link in degraded} == {"rack07/st3/sw0"}
