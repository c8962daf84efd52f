"""Writes the XID alert rules exporters/rules/xid.yml and their promtool unit tests
exporters/rules/tests/xid_test.yml from NVIDIA's XID catalog (run it after the catalog or this
file changes: `python exporters/rules/make_xid_rules.py`; a test checks both files are up to
date).

Generated rather than hand-written so that no XID can be forgotten: the catalog
(probes/references/xids.yaml, read through probes/xids.py) gives every code its alert tier
(from its immediate resolution bucket) and its runbook, and this script writes one alert per
(tier, runbook) over every code whose tier is not `info`, plus one alert for any code the
catalog does not list. Each alert's description is the catalog's action for the code that
fired (a Go-template switch on the `xid` label).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # run as a script from anywhere

from probes.xids import catalog, rulings  # noqa: E402

if TYPE_CHECKING:
    from probes.xids import XidRuling

RULES = HERE / "xid.yml"
TESTS = HERE / "tests" / "xid_test.yml"
METRIC = "opsctl_gpu_xid_last_seen_timestamp_seconds"
WINDOW_S = 600
TIER_ORDER = ("critical", "warning")
CATALOG_URL = "docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

# Alert name and a short title per (tier, runbook). A group the catalog grows that is not
# named here still gets an alert, named after its runbook and tier.
GROUPS = {
    ("critical", "xid-memory.md"): ("OpsctlXidMemoryCritical", "memory error"),
    ("warning", "xid-memory.md"): ("OpsctlXidMemoryWarning", "memory event"),
    ("critical", "gpu.md"): ("OpsctlXidGpuCritical", None),
    ("warning", "gpu.md"): ("OpsctlXidGpuWarning", None),
    ("critical", "xid-74-nvlink.md"): ("OpsctlXidNvlink", None),
    ("critical", "xid-79-fell-off-bus.md"): ("OpsctlXidFellOffBus", None),
    ("critical", "xid-gsp.md"): ("OpsctlXidGsp", None),
    ("critical", "link.md"): ("OpsctlXidLinkTraining", None),
    ("critical", "xid-nvlink5.md"): ("OpsctlXidNvlink5", None),
    ("warning", "xid-nvlink5.md"): ("OpsctlXidNvlink5Warning", None),
    ("critical", "xid-149-link-down.md"): ("OpsctlXidNvlinkLinkDown", None),
    ("warning", "xid-154-recovery-action.md"): ("OpsctlXidRecoveryAction", None),
}
UNLISTED_ALERT = "OpsctlXidUnlisted"
RECORDED_ALERT = "OpsctlXidRecorded"  # an XID the GPU logged before the exporter started
RECORDED_METRIC = "opsctl_gpu_xid_recorded"
UNLISTED_EXAMPLES = (173, 999)  # codes the promtool test logs that the catalog does not list
WHERE = "{{ $labels.rack }}/{{ $labels.tray }} gpu{{ $labels.gpu }}"
THRESHOLD = "an event in the last 10 minutes"


def _group_name(tier: str, runbook: str) -> str:
    named = GROUPS.get((tier, runbook))
    if named:
        return named[0]
    stem = "".join(part.capitalize() for part in Path(runbook).stem.replace("xid-", "").split("-"))
    return f"OpsctlXid{stem}{tier.capitalize()}"


def meaning(ruling: XidRuling) -> str:
    """What the catalog calls the code."""
    return "marked unused in the catalog" if ruling.meaning == "Unused" else ruling.meaning


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _switch(values: dict[int, str]) -> str:
    """A template that expands to values[code] for the alert's xid label (codes grouped by text)."""
    by_text: defaultdict[str, list[int]] = defaultdict(list)
    for code, text in sorted(values.items()):
        by_text[text].append(code)
    if len(by_text) == 1:
        return next(iter(by_text))
    branches = sorted(by_text.items(), key=lambda item: item[1][0])
    template = ""
    for i, (text, codes) in enumerate(branches):
        keyword = "if" if i == 0 else "else if"
        template += "{{ " + keyword + " eq $labels.xid " + " ".join(f'"{code}"' for code in codes) + " }}" + text
    return template + "{{ end }}"


def _matcher(codes: Sequence[int]) -> str:
    return f'xid="{codes[0]}"' if len(codes) == 1 else 'xid=~"' + "|".join(map(str, codes)) + '"'


def _buckets(codes: Sequence[int], by_code: dict[int, XidRuling]) -> list[str]:
    names: list[str] = []
    for code in codes:
        bucket = by_code[code].bucket or "none (listed without a resolution)"
        if bucket not in names:
            names.append(bucket)
    return names


def groups() -> list[tuple[str, str, str, list[int]]]:
    """[(alert name, tier, runbook, [codes])] for every non-info tier, critical first."""
    found: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    for code, ruling in sorted(rulings().items()):
        if ruling.alert != "info":
            found[(ruling.alert, ruling.runbook)].append(code)
    ordered = sorted(found.items(), key=lambda item: (TIER_ORDER.index(item[0][0]), item[1][0]))
    return [(_group_name(tier, runbook), tier, runbook, codes) for (tier, runbook), codes in ordered]


def _annotations(codes: Sequence[int], by_code: dict[int, XidRuling], runbook: str) -> dict[str, str]:
    nvlink5 = [code for code in codes if _has_decode(code)]
    source = f"NVIDIA Xid catalog ({CATALOG_URL}): immediate resolution {', '.join(_buckets(codes, by_code))}"
    if nvlink5:
        source += " (XID 144-150: the most severe row of the catalog's XID 144-150 decode sheet)"
    source += "; opsctl's tier per bucket: probes/references/xids.yaml"
    return {
        "summary": "XID {{ $labels.xid }} (" + _switch({code: meaning(by_code[code]) for code in codes}) + ") on " + WHERE,
        "description": _switch({code: _sentence(by_code[code].action) for code in codes}),
        "threshold": THRESHOLD,
        "source": source,
        "runbook_url": f"runbooks/{runbook}",
    }


def _has_decode(code: int) -> bool:
    return any(row["xid"] == code for row in catalog()["nvlink5_decode"])


def _unlisted_annotations() -> dict[str, str]:
    data = catalog()
    return {
        "summary": "XID {{ $labels.xid }} (not in NVIDIA's Xid catalog) on " + WHERE,
        "description": _sentence(data["unlisted"]["action"]),
        "threshold": THRESHOLD,
        "source": f"NVIDIA Xid catalog ({CATALOG_URL}) does not list the code; opsctl fails an unlisted XID "
                  "(probes/references/xids.yaml: unlisted)",
        "runbook_url": f"runbooks/{data['default_runbook']}",
    }


def rules() -> dict[str, Any]:
    by_code = rulings()
    alerts: list[dict[str, Any]] = []
    for name, tier, runbook, codes in groups():
        alerts.append({
            "alert": name,
            "expr": f"time() - {METRIC}{{{_matcher(codes)}}} < {WINDOW_S}",
            "labels": {"severity": tier},
            "annotations": _annotations(codes, by_code, runbook),
        })
    listed = "|".join(str(code) for code in sorted(catalog()["xids"]))
    alerts.append({
        "alert": UNLISTED_ALERT,
        "expr": f'time() - {METRIC}{{xid!~"{listed}"}} < {WINDOW_S}',
        "labels": {"severity": catalog()["unlisted"]["alert"]},
        "annotations": _unlisted_annotations(),
    })
    alerts.append(_recorded_alert(by_code, listed))
    return {"groups": [{"name": "opsctl-xid", "rules": alerts}]}


def _recorded_codes() -> list[int]:
    return [code for _, _, _, codes in groups() for code in codes]


def _recorded_alert(by_code: dict[int, XidRuling], listed: str) -> dict[str, Any]:
    """One alert for the state a GPU arrived in: an XID of an alerting tier (or one the catalog
    does not list) in its kernel log since the driver loaded, held until a reset or reboot
    restarts the exporter's count. A warning, whatever the code's tier: the event is history,
    and `opsctl health` on the tray rules it by the catalog before the next job."""
    codes = sorted(_recorded_codes())
    unlisted = catalog()["unlisted"]["action"]
    actions = {code: _sentence(by_code[code].action) for code in codes}
    return {
        "alert": RECORDED_ALERT,
        "expr": f"{RECORDED_METRIC}{{{_matcher(codes)}}} > 0 or {RECORDED_METRIC}{{xid!~\"{listed}\"}} > 0",
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "XID {{ $labels.xid }} logged on " + WHERE + " before the exporter started, since the driver loaded",
            "description": "The GPU arrived with this XID in its kernel log: run `opsctl health` on the tray before the "
                           "next job. " + _switch({**actions, **{c: _sentence(unlisted) for c in UNLISTED_EXAMPLES}}),
            "threshold": "any count since the driver loaded",
            "source": f"NVIDIA Xid catalog ({CATALOG_URL}); DCGM's health watch keeps the XIDs it has seen "
                      "(DcgmHealthWatch.cpp, MonitorDevastatingXids); the kernel log's NVRM Xid lines",
            "runbook_url": f"runbooks/{catalog()['default_runbook']}",
        },
    }


class _Dumper(yaml.SafeDumper):
    """Block lists indented under their key, as in the hand-written rule files."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)


def _dump(document: Any, indent_lists: bool = True) -> str:
    return yaml.dump(document, Dumper=_Dumper if indent_lists else yaml.SafeDumper, sort_keys=False,
                     allow_unicode=True, width=10**9, default_flow_style=False)


RULES_HEADER = """\
# XID alerts, generated by exporters/rules/make_xid_rules.py from NVIDIA's Xid catalog
# (probes/references/xids.yaml): do not edit, change the catalog or the script and run it.
# One alert per (tier, runbook) over every catalog XID whose tier is not info, and one for any
# XID the catalog does not list. The exporter publishes, per GPU and code, a counter
# (opsctl_gpu_xid_events_total, for graphs) and the time it last saw the code. The alerts read
# the time: an alert fires for 10 minutes after the latest event, and an event between the
# exporter's start and Prometheus's first scrape is not lost (`increase()` would miss it).
# OpsctlXidRecorded (a warning) holds while a GPU carries an alerting XID it logged before the
# exporter started, since the driver loaded (opsctl_gpu_xid_recorded: the state it arrived in).
# runbook_url is relative; `opsctl exporter rules --runbook-base URL` writes these files with
# your base in front.
"""

TESTS_HEADER = """\
# promtool unit tests for xid.yml, generated by exporters/rules/make_xid_rules.py with it (do not
# edit). Every XID of NVIDIA's catalog, and codes the catalog does not list, logs one event at
# 2m, each on a GPU of its own (gpu label = the code), so its last-seen time is 120 from then on.
# At 3m each alert lists exactly the codes of its tier and runbook, with the catalog's action
# for each; info codes fire none. Before the event (1m) and once it is 10 minutes old (12m:
# exactly 600 s; 13m) nothing fires. The second test records every code once before the
# exporter started: OpsctlXidRecorded lists the alerting and unlisted codes at 3m, none at 1m.
# Run: promtool test rules exporters/rules/tests/*.yml
"""


def render_rules() -> str:
    return RULES_HEADER + _dump(rules())


def _expand(template: str, code: int) -> str:
    """The annotation promtool expects for XID `code` on rack07/ct03 gpu<code>."""
    labels = {"xid": str(code), "rack": "rack07", "tray": "ct03", "gpu": str(code)}
    text = template
    # The switch: keep the branch whose code list holds the code.
    if "{{ if eq $labels.xid" in text:
        head, _, rest = text.partition("{{ if eq $labels.xid")
        body, _, tail = rest.rpartition("{{ end }}")
        chosen: str | None = None
        for branch in ("{{ if eq $labels.xid" + body).split("{{ ")[1:]:
            condition, _, value = branch.partition(" }}")
            if f'"{code}"' in condition.split():
                chosen = value
        assert chosen is not None, f"XID {code} is in no branch of {template!r}"  # each code is in one
        text = head + chosen + tail
    for name, value in labels.items():
        text = text.replace("{{ $labels." + name + " }}", value)
    return text


def tests() -> dict[str, Any]:
    by_code = rulings()
    codes = sorted(by_code) + list(UNLISTED_EXAMPLES)
    series = [{"series": f'{METRIC}{{rack="rack07",tray="ct03",gpu="{code}",uuid="GPU-{code}",xid="{code}"}}',
               "values": "_ _ 120x20"} for code in codes]
    checks: list[dict[str, Any]] = []
    alerts = [alert for alert in rules()["groups"][0]["rules"] if alert["alert"] != RECORDED_ALERT]
    members = {name: group_codes for name, _, _, group_codes in groups()}
    members[UNLISTED_ALERT] = list(UNLISTED_EXAMPLES)
    for alert in alerts:
        name = alert["alert"]
        fired = [{
            "exp_labels": {"rack": "rack07", "tray": "ct03", "gpu": str(code), "uuid": f"GPU-{code}", "xid": str(code),
                           "severity": alert["labels"]["severity"]},
            "exp_annotations": {key: _expand(value, code) for key, value in alert["annotations"].items()},
        } for code in members[name]]
        checks += [{"eval_time": "1m", "alertname": name, "exp_alerts": []},
                   {"eval_time": "3m", "alertname": name, "exp_alerts": fired},
                   {"eval_time": "12m", "alertname": name, "exp_alerts": []},
                   {"eval_time": "13m", "alertname": name, "exp_alerts": []}]
    return {"rule_files": ["../xid.yml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": checks}, _recorded_test()]}


def _recorded_test() -> dict[str, Any]:
    """Every code is recorded once from 2m on its own GPU: at 3m the alert lists the alerting
    tiers' codes and the unlisted ones (an info code fires nothing); at 1m nothing fires."""
    codes = sorted(rulings()) + list(UNLISTED_EXAMPLES)
    series = [{"series": f'{RECORDED_METRIC}{{rack="rack07",tray="ct03",gpu="{code}",uuid="GPU-{code}",xid="{code}"}}',
               "values": "_ _ 1x20"} for code in codes]
    alert = next(a for a in rules()["groups"][0]["rules"] if a["alert"] == RECORDED_ALERT)
    fired = [{"exp_labels": {"rack": "rack07", "tray": "ct03", "gpu": str(code), "uuid": f"GPU-{code}", "xid": str(code),
                             "severity": "warning"},
              "exp_annotations": {key: _expand(value, code) for key, value in alert["annotations"].items()}}
             for code in sorted(_recorded_codes()) + list(UNLISTED_EXAMPLES)]
    return {"interval": "1m", "input_series": series,
            "alert_rule_test": [{"eval_time": "1m", "alertname": RECORDED_ALERT, "exp_alerts": []},
                                {"eval_time": "3m", "alertname": RECORDED_ALERT, "exp_alerts": fired}]}


def render_tests() -> str:
    return TESTS_HEADER + _dump(tests(), indent_lists=False)


if __name__ == "__main__":
    RULES.write_text(render_rules(), encoding="utf-8")
    TESTS.write_text(render_tests(), encoding="utf-8")
    print(RULES)
    print(TESTS)
