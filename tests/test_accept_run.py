"""`opsctl accept`: a burn-in judged by a criteria file, whose report records the criteria's
version and sha256, when and by whom; a resumed acceptance refuses criteria that changed."""

import getpass
import hashlib
import socket

from tests.conftest import assert_one_line_error

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
