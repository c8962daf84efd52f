"""The alert rules: valid for promtool, a passing promtool unit test for every alert, the fields
every alert carries, and XID tiers that agree with the exporter's XID catalog."""

import re
import subprocess

import pytest
import yaml

from exporters.alert_rules import RULES_DIR, rule_files, runbook_file
from exporters.xid_catalog import XIDS

# The runbooks/ files agreed with the runbooks' author (issue 6 brief).
AGREED_RUNBOOKS = {
    "link.md", "gpu.md", "compute-tray.md", "connector.md", "cartridge.md", "switch-chip.md", "switch-tray.md",
    "baseboard.md", "xid-74-nvlink.md", "xid-79-fell-off-bus.md", "xid-memory.md", "xid-gsp.md", "xid-nvlink5.md",
    "xid-149-link-down.md", "xid-154-recovery-action.md", "thermal-throttle.md", "power-brake.md",
    "fabric-degraded.md", "silent-data-corruption.md", "slow-gpu.md", "gpu-missing.md", "exporter-down.md",
}


def rules(kind):
    found = []
    for path in rule_files():
        for group in yaml.safe_load(path.read_text())["groups"]:
            found += [(path.name, rule) for rule in group["rules"] if kind in rule]
    return found


def unit_tests():
    return [yaml.safe_load(path.read_text()) for path in sorted((RULES_DIR / "tests").glob("*.yml"))]


def test_promtool_accepts_the_rules_and_their_unit_tests_pass():
    check = subprocess.run(["promtool", "check", "rules", *rule_files()], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    tests = subprocess.run(["promtool", "test", "rules", *sorted((RULES_DIR / "tests").glob("*.yml"))],
                           capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout + tests.stderr


def test_every_alert_has_a_case_that_fires_and_one_that_does_not():
    fires, quiet = set(), set()
    for document in unit_tests():
        for case in document["tests"]:
            for check in case.get("alert_rule_test", []):
                (fires if check["exp_alerts"] else quiet).add(check["alertname"])
    alerts = {rule["alert"] for _, rule in rules("alert")}
    assert alerts - fires == set() and alerts - quiet == set()
    recorded = {check["expr"] for document in unit_tests() for case in document["tests"]
                for check in case.get("promql_expr_test", [])}
    assert {rule["record"] for _, rule in rules("record")} <= recorded


@pytest.mark.parametrize("file,rule", rules("alert"), ids=lambda r: r["alert"] if isinstance(r, dict) else r)
def test_every_alert_says_how_bad_what_and_why_and_links_its_runbook(file, rule):
    assert rule["alert"].startswith("Opsctl")
    assert rule["labels"]["severity"] in ("critical", "warning")
    annotations = rule["annotations"]
    assert {"summary", "description", "threshold", "source", "runbook_url"} <= set(annotations)
    assert runbook_file(annotations["runbook_url"]) in AGREED_RUNBOOKS
    assert annotations["runbook_url"] == f"runbooks/{runbook_file(annotations['runbook_url'])}"


def test_xid_alerts_follow_the_catalog_tiers_and_runbooks():
    alerted = {}
    for _, rule in rules("alert"):
        match = re.search(r'opsctl_gpu_xid_last_seen_timestamp_seconds\{xid=~?"([^"]+)"\}', rule["expr"])
        for code in match.group(1).split("|") if match else ():
            assert int(code) not in alerted, f"XID {code} in two alerts"
            alerted[int(code)] = (rule["labels"]["severity"], runbook_file(rule["annotations"]["runbook_url"]))
    expected = {code: (xid.tier, xid.runbook) for code, xid in XIDS.items() if xid.tier != "info"}
    assert alerted == expected
    assert {code for code, xid in XIDS.items() if xid.tier == "critical"} >= {48, 62, 64, 74, 79, 95, 119, 120, *range(144, 151)}


def test_every_metric_and_alert_is_documented():
    from exporters.metrics import METRICS

    documented = (RULES_DIR.parent / "README.md").read_text()
    names = [*METRICS, *(rule["alert"] for _, rule in rules("alert"))]
    assert [name for name in names if f"`{name}`" not in documented] == []
