"""Decision points that a suite of healthy racks never reaches: the rack-relative rule's
robust-σ arm (a rack whose healthy spread is wider than the fixed margin), and the NVLink
link-traffic bar at exactly 75% of the GPU's median link."""

import statistics
from pathlib import Path

import pytest

from opsctl.acceptance.criteria import Criteria, RelativeRule
from opsctl.burnin.rack_relative import MAD_TO_SIGMA, RackGpu, judge_rack_relative
from probes.nvlink_bw import peer_copy_checks as _nvlink_checks
from probes.sku_references import load_references

RULE = RelativeRule(metric="membw_gbps", worse="lower", pct=2.0, delta=None, robust_sigmas=3.0, verdict="fail")


def criteria(rule=RULE):
    return Criteria(name="test", version="1", description="", probes=(), duration_s=1.0, run_timeout_s=60.0,
                    warnings_fail=False, min_gpus=8, rules=(rule,), relative_source="test", path=Path("test.yaml"),
                    sha256="0" * 64)


def rack(values):
    return [RackGpu(id=f"r/gpu{i}", sku="NVIDIA H100", reading={"membw": {"gbps": v}}) for i, v in enumerate(values)]


# A healthy rack with a wide spread: median 3000, MAD 60 → σ ≈ 89 GB/s, 3σ ≈ 267 GB/s, far wider
# than the 2% (60 GB/s) fixed margin.
WIDE = [2940.0, 2940.0, 2940.0, 3000.0, 3000.0, 3000.0, 3060.0, 3060.0, 3060.0]


def spread_limit(values):
    median = statistics.median(values)
    return median - RULE.robust_sigmas * MAD_TO_SIGMA * statistics.median(abs(v - median) for v in values)


@pytest.mark.parametrize("offset, verdict", [(+1.0, "pass"), (-1.0, "fail")])
def test_the_spread_arm_decides_when_the_rack_is_wider_than_the_fixed_margin(offset, verdict):
    limit = spread_limit(WIDE + [3000.0])  # one more GPU at the median hardly moves it
    values = WIDE + [round(limit + offset, 1)]
    checks, _ = judge_rack_relative(rack(values), criteria())
    last = next(c for c in checks if c.component == f"r/gpu{len(values) - 1}")
    # Well past the 2% margin (2,940 GB/s) in both cases: only the spread arm can pass the first.
    assert last.value < 3000.0 * 0.98 - 100
    assert last.verdict == verdict, (last.value, last.threshold)
    assert "robust σ" in last.source


def test_a_narrow_rack_is_judged_by_the_fixed_margin():
    values = [3000.0] * 9 + [3000.0 * 0.98 - 1.0]  # MAD 0: the 2% margin is the bar
    checks, _ = judge_rack_relative(rack(values), criteria())
    assert [c.verdict for c in checks if c.component == "r/gpu9"] == ["fail"]
    values[-1] = 3000.0 * 0.98 + 1.0
    checks, _ = judge_rack_relative(rack(values), criteria())
    assert [c.verdict for c in checks if c.component == "r/gpu9"] == ["pass"]


@pytest.mark.parametrize("share, failing", [(0.7499, ["gpu0/nvl03"]), (0.7501, [])])
def test_a_link_is_degraded_just_under_75_percent_of_its_gpus_median_link(share, failing):
    refs = load_references("NVIDIA H100 80GB HBM3")
    links = {str(port): 40.0 for port in range(18)}
    links["3"] = round(40.0 * share, 4)
    checks = [c for c in _nvlink_checks("gpu0", {"link_gbps": links}, refs) if c["check"] == "nvlink.link_traffic"]
    assert sorted(c["component"] for c in checks if c["verdict"] == "fail") == failing
    assert all(c["threshold"] == 30.0 for c in checks)  # 75% of the 40 GB/s median
