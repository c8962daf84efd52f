"""The JUnit XML's structure, as CI dashboards read it: every <testsuite> has testcases; a
classname names its part once (no suite or rack name doubled in front) and belongs to one
suite; a testcase's name is unique in its class; each suite's tests/failures/errors/skipped and
the root's totals agree with the testcases; properties come first. Checked on the seeded rack07
(FAIL), a healthy HGX (PASS, no switch trays) and a rack whose trays did not all report."""

import copy
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from opsctl.reports.junit import render_junit

COUNTS = ("tests", "failures", "errors", "skipped")


def assert_junit_structure(root, rack):
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert suites and len(root) == len(suites)
    totals = Counter()
    owner = {}  # classname -> the suite it belongs to
    for suite in suites:
        name = suite.get("name")
        cases = suite.findall("testcase")
        assert cases, f"empty suite {name}"
        assert suite[0].tag == "properties" and all(child.tag == "testcase" for child in suite[1:]), name
        counted = {"tests": len(cases),
                   "failures": sum(c.find("failure") is not None for c in cases),
                   "errors": sum(c.find("error") is not None for c in cases),
                   "skipped": sum(c.find("skipped") is not None for c in cases)}
        assert {key: int(suite.get(key)) for key in COUNTS} == counted, name
        totals.update(counted)
        names = Counter((c.get("classname"), c.get("name")) for c in cases)
        assert max(names.values()) == 1, [key for key, n in names.items() if n > 1][:5]
        for case in cases:
            classname = case.get("classname")
            assert classname == rack or classname.startswith(f"{rack}."), classname  # an HGX tray is its rack: hgx01
            assert classname.count(rack) == 1 and not classname.startswith(name + "."), classname  # nothing doubled
            assert owner.setdefault(classname, name) == name, f"{classname} in {owner[classname]} and {name}"
            assert case.get("name") and not case.get("name").startswith(rack), case.get("name")
            outcomes = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
            assert len(outcomes) <= 1 and all(child.get("message") for child in case if child.tag in outcomes)
    assert {key: int(root.get(key)) for key in COUNTS} == {key: totals[key] for key in COUNTS}


def test_the_seeded_rack07s_junit_is_well_formed(rack07_over_ssh):
    root = ET.parse(rack07_over_ssh.run / "junit.xml").getroot()
    assert_junit_structure(root, "rack07")
    assert root.get("failures") == str(1 + 5 + sum(1 for c in rack07_over_ssh.summary()["checks"]
                                                 if c["verdict"] == "fail" and "/nvl" not in c["component"]))


@pytest.mark.slow
def test_a_passing_hgx_and_a_rack_with_trays_missing(opsctl, tmp_path):
    result = opsctl("burnin", "hgx01", "--duration", "2", "--out", tmp_path / "run", "--no-ledger", "--json")
    assert result.code == 0, result.err
    root = ET.parse(tmp_path / "run" / "junit.xml").getroot()
    assert_junit_structure(root, "hgx01")
    assert [s.get("name") for s in root.findall("testsuite")] == ["hgx01.rack", "hgx01.gpus", "hgx01.links"]
    assert root.get("failures") == "0" and root.get("errors") == "0"

    # The same rack with its one tray unreported: the tray is an error, its GPUs' checks are
    # gone, and no suite is left empty.
    summary = copy.deepcopy(result.json())
    summary.update(verdict="INCOMPLETE", exit_code=3, links=[], checks=[{
        "check": "tray.reported", "component": "hgx01", "verdict": "incomplete", "value": "incomplete", "unit": "",
        "threshold": "complete", "op": "!=", "source": "opsctl", "reason": "hgx01 did not report: timed out",
        "judged_by": "opsctl"}])
    summary["failing"]["trays"] = ["hgx01"]
    root = ET.fromstring(render_junit(summary))
    assert_junit_structure(root, "hgx01")
    assert [s.get("name") for s in root.findall("testsuite")] == ["hgx01.rack", "hgx01.trays"]
    assert root.get("errors") == "2"  # the verdict (INCOMPLETE is never a pass) and the tray


@pytest.mark.slow
def test_xid_checks_of_one_gpu_are_named_by_their_code(opsctl, tmp_path):
    result = opsctl("burnin", "hgx01", "--duration", "2", "--out", tmp_path / "run", "--no-ledger", "--json")
    summary = result.json()
    xid = {"check": "xid", "component": "hgx01/gpu3", "verdict": "fail", "unit": "XID", "threshold": None, "op": "logged",
           "source": "catalog", "judged_by": "probe"}
    summary["checks"] = [c for c in summary["checks"] if c["check"] not in ("xid", "xid.recorded")] + [
        {**xid, "value": 79, "reason": "XID 79"}, {**xid, "value": 79, "reason": "XID 79 again"},
        {**xid, "value": 48, "reason": "XID 48"}, {**xid, "check": "xid.recorded", "value": 79, "reason": "XID 79 before"}]
    root = ET.fromstring(render_junit(summary))
    assert_junit_structure(root, "hgx01")
    names = [c.get("name") for c in root.iter("testcase") if c.get("classname") == "hgx01.gpu3" and c.get("name").startswith("xid")]
    assert names == ["xid 79", "xid 79 #2", "xid 48", "xid.recorded 79"]
