"""JUnit XML of the seeded rack07's burn-in: a testcase per link and per GPU check; the failing
links and GPUs are failures with their reading, threshold and source; the criteria recorded."""

import xml.etree.ElementTree as ET


def test_junit_has_a_testcase_per_link_and_gpu_check(rack07_over_ssh):
    root = ET.parse(rack07_over_ssh.run / "junit.xml").getroot()
    summary = rack07_over_ssh.summary()
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert set(suites) == {"rack07.gpus", "rack07.links", "rack07.trays"}
    links = suites["rack07.links"].findall("testcase")
    assert len(links) == 1296 and suites["rack07.links"].get("failures") == "5"
    failed_links = {case.get("name") for case in links if case.find("failure") is not None}
    assert failed_links == set(summary["failing"]["links"])
    replay = next(c for c in links if c.get("name") == "rack07/ct05/gpu1/nvl07").find("failure")
    assert "replay" in replay.get("message") and "replay_errors" in replay.text

    gpu_cases = suites["rack07.gpus"].findall("testcase")
    gpu_checks = [c for c in summary["checks"] if c["component"] not in {link["id"] for link in summary["links"]}
                  and not c["check"].startswith("tray.")]
    assert len(gpu_cases) == len(gpu_checks) > 72 * 20
    failed_gpus = {case.get("name").split()[0] for case in gpu_cases if case.find("failure") is not None}
    assert failed_gpus == set(summary["failing"]["gpus"])
    slow = next(c for c in gpu_cases if c.get("name") == "rack07/ct15/gpu0 rack.gemm_bf16_tflops").find("failure")
    assert "below the rack median" in slow.get("message") and "source: criteria opsctl-default 1.0" in slow.text

    properties = {p.get("name"): p.get("value") for p in suites["rack07.gpus"].find("properties")}
    assert properties["criteria.version"] == "1.0" and properties["verdict"] == "FAIL"
    assert properties["criteria.sha256"] == summary["criteria"]["sha256"]
