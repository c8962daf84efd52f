"""JUnit XML of a burn-in, for CI systems and test dashboards.

One suite per kind of part, and only the suites that have testcases:

    RACK.rack       the verdict: classname rack07.rack, name verdict (and any check of another part)
    RACK.gpus       one testcase per GPU check: classname rack07.ct03.gpu3, name gemm.bf16.mismatches
    RACK.links      one testcase per link: classname rack07.ct05.gpu1.nvlink, name nvl07
    RACK.switches   the switch chips' and switch trays' own checks: classname rack07.st4.sw1, rack07.st4
    RACK.trays      a tray that did not report: classname rack07.ct03, name tray.reported

A classname names its part once (no suite or rack repeated in front of it) and belongs to one
suite; a name is unique within its classname. A failed check is a <failure> (a warning too, when
the criteria fail on warnings); a tray or link that could not be read is an <error> (incomplete
is never a pass). Every suite carries the criteria, the verdict and whether the run was a trial
acceptance as properties, and its counts agree with its testcases.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from opsctl.runs.trial import trial_of, trial_sentence


def _case(suite: ET.Element, classname: str, name: str, verdict: str, message: str, detail: str,
          warnings_fail: bool) -> ET.Element:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
    if verdict == "fail" or (verdict == "warn" and warnings_fail):
        ET.SubElement(case, "failure", message=message, type=verdict).text = detail
    elif verdict in ("incomplete", "unobserved"):
        ET.SubElement(case, "error", message=message, type=verdict).text = detail
    elif verdict == "warn":
        ET.SubElement(case, "system-out").text = f"warning: {message}\n{detail}"
    return case


def _detail(check: dict[str, Any]) -> str:
    threshold = "" if check["threshold"] is None else f"; fails when {check['op']} {check['threshold']}"
    return (f"{check['reason']}\nreading {check['value']} {check['unit']}{threshold}\n"
            f"source: {check['source']} (judged by {check['judged_by']})")


def _dotted(component: str) -> str:
    return component.replace("/", ".")


def _properties(summary: dict[str, Any]) -> list[tuple[str, Any]]:
    criteria = summary["criteria"]
    trial = trial_of(summary)
    pairs = [("kind", summary["kind"]), ("rack", summary["rack"]), ("verdict", summary["verdict"]),
             *((f"criteria.{key}", criteria[key]) for key in ("name", "version", "sha256")),
             ("criteria.duration_s", f"{trial['criteria_duration_s']:g}"), ("duration_s", f"{trial['duration_s']:g}"),
             ("trial", "true" if trial["trial"] else "false")]
    if trial["trial"]:
        pairs.append(("trial.note", trial_sentence(summary)))
    return pairs


class _Suites:
    """The suites in a fixed order, made when their first testcase comes."""

    ORDER = ("rack", "gpus", "links", "switches", "trays")

    def __init__(self, summary: dict[str, Any]) -> None:
        self.summary = summary
        self.cases: dict[str, list[tuple[str, str, str, str, str]]] = {name: [] for name in self.ORDER}
        self.names: dict[str, set[str]] = {}  # classname -> names used, to keep each name unique within its class

    def add(self, suite: str, classname: str, name: str, verdict: str, message: str, detail: str) -> None:
        used = self.names.setdefault(classname, set())
        unique, n = name, 1
        while unique in used:
            n += 1
            unique = f"{name} #{n}"
        used.add(unique)
        self.cases[suite].append((classname, unique, verdict, message, detail))

    def xml(self) -> ET.Element:
        summary = self.summary
        rack = summary["rack"]
        trial = trial_of(summary)
        title = f"opsctl {summary['kind']} {rack}" + (" (trial acceptance)" if trial["trial"] else "")
        root = ET.Element("testsuites", name=title)
        warnings_fail = bool(summary["criteria"].get("warnings_fail"))
        timestamp = str(summary.get("judged") or "").rstrip("Z")
        for name in self.ORDER:
            if not self.cases[name]:
                continue  # no empty suites
            suite = ET.SubElement(root, "testsuite", name=f"{rack}.{name}", timestamp=timestamp)
            properties = ET.SubElement(suite, "properties")
            for key, value in _properties(summary):
                ET.SubElement(properties, "property", name=key, value=str(value))
            for case in self.cases[name]:
                _case(suite, *case, warnings_fail)
        _count(root)
        return root


def _count(root: ET.Element) -> None:
    """tests, failures, errors, skipped and time of every suite, and their totals on the root."""
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        counts = {"tests": len(cases),
                  "failures": sum(1 for c in cases if c.find("failure") is not None),
                  "errors": sum(1 for c in cases if c.find("error") is not None),
                  "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", "0")
    for key, value in totals.items():
        root.set(key, str(value))


def _verdict_case(summary: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """The rack's verdict as one testcase: a failure for FAIL, an error for INCOMPLETE."""
    verdict = {"PASS": "pass", "FAIL": "fail"}.get(summary["verdict"], "incomplete")
    failing = summary["failing"]
    named = "; ".join(f"{kind}: {', '.join(ids)}" for kind, ids in failing.items() if ids)
    message = f"{summary['rack']} {summary['verdict']}" + (f" — {named}" if named else "")
    trial = trial_sentence(summary)
    detail = (f"{trial}\n" if trial else "") + (
        f"criteria {summary['criteria']['name']} {summary['criteria']['version']}; "
        f"{summary['duration_s']:g} s of load per tray; judged {summary.get('judged')} by {summary.get('by')}")
    return f"{summary['rack']}.rack", "verdict", verdict, message, detail


def _check_name(check: dict[str, Any]) -> str:
    """The check's name; an XID check (one per code logged) with its code: `xid 79`, and one of
    those logged before the run `xid.recorded 79`."""
    if check["check"] in ("xid", "xid.recorded") and isinstance(check["value"], int):
        return f"{check['check']} {check['value']}"
    return check["check"]


def render_junit(summary: dict[str, Any]) -> str:
    rack = summary["rack"]
    suites = _Suites(summary)
    suites.add("rack", *_verdict_case(summary))
    gpus = {gpu["id"] for gpu in summary["gpus"]}
    trays = {tray["id"] for tray in summary["trays"]}
    switch_trays = tuple(f"{tray['id']}/" for tray in summary["trays"] if tray.get("switch"))
    links: set[str] = set()
    for link in summary["links"]:
        links.add(link["id"])
        reasons = "; ".join(link.get("reasons") or []) or link["verdict"]
        deltas = ", ".join(f"{k} {v}" for k, v in sorted((link.get("deltas") or {}).items()) if v)
        far_end = f" → {link['switch']} port {link['switch_port']}" if link.get("switch") else ""
        suites.add("links", f"{_dotted(link['gpu'])}.nvlink", link["id"].rsplit("/", 1)[-1], link["verdict"], reasons,
                   f"link {link['id']}{far_end}; state {link.get('state')}; counter deltas: {deltas or 'none'}")
    for check in summary["checks"]:
        component = check["component"]
        if component in links:
            continue  # the link's own testcase carries its checks
        if component in gpus:
            suite = "gpus"
        elif f"{component}/" in switch_trays:  # a switch tray's own check (its firmware): with its chips'
            suite = "switches"
        elif component in trays:
            suite = "trays"
        elif component.startswith(switch_trays):
            suite = "switches"
        else:
            suite = "rack"
        classname = f"{rack}.rack" if suite == "rack" and component == rack else _dotted(component)
        suites.add(suite, classname, _check_name(check), check["verdict"], check["reason"] or check["check"],
                   _detail(check))
    root = suites.xml()
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
