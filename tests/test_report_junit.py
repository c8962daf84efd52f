"""JUnit XML of the seeded rack07's burn-in: a testcase per link and per GPU check; the failing
links and GPUs are failures with their reading, threshold and source; the criteria recorded.
(Its structure — no empty suite, one class per part, counts that agree — is test_junit_structure.py's.)"""

import xml.etree.ElementTree as ET


def test_junit_has_a_testcase_per_link_and_gpu_check(rack07_over_ssh):
    root = ET.parse(rack07_over_ssh.run / "junit.xml").getroot()
    summary = rack07_over_ssh.summary()
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    # Every tray reported: no trays suite (it would be empty).
    assert set(suites) == {"rack07.rack", "rack07.gpus", "rack07.links", "rack07.switches"}
    [verdict] = suites["rack07.rack"].findall("testcase")
    assert (verdict.get("classname"), verdict.get("name")) == ("rack07.rack", "verdict")
    assert "rack07 FAIL" in verdict.find("failure").get("message")

    links = suites["rack07.links"].findall("testcase")
    assert len(links) == 1296 and suites["rack07.links"].get("failures") == "5"
    failed_links = {f"{case.get('classname').removesuffix('.nvlink').replace('.', '/')}/{case.get('name')}"
                    for case in links if case.find("failure") is not None}
    assert failed_links == set(summary["failing"]["links"])
    # The marginal cable, in the NVLink 5 counters a GB200 has (no data-link replay or CRC counter).
    cable = next(c for c in links if (c.get("classname"), c.get("name")) == ("rack07.ct05.gpu1.nvlink", "nvl07"))
    message, text = cable.find("failure").get("message"), cable.find("failure").text
    assert "symbol errors" in message and "rcv errors" in message and "rcv_errors" in text and "replay" not in text
    assert "link rack07/ct05/gpu1/nvl07 → rack07/st" in text

    gpu_ids = {gpu["id"] for gpu in summary["gpus"]}
    gpu_cases = suites["rack07.gpus"].findall("testcase")
    assert len(gpu_cases) == sum(1 for c in summary["checks"] if c["component"] in gpu_ids) > 72 * 20
    failed_gpus = {case.get("classname").replace(".", "/") for case in gpu_cases if case.find("failure") is not None}
    assert failed_gpus == set(summary["failing"]["gpus"])
    slow = next(c for c in gpu_cases if (c.get("classname"), c.get("name")) == ("rack07.ct15.gpu0", "rack.gemm_bf16_tflops"))
    failure = slow.find("failure")
    assert "below the rack median" in failure.get("message") and "source: criteria opsctl-default 1.2" in failure.text
    # A switch chip's checks, and a switch tray's own (its firmware against the rack's), are the
    # switches', not a GPU's or a tray's that did not report.
    assert {c.get("classname") for c in suites["rack07.switches"].findall("testcase")} == \
        {f"rack07.st{n}.sw{k}" for n in range(1, 10) for k in (0, 1)} | {f"rack07.st{n}" for n in range(1, 10)}

    for suite in suites.values():
        properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert properties["criteria.version"] == "1.2" and properties["verdict"] == "FAIL"
        assert properties["criteria.sha256"] == summary["criteria"]["sha256"]
        assert properties["trial"] == "false" and properties["duration_s"] == "16" and properties["criteria.duration_s"] == "900"
