"""The acceptance-criteria file: the default loads and is recorded by version and sha256; a
bad file is one clear line and exit 2."""

import hashlib

import pytest

from opsctl.acceptance.criteria import DEFAULT_CRITERIA, load_criteria
from opsctl.errors import InputError
from tests.conftest import assert_one_line_error

GOOD = """criteria: lab-quick
version: 2026.11.2
probes: [gemm, counters]
duration_s: 12
run_timeout_s: 120
rack_relative:
  rules:
    - {metric: gemm_bf16_tflops, worse: lower, pct: 4, robust_sigmas: 5}
"""


def test_the_default_criteria_are_versioned_and_hashed():
    criteria = load_criteria()
    assert criteria.name == "opsctl-default" and criteria.version == "1.1"
    assert criteria.sha256 == hashlib.sha256(DEFAULT_CRITERIA.read_bytes()).hexdigest()
    assert {"gemm", "membw", "nvlink", "counters", "collective"} <= set(criteria.probes)  # collective: the NVLink domain
    assert {r.metric for r in criteria.rules} >= {"gemm_bf16_tflops", "temperature_c", "sm_clock_mhz", "power_w"}
    assert criteria.record()["sha256"] == criteria.sha256


def test_a_criteria_file_of_ones_own(tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD)
    criteria = load_criteria(path)
    assert (criteria.name, criteria.version, criteria.probes, criteria.duration_s) == ("lab-quick", "2026.11.2", ("gemm", "counters"), 12.0)
    [rule] = criteria.rules
    assert (rule.pct, rule.delta, rule.robust_sigmas, rule.verdict) == (4.0, None, 5.0, "fail")


@pytest.mark.parametrize("change, message", [
    (("duration_s: 12", "duration_s: -1"), "duration_s must be a number above 0"),
    (("probes: [gemm, counters]", "probes: [gemm, stress]"), "probes must be a list drawn from"),
    (("run_timeout_s: 120", "run_timeout_s: 10"), "must be longer than duration_s"),
    (("metric: gemm_bf16_tflops", "metric: flops"), "metric must be one of"),
    (("pct: 4", "pct: 4, delta: 3"), "give exactly one of pct"),
    (("version: 2026.11.2\n", ""), "version must be given"),
    (("criteria: lab-quick", "criteria: lab-quick\nthreshold: 3"), "unknown key(s) threshold"),
    (("duration_s: 12", "duration_s: 12\nduration_s: 13"), "duplicate key 'duration_s'"),
])
def test_bad_criteria_are_refused_with_the_reason(tmp_path, change, message):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD.replace(*change))
    with pytest.raises(InputError, match=None) as error:
        load_criteria(path)
    assert message in str(error.value) and str(path) in str(error.value)


def test_accept_with_bad_criteria_is_one_line_and_exit_2(opsctl, tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD.replace("duration_s: 12", "duration_s: soon"))
    assert_one_line_error(opsctl("accept", "rack07", "--criteria", path, "--out", tmp_path / "run"), 2, "duration_s must be a number")
    assert_one_line_error(opsctl("accept", "rack07", "--criteria", tmp_path / "none.yaml"), 2, "no such criteria file")
    assert not (tmp_path / "run").exists()  # nothing started
