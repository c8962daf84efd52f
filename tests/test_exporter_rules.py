"""The alert rules: valid for promtool, a passing promtool unit test for every alert, the fields
every alert carries, XID alerts generated from NVIDIA's XID catalog, and NVLink, memory, fabric
and recovery-action alerts that agree with the rulebook (probes/references/rules.yaml)."""

import importlib.util
import re
import subprocess

import pytest
import yaml

from exporters.alert_rules import RULES_DIR, rule_files, runbook_file
from exporters.xid_catalog import XIDS
from probes.xids import catalog as xid_catalog
from tests.conftest import PRIVATE_SOURCES

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


@pytest.mark.slow
def test_promtool_accepts_the_rules_and_their_unit_tests_pass():
    check = subprocess.run(["promtool", "check", "rules", *rule_files()], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    tests = subprocess.run(["promtool", "test", "rules", *sorted((RULES_DIR / "tests").glob("*.yml"))],
                           capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout + tests.stderr


@pytest.mark.slow
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


XID_SELECTOR = re.compile(r'opsctl_gpu_xid_last_seen_timestamp_seconds\{xid(=~|=|!~)"([^"]+)"\}')


def xid_rules_generator():
    spec = importlib.util.spec_from_file_location("make_xid_rules", RULES_DIR / "make_xid_rules.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_xid_alerts_follow_the_catalog_tiers_and_runbooks():
    generator = xid_rules_generator()
    # xid.yml and its promtool tests are what the generator writes from the catalog, today.
    assert (RULES_DIR / "xid.yml").read_text(encoding="utf-8") == generator.render_rules()
    assert (RULES_DIR / "tests" / "xid_test.yml").read_text(encoding="utf-8") == generator.render_tests()

    alerted, unlisted = {}, []
    for _, rule in rules("alert"):
        for op, codes in XID_SELECTOR.findall(rule["expr"]):
            if op == "!~":
                unlisted.append((rule, {int(code) for code in codes.split("|")}))
                continue
            for code in codes.split("|"):
                assert int(code) not in alerted, f"XID {code} in two alerts"
                alerted[int(code)] = (rule["labels"]["severity"], runbook_file(rule["annotations"]["runbook_url"]))
    # Every catalog code that is not info alerts with its catalog tier and runbook; none else.
    expected = {code: (xid.tier, xid.runbook) for code, xid in XIDS.items() if xid.tier != "info"}
    assert alerted == expected
    # Any code the catalog does not list: one alert, at the catalog's `unlisted` tier.
    [(rule, listed)] = unlisted
    assert listed == set(xid_catalog()["xids"]) == set(XIDS)
    assert rule["labels"]["severity"] == xid_catalog()["unlisted"]["alert"] == "critical"
    assert runbook_file(rule["annotations"]["runbook_url"]) == xid_catalog()["default_runbook"]
    # The catalog's calls: 140 and the fatal NVLink 5 codes reset the GPU now; 121 is corrected C2C.
    assert all(alerted[code][0] == "critical" for code in (140, 144, 145, 146, 149, 150))
    assert alerted[121][0] != "critical" and alerted[147][0] == alerted[148][0] == "warning"
    assert {code for code, xid in XIDS.items() if xid.tier == "critical"} >= {48, 62, 64, 74, 79, 95, 119, 120, 136, 140}
    # The promtool tests see 140 fire as critical and a code outside the catalog fire.
    [document] = [yaml.safe_load((RULES_DIR / "tests" / "xid_test.yml").read_text())]
    fired = {(check["alertname"], alert["exp_labels"]["xid"], alert["exp_labels"]["severity"])
             for case in document["tests"] for check in case["alert_rule_test"] for alert in check["exp_alerts"]}
    assert ("OpsctlXidMemoryCritical", "140", "critical") in fired
    outside = {int(xid) for name, xid, severity in fired if name == generator.UNLISTED_ALERT and severity == "critical"}
    assert outside and not outside & set(XIDS)
    assert not {xid for _, xid, _ in fired} & {str(code) for code, xid in XIDS.items() if xid.tier == "info"}


# --- the rulebook (probes/references/rules.yaml) and the NVLink, memory and fabric alerts ------
SEVERITY = {"fail": "critical", "warn": "warning"}
COUNTER_TERM = re.compile(r'(increase|rate)\((opsctl_[a-z_]+_total)\[\w+\]\)(?:, "counter", "([a-z_]+)", "", ""\))?'
                          r'\s*(>=|>|==)\s*([0-9.e+-]+)')


def rulebook():
    return yaml.safe_load((RULES_DIR.parent.parent / "probes" / "references" / "rules.yaml").read_text())


def alerts_matching(pattern):
    """[(alert rule, match)] for every alert whose expression matches `pattern`."""
    return [(rule, match) for _, rule in rules("alert") for match in re.finditer(pattern, rule["expr"])]


def test_nvlink_counter_alerts_follow_the_rulebook():
    from exporters.metrics import LINK_COUNTERS, METRICS

    terms = {}
    for _, rule in rules("alert"):
        for function, metric, label, op, threshold in COUNTER_TERM.findall(rule["expr"]):
            terms.setdefault(metric, []).append((rule, function, label, op, float(threshold)))
    for counter_rule in rulebook()["link_counters"]:
        counter = counter_rule["counter"]
        metric = LINK_COUNTERS[counter][0]  # every counter the rulebook judges is exported
        assert metric in METRICS, counter
        [(alert, function, label, op, threshold)] = terms.get(metric, [(None,) * 5])
        assert alert is not None, f"no alert judges {counter} ({metric})"
        assert function == ("rate" if counter_rule.get("per_second") else "increase"), counter
        assert (op, threshold) == (counter_rule["op"], float(counter_rule["threshold"])), counter
        assert alert["labels"]["severity"] == SEVERITY[counter_rule["verdict"]], counter
        if label:  # an alert over several counters names the one that rose
            assert label == counter
            dcgm_function = re.match(r"DCGM (?:[\d.]+ )?(\w+)", counter_rule["source"]).group(1)
            assert dcgm_function.startswith("Monitor") and dcgm_function in alert["annotations"]["source"], counter
        else:
            assert alert["annotations"]["source"] == counter_rule["source"], counter
    ber = rulebook()["effective_ber"]
    [(alert, match)] = alerts_matching(r"opsctl_nvlink_effective_bit_error_ratio\s*(>=|>)\s*([0-9.e+-]+)")
    assert (match.group(1), float(match.group(2))) == (ber["op"], ber["threshold"])
    assert alert["labels"]["severity"] == "critical" and alert["annotations"]["source"] == ber["source"]
    # The symbol BER at DCGM's floor: a non-zero BER with an exponent below the floor's (the floor's
    # mantissa, 15, is the most NVML's 4-bit mantissa holds, so nothing at the floor's exponent fails).
    symbol = rulebook()["symbol_ber"]
    assert symbol["floor_mantissa"] == 15 == 2**4 - 1
    [(alert, match)] = alerts_matching(r"opsctl_nvlink_symbol_bit_error_ratio > 0 and opsctl_nvlink_symbol_ber_exponent < (\d+)")
    assert int(match.group(1)) == symbol["floor_exponent"] and {"opsctl_nvlink_symbol_bit_error_ratio",
                                                                 "opsctl_nvlink_symbol_ber_exponent"} <= set(METRICS)
    assert alert["labels"]["severity"] == "critical" and alert["annotations"]["source"] == symbol["source"]
    # The GPU's own NVLink counters (all of its links together): one alert each, per GPU.
    from exporters.metrics import GPU_NVLINK_COUNTERS

    for counter_rule in rulebook()["gpu_nvlink_counters"]:
        metric = GPU_NVLINK_COUNTERS[counter_rule["counter"]][0]
        [(alert, function, label, op, threshold)] = terms[metric]
        assert (function, label, op, threshold) == ("increase", "", counter_rule["op"], float(counter_rule["threshold"]))
        assert alert["labels"]["severity"] == SEVERITY[counter_rule["verdict"]]
        assert alert["annotations"]["source"] == counter_rule["source"] and METRICS[metric][2] == ("rack", "tray", "gpu", "uuid")
    [(alert, _)] = alerts_matching(r"opsctl_nvlink_up == 0")
    assert alert["labels"]["severity"] == "critical"
    assert alert["annotations"]["source"] == rulebook()["link_state"]["source"]


def test_memory_alerts_follow_the_rulebook():
    book = rulebook()
    for key, kind in (("uncorrected_volatile", "uncorrected"), ("corrected_volatile", "corrected")):
        [(alert, _)] = alerts_matching(rf'opsctl_gpu_ecc_{kind}_errors_total\{{counter="volatile"\}}')
        assert alert["labels"]["severity"] == SEVERITY[book["ecc"][key]["verdict"]], key
        assert alert["annotations"]["source"] == book["ecc"][key]["source"], key
    [(alert, match)] = alerts_matching(r"sum without \(cause\) \(opsctl_gpu_retired_pages\) >= (\d+)")
    assert int(match.group(1)) == book["retired_pages"]["max"]
    assert alert["labels"]["severity"] == "critical" and alert["annotations"]["source"] == book["retired_pages"]["source"]
    [(alert, _)] = alerts_matching(r"opsctl_gpu_retired_pages_pending == 1")
    assert alert["labels"]["severity"] == SEVERITY[book["retired_pages"]["pending"]]
    assert alert["annotations"]["source"] == book["retired_pages"]["source"]
    [(alert, _)] = alerts_matching(r"opsctl_gpu_row_remap_failed == 1")
    assert alert["labels"]["severity"] == "critical"  # DCGM fails a row-remap failure


def _listed(matches):
    """{value: severity} from (alert, match) pairs whose group 1 is a `|`-separated list."""
    found = {}
    for alert, match in matches:
        for value in match.group(1).split("|"):
            assert value not in found, value
            found[value] = alert["labels"]["severity"]
    return found


def test_fabric_and_recovery_action_alerts_follow_the_rulebook():
    from exporters.metrics import FABRIC_FLAGS, METRICS

    fabric = rulebook()["fabric"]
    # Every health-mask flag fails: the exporter publishes each, and the alert reads them all.
    assert set(fabric["fail_flags"]) <= set(FABRIC_FLAGS)
    [(alert, _)] = alerts_matching(r"max without \(flag\) \(opsctl_gpu_fabric_health_flag\) == 1")
    assert alert["labels"]["severity"] == "critical"
    states = _listed(alerts_matching(r'opsctl_gpu_fabric_state\{state=~"([a-z0-9_|]+)"\}'))
    assert states == {state: SEVERITY[v] for state, v in fabric["states"].items() if v != "pass"}
    summaries = _listed(alerts_matching(r'opsctl_gpu_fabric_health\{health=~"([a-z0-9_|]+)"\}'))
    assert summaries == {summary: SEVERITY[v] for summary, v in fabric["summaries"].items() if v != "pass"}
    for alert, _ in alerts_matching(r"opsctl_gpu_fabric_"):
        assert alert["annotations"]["source"] == fabric["source"]
    action = rulebook()["recovery_action"]
    assert "opsctl_gpu_recovery_action" in METRICS
    actions = _listed(alerts_matching(r'opsctl_gpu_recovery_action\{action=~"([a-z0-9_|]+)"\}'))
    assert actions == {**{a: "critical" for a in action["fail"]}, **{a: "warning" for a in action["warn"]}}
    for alert, _ in alerts_matching(r"opsctl_gpu_recovery_action"):
        assert alert["annotations"]["source"] == action["source"]



def test_running_total_alerts_follow_the_rulebook():
    """What DCGM 4.6's health watch judges as it stands (probes/references/rules.yaml
    running_totals) alerts as it stands: each state and total by its own alert, with the
    rulebook's verdict and source, never over a window."""
    from exporters.metrics import METRICS

    book = rulebook()["running_totals"]
    for key, expr in (("memory_unrepairable", "opsctl_gpu_memory_unrepairable == 1"),
                      ("inforom", "opsctl_gpu_inforom_valid == 0"), ("power_unreadable", "opsctl_gpu_power_readable == 0")):
        [(alert, _)] = alerts_matching(re.escape(expr))
        assert expr.split()[0] in METRICS, key
        assert alert["labels"]["severity"] == SEVERITY[book[key]["verdict"]], key
        assert alert["annotations"]["source"] == book[key]["source"], key
    nvlink5 = {rule["counter"]: rule for rule in book["nvlink"][5]}
    for counter, metric in (("recovery_failed", "opsctl_nvlink_recoveries_failed_total"),
                            ("recovery_successful", "opsctl_nvlink_recoveries_successful_total")):
        [(alert, _)] = alerts_matching(rf"^{metric} > 0$")
        assert alert["labels"]["severity"] == SEVERITY[nvlink5[counter]["verdict"]], counter
        assert alert["annotations"]["source"] == nvlink5[counter]["source"], counter
    # NVLink 4's three totals in one alert that names the counter, on links without NVLink 5 counters.
    from exporters.metrics import LINK_COUNTERS

    [(alert, _)] = alerts_matching(r"unless on \(rack, tray, gpu, port\) opsctl_nvlink_recoveries_failed_total")
    for rule in book["nvlink"][4]:
        assert f'label_replace({LINK_COUNTERS[rule["counter"]][0]} > 0, "counter", "{rule["counter"]}"' in alert["expr"]
        assert alert["labels"]["severity"] == SEVERITY[rule["verdict"]]
        field = re.search(r"DCGM_FI_DEV_NVLINK_\w+", rule["source"]).group(0)
        assert field in alert["annotations"]["source"], rule["counter"]


def test_alerts_cite_public_sources_and_no_echo_of_other_gpus():
    for path in [*rule_files(), *sorted((RULES_DIR / "tests").glob("*.yml"))]:
        text = path.read_text(encoding="utf-8")
        assert [name for name in PRIVATE_SOURCES if name in text] == [], path.name
        assert "echo" not in text.lower() and "downstream" not in text.lower(), path.name


def test_every_metric_and_alert_is_documented():
    from exporters.metrics import METRICS

    documented = (RULES_DIR.parent / "README.md").read_text()
    names = [*METRICS, *(rule["alert"] for _, rule in rules("alert"))]
    assert [name for name in names if f"`{name}`" not in documented] == []
