"""JUnit XML of a burn-in, for CI systems and test dashboards: one testcase per GPU check and
one per link, grouped in suites (GPUs, links, trays). A failed check is a <failure>; a tray or
link that could not be read is an <error> (incomplete is never a pass)."""

import xml.etree.ElementTree as ET


def _case(suite, classname, name, verdict, message, detail):
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
    if verdict == "fail":
        ET.SubElement(case, "failure", message=message, type="fail").text = detail
    elif verdict in ("incomplete", "unobserved"):
        ET.SubElement(case, "error", message=message, type=verdict).text = detail
    elif verdict == "warn":
        ET.SubElement(case, "system-out").text = f"warning: {message}\n{detail}"
    return case


def _detail(check):
    threshold = "" if check["threshold"] is None else f"; fails when {check['op']} {check['threshold']}"
    return (f"{check['reason']}\nreading {check['value']} {check['unit']}{threshold}\n"
            f"source: {check['source']} (judged by {check['judged_by']})")


def render_junit(summary):
    rack = summary["rack"]
    root = ET.Element("testsuites", name=f"opsctl {summary['kind']} {rack}")
    suites = {name: ET.SubElement(root, "testsuite", name=f"{rack}.{name}") for name in ("gpus", "links", "trays")}
    properties = ET.SubElement(suites["gpus"], "properties")
    for key in ("name", "version", "sha256"):
        ET.SubElement(properties, "property", name=f"criteria.{key}", value=str(summary["criteria"][key]))
    ET.SubElement(properties, "property", name="verdict", value=summary["verdict"])
    links = set()
    for link in summary["links"]:
        links.add(link["id"])
        reasons = "; ".join(link.get("reasons") or []) or link["verdict"]
        deltas = ", ".join(f"{k} {v}" for k, v in sorted((link.get("deltas") or {}).items()) if v)
        _case(suites["links"], f"{rack}.links.{link['gpu'].replace('/', '.')}", link["id"], link["verdict"],
              reasons, f"state {link.get('state')}; counter deltas: {deltas or 'none'}")
    for check in summary["checks"]:
        component = check["component"]
        if component in links:
            continue  # the link's own testcase carries its checks
        suite = suites["trays"] if check["check"].startswith("tray.") else suites["gpus"]
        _case(suite, f"{rack}.{suite.get('name').split('.')[-1]}.{component.replace('/', '.')}",
              f"{component} {check['check']}", check["verdict"], check["reason"] or check["check"], _detail(check))
    for suite in suites.values():
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
