"""The rack-wide collective for real (one process per simulated tray) when a tray goes
wrong: a tray whose result is wrong is named by its own verification; a tray whose GPU hangs
before a collective is named by the others when that collective times out — incomplete, never
a pass — and the domain judge names both with the tray's id."""

import json

import pytest

from opsctl.burnin.nvlink_domain import judge_domain
from opsctl.inventory import load_inventory
from tests.conftest import free_port
from tests.test_probe_collective import finish, simulated_job, spec_file

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test

TRAYS = ["ct01", "ct02"]  # two processes: the least that can name each other
SMALL = ("--sizes", "8K", "--no-bisect")  # one small size: what is judged here is who answered and what came back


def run_job(tmp_path, topology, scenario, *extra, hung=None):
    """Each tray's (exit code, document); a tray whose GPU hangs for good is ended once the
    others have given up on it."""
    job = simulated_job(spec_file(tmp_path, scenario, topology), TRAYS, TRAYS, free_port(), *SMALL, *extra)
    results = {tray: finish(process) for tray, process in job.items() if tray != hung}
    if hung:
        job[hung].kill()
        job[hung].communicate(timeout=30)
    return {tray: (code, json.loads(out)) for tray, (code, out, err) in results.items()}


def domain_checks(results):
    """What the domain judge says of the trays' documents (as nvlink_domain.run_domain_test keeps them)."""
    rack = load_inventory(None).rack("rack07")
    document = {"ran": True, "trays": TRAYS, "collective": {
        tray: {"status": "complete", "reason": None, "document": results[tray][1]} if tray in results else
        {"status": "incomplete", "reason": "ended by the test", "document": None} for tray in TRAYS}}
    checks, _, _ = judge_domain(rack, {}, {}, document)
    return {(c.check, c.component): c for c in checks}


def test_a_tray_whose_result_is_wrong_is_named_by_its_verification(rack07_topology, tmp_path):
    results = run_job(tmp_path, rack07_topology, "faults:\n  - {kind: deterministic_sdc, gpu: ct02/gpu1}\n")
    for tray, (code, document) in results.items():
        verified = [c for c in document["checks"] if c["check"] == "collective.verified"]
        if tray == "ct02":
            assert code == 1 and document["status"] == "complete"
            assert {(w["operation"], w["bytes"]) for w in document["wrong_results"]} == {
                (op, 8192) for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")}
            assert {c["verdict"] for c in verified} == {"fail"}
        else:  # the others got exact results: the corruption is ct02's own
            assert code == 0 and document["wrong_results"] == [] and [c["verdict"] for c in verified] == ["pass"]
    found = domain_checks(results)
    assert found[("collective.verified", "rack07/ct02")].verdict == "fail"
    assert found[("collective.verified", "rack07/ct01")].verdict == "pass"


def test_a_collective_that_times_out_names_the_tray_that_had_not_arrived(rack07_topology, tmp_path):
    results = run_job(tmp_path, rack07_topology, "faults:\n  - {kind: gpu_hang, gpu: ct02/gpu0, nvml: false}\n",
                      "--op-timeout", 8, hung="ct02")  # 8 s: room for both to form the group on a busy machine
    code, document = results["ct01"]
    assert code == 3 and document["status"] == "incomplete"
    assert document["not_arrived"] == ["ct02"] and document["not_joined"] == []
    assert document["timed_out"] == {"operation": "all_reduce", "bytes": 8192}
    assert "tray(s) that had not arrived: ct02" in " ".join(document["errors"])
    assert [c["verdict"] for c in document["checks"]] == ["incomplete"]
    found = domain_checks(results)
    answered = found[("collective.answered", "rack07/ct02")]
    assert answered.verdict == "incomplete" and "had not arrived at the all_reduce" in answered.reason
    assert not any(c.verdict == "pass" for c in found.values())  # nothing was shown to work
