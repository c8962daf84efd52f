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
    assert criteria.name == "opsctl-default" and criteria.version == "1.2"
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
    (("duration_s: 12", "duration_s: -1"), "duration_s: expected `float` > 0.0"),
    (("probes: [gemm, counters]", "probes: [gemm, stress]"), "probes[1]: invalid enum value 'stress'"),
    (("run_timeout_s: 120", "run_timeout_s: 10"), "must be longer than duration_s"),
    (("metric: gemm_bf16_tflops", "metric: flops"), "rack_relative.rules[0].metric: invalid enum value 'flops'"),
    (("pct: 4", "pct: 4, delta: 3"), "give exactly one of pct"),
    (("version: 2026.11.2\n", ""), "object missing required field `version`"),
    (("criteria: lab-quick", "criteria: lab-quick\nthreshold: 3"), "object contains unknown field `threshold`"),
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
    assert_one_line_error(opsctl("accept", "rack07", "--criteria", path, "--out", tmp_path / "run"), 2, "duration_s: expected `float`, got `str`")
    assert_one_line_error(opsctl("accept", "rack07", "--criteria", tmp_path / "none.yaml"), 2, "no such criteria file")
    assert not (tmp_path / "run").exists()  # nothing started


def test_the_schema_names_the_probes_and_metrics_the_code_runs():
    from typing import get_args

    from opsctl.acceptance.criteria import PROBES
    from opsctl.acceptance.criteria_schema import Metric, Probe
    from opsctl.burnin.rack_relative import METRICS

    assert get_args(Probe) == PROBES and get_args(Metric) == tuple(METRICS)


@pytest.mark.parametrize("change, message", [
    (("pct: 4", "pct: 1000.001"), "rack_relative.rules[0].pct: expected `float` <= 1000.0"),
    (("robust_sigmas: 5", "robust_sigmas: 0"), "rack_relative.rules[0].robust_sigmas: expected `float` > 0.0"),
    (("rules:", "min_gpus: 2\n  rules:"), "rack_relative.min_gpus: expected `int` >= 3"),
    (("run_timeout_s: 120", "run_timeout_s: 12"), "run_timeout_s (12) must be longer than duration_s (12)"),
])
def test_a_bound_just_past_is_refused(tmp_path, change, message):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD.replace(*change))
    with pytest.raises(InputError) as error:
        load_criteria(path)
    assert message in str(error.value) and str(error.value).startswith(str(path))


def test_the_bounds_themselves_and_a_numeric_version_are_read(tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD.replace("pct: 4", "pct: 1000").replace("rules:", "min_gpus: 3\n  rules:")
                    .replace("run_timeout_s: 120", "run_timeout_s: 12.001").replace("version: 2026.11.2", "version: 1.5"))
    criteria = load_criteria(path)
    assert (criteria.rules[0].pct, criteria.min_gpus, criteria.run_timeout_s, criteria.version) == (1000.0, 3, 12.001, "1.5")
