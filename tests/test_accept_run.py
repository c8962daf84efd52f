"""`opsctl accept`: a burn-in judged by a criteria file, whose report records the criteria's
version and sha256, when and by whom; a resumed acceptance refuses criteria that changed."""

import getpass
import hashlib
import socket

import pytest

from tests.conftest import assert_one_line_error

pytestmark = pytest.mark.slow  # simulated runs or real processes: seconds a test

CRITERIA = """criteria: lab-handover
version: "2026.11"
probes: [gemm, membw, nvlink, counters]
duration_s: 2
run_timeout_s: 120
rack_relative:
  rules:
    - {metric: gemm_bf16_tflops, worse: lower, pct: 5, robust_sigmas: 6}
    - {metric: temperature_c, worse: higher, delta: 8, robust_sigmas: 6}
"""


def test_accept_records_the_criteria_and_who_signed_off(opsctl, tmp_path):
    criteria = tmp_path / "criteria.yaml"
    criteria.write_text(CRITERIA)
    run = tmp_path / "run"
    result = opsctl("accept", "hgx01", "--criteria", criteria, "--out", run, "--json")
    assert result.code == 0, result.err
    summary = result.json()
    assert summary["kind"] == "accept" and summary["verdict"] == "PASS" and summary["duration_s"] == 2
    assert summary["criteria"]["name"] == "lab-handover" and summary["criteria"]["version"] == "2026.11"
    assert summary["criteria"]["sha256"] == hashlib.sha256(criteria.read_bytes()).hexdigest()
    assert summary["by"] == f"{getpass.getuser()}@{socket.gethostname()}" and summary["judged"].endswith("Z")
    # Only the rules of these criteria judged the GPUs against each other.
    assert {c["check"] for c in summary["checks"] if c["check"].startswith("rack.")} == {"rack.gemm_bf16_tflops",
                                                                                          "rack.temperature_c"}
    html = (run / "report.html").read_text()
    for text in ("Acceptance report: hgx01", "lab-handover", "2026.11", summary["criteria"]["sha256"], summary["by"]):
        assert text in html

    # Resuming an acceptance whose criteria file changed since would mix two sets of criteria.
    criteria.write_text(CRITERIA.replace("pct: 5", "pct: 3"))
    assert_one_line_error(opsctl("accept", "--resume", run), 2, "changed since run")
    assert_one_line_error(opsctl("burnin", "--resume", run), 2, "is an `opsctl accept` run")


def test_a_trial_acceptance_says_in_every_report_that_it_is_not_the_criterias(opsctl, tmp_path):
    import re
    import xml.etree.ElementTree as ET

    from opsctl.runs.trial import trial_of

    criteria = tmp_path / "criteria.yaml"
    criteria.write_text(CRITERIA.replace("duration_s: 2", "duration_s: 3"))
    run, ledger = tmp_path / "run", tmp_path / "ledger.sqlite"
    result = opsctl("accept", "hgx01", "--criteria", criteria, "--duration", "1", "--out", run, "--json",
                    "--db", f"sqlite:///{ledger}")
    assert result.code == 0, result.err
    summary = result.json()
    assert summary["kind"] == "accept" and summary["verdict"] == "PASS"
    assert trial_of(summary) == {"trial": True, "criteria_duration_s": 3.0, "duration_s": 1.0}
    # A passing acceptance hands the rack over in the ledger: a trial is not recorded there.
    assert "trial acceptance" in result.err and "not recorded in the ledger" in result.err and not ledger.exists()

    html = (run / "report.html").read_text()
    assert "<title>Trial acceptance report: hgx01 PASS</title>" in html
    trial = re.search(r'<p class="trial" id="trial">(.*?)</p>', html).group(1)
    assert "loaded for 1 s, not the 3 s that the criteria lab-handover version 2026.11 (the contract) ask for" in trial
    assert "not an acceptance by these criteria" in trial

    root = ET.parse(run / "junit.xml").getroot()
    assert "trial acceptance" in root.get("name")
    for suite in root.findall("testsuite"):
        properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert (properties["trial"], properties["duration_s"], properties["criteria.duration_s"]) == ("true", "1", "3")

    # The criteria's own duration is no trial.
    full = opsctl("accept", "hgx01", "--criteria", criteria, "--duration", "3", "--out", tmp_path / "full", "--json",
                  "--no-ledger")
    assert full.code == 0, full.err
    assert not trial_of(full.json())["trial"] and 'id="trial"' not in (tmp_path / "full" / "report.html").read_text()
    assert "Acceptance report: hgx01" in (tmp_path / "full" / "report.html").read_text()
    assert_one_line_error(opsctl("accept", "--resume", run, "--duration", "5"), 2, "--duration cannot change a resumed run")
