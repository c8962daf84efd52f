"""The rack's verdict from its trays' probe documents.

What each probe judged on its tray (a GPU against its SKU's references, counters against
DCGM's rules) is kept, with opsctl's component ids (docs/topology.md). On top of it, across the
rack: the rack's check families, listed in rack_check_families.py (each GPU against the other
GPUs of its SKU, one fabric domain, one configuration…), every link's health over the window
with the links nobody could read marked so (link_health.py), trays that did not report, and the
failing links handed to the localizer so the verdict names parts, not only links.

PASS: every tray reported and nothing failed. FAIL (exit 1): something failed, even if some
trays are missing too. INCOMPLETE (exit 3): nothing failed, but not everything was seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from opsctl.burnin.checks import Check, worst
from opsctl.burnin.link_health import link_rows, rack_snapshot
from opsctl.burnin.parts import HOST_SWITCH_MEASUREMENTS, LINK_MEASUREMENTS, TRAY_MEASUREMENTS, measured_failures, suspect_parts
from opsctl.burnin import rack_check_families
from opsctl.burnin.rack_evidence import RackEvidence
from opsctl.burnin.rack_relative import METRICS, metric_value
from opsctl.errors import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK
from opsctl.localize.evidence import recorded_gpu_xids
from opsctl.localize.snapshot import TRAY_UNREAD
from opsctl.rack_models import HGX_TRAY
from opsctl.runs.tray_names import tray_label
from probes.link_rules import is_link_symptom

if TYPE_CHECKING:
    from opsctl.acceptance.criteria import Criteria
    from opsctl.inventory import Rack
    from opsctl.topology.graph import Topology

PASS, FAIL, INCOMPLETE = "PASS", "FAIL", "INCOMPLETE"
EXIT_CODES = {PASS: EXIT_OK, FAIL: EXIT_FAILED, INCOMPLETE: EXIT_INCOMPLETE}
TRAY_SOURCE = "opsctl's exit codes (README): a tray unreachable, a probe crashed or timed out is incomplete, never a pass"


@dataclass
class TrayOutcome:
    """What the run knows about one tray (from the run's journal)."""

    tray: str
    status: str  # complete | incomplete | missing (not in the inventory) | not run
    exit_code: int | None = None
    reason: str | None = None
    seconds: float | None = None
    host: str | None = None


@dataclass
class RackJudgment:
    rack: str
    model: str
    verdict: str
    checks: list[Check]
    trays: list  # dicts
    gpus: list  # dicts, one per GPU of the model
    links: list  # LinkRow
    failing: dict  # gpus, links, trays, other: component ids
    suspects: list | None
    localizer: str
    notes: list = field(default_factory=list)
    snapshot: dict | None = None
    repair_plan: dict | None = None  # what the repairs take out of service together, against the spares
    domain: dict | None = None  # the NVLink domain test: prerequisites, bandwidth by size, transport (nvlink_domain.py)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def failures(self, warnings_fail: bool = False) -> list[Check]:
        bad = {"fail", "warn"} if warnings_fail else {"fail"}
        return [c for c in self.checks if c.verdict in bad]

    def failing_parts(self) -> list[str]:
        parts = [s["component"] for s in self.suspects or [] if not s.get("alternative_to")]
        return list(dict.fromkeys(parts + self.failing["gpus"] + self.failing["links"] + self.failing["other"]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "rack": self.rack, "model": self.model, "verdict": self.verdict, "exit_code": self.exit_code,
            "failing": self.failing, "suspects": self.suspects, "localizer": self.localizer, "repair_plan": self.repair_plan,
            "trays": self.trays, "gpus": self.gpus, "links": [row.to_dict() for row in self.links],
            "checks": [c.to_dict() for c in self.checks], "notes": self.notes, "domain": self.domain,
        }


@dataclass
class _Readings:
    """What the trays' documents hold, gathered with opsctl's component ids (docs/topology.md)."""

    trays: list[dict[str, Any]] = field(default_factory=list)  # one per tray of the model
    checks: list[Check] = field(default_factory=list)  # the probes' checks
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)  # GPU id -> its entry of its tray's document
    switch_ports: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)  # (switch chip id, port) -> the port's row
    system: dict[str, dict[str, Any]] = field(default_factory=dict)  # tray -> its document's `system`
    notes: list[str] = field(default_factory=list)  # what a probe said it skipped, and why


def judge_rack(rack: Rack, topology: Topology, documents: dict[str, dict[str, Any]], outcomes: dict[str, TrayOutcome],
               criteria: Criteria, domain_document: dict[str, Any] | None = None) -> RackJudgment:
    """documents: tray -> probe `run` document; outcomes: tray -> TrayOutcome; domain_document:
    the NVLink domain test's (nvlink_domain.py), when it ran."""
    model = rack.model
    readings = _gather(rack, documents, outcomes)
    bad = {"fail", "warn"} if criteria.warnings_fail else {"fail"}
    evidence = RackEvidence(rack, criteria, readings.gpus, readings.system, readings.switch_ports, domain_document)
    judged, notes, domain_section = list(readings.checks), list(readings.notes), None
    for family in rack_check_families.RACK_CHECK_FAMILIES:  # what the rack decides, its trays together
        found = family(evidence)
        judged += found.checks
        notes += found.notes
        domain_section = found.domain if found.domain is not None else domain_section
    checks = _link_symptoms_to_their_links(judged, bad, topology)

    links = link_rows(topology, readings.gpus, readings.switch_ports, checks)
    gpus = _gpu_rows(rack, readings.gpus, readings.system, checks)
    window = max((float((r.get("counters") or {}).get("window_s") or 0) for r in readings.gpus.values()), default=0.0)
    tray_measured = measured_failures(checks, bad, {t["id"] for t in readings.trays}, TRAY_MEASUREMENTS)
    for chip, failed in measured_failures(checks, bad, topology.components, HOST_SWITCH_MEASUREMENTS).items():
        # An HGX switch chip's SXids: the chip is on the baseboard of its server (the tray), so
        # they are that tray's failed checks, which the localizer gives the baseboard's repair.
        host = model.tray_id(rack.name, topology.components[chip].tray or HGX_TRAY)
        tray_measured.setdefault(host, []).extend({**entry, "reason": f"{chip}: {entry['reason']}"} for entry in failed)
    snapshot = rack_snapshot(
        rack.name, model.name, window or 1.0, links,
        [{"id": gpu_id, "reachable": not reading.get("lost"), "xids": _xid_events(reading),
          "failed_checks": _own_failures(gpu_id, checks, bad)}
         for gpu_id, reading in readings.gpus.items()],
        [{"tray": t["tray"], "status": "complete" if t["status"] == "complete" else TRAY_UNREAD, "error": t["reason"],
          **({"failed_checks": tray_measured[t["id"]]} if t["id"] in tray_measured else {})}
         for t in readings.trays if t["status"] != "missing"],
        measured_failures(checks, bad, topology.links, LINK_MEASUREMENTS),
    )
    failing = _failing(checks, bad, topology)
    suspects, localizer, repair_plan = suspect_parts(snapshot, topology) if failing["links"] or failing["gpus"] or tray_measured \
        else ([], "nothing to localize", None)
    if any(c.verdict in bad for c in checks):
        verdict = FAIL
    elif any(c.verdict == "incomplete" for c in checks):
        verdict = INCOMPLETE
    else:
        verdict = PASS
    return RackJudgment(rack=rack.name, model=model.name, verdict=verdict, checks=checks, trays=readings.trays,
                        gpus=gpus, links=links, failing=failing, suspects=suspects, localizer=localizer, notes=notes,
                        snapshot=snapshot, repair_plan=repair_plan, domain=domain_section)


def _gather(rack: Rack, documents: dict[str, dict[str, Any]], outcomes: dict[str, TrayOutcome]) -> _Readings:
    model = rack.model
    found = _Readings()
    for tray_name in model.tray_names():
        tray_id = model.tray_id(rack.name, tray_name)
        outcome = outcomes.get(tray_name) or TrayOutcome(tray_name, "not run", reason="the run did not reach it")
        document = documents.get(tray_name)
        found.trays.append({"tray": tray_name, "id": tray_id, "switch": model.is_switch_tray(tray_name),
                            "host": outcome.host, "status": outcome.status, "exit_code": outcome.exit_code,
                            "reason": outcome.reason, "seconds": outcome.seconds,
                            "file": f"trays/{tray_label(rack.name, tray_name)}.json" if document else None})
        if outcome.status != "complete":
            found.checks.append(Check(check="tray.reported", component=tray_id, verdict="incomplete",
                                      value=outcome.status, threshold="complete", op="!=", source=TRAY_SOURCE,
                                      reason=f"{tray_id} did not report: {outcome.reason or outcome.status}"))
        if document is None:
            continue
        found.system[tray_name] = document.get("system") or {}
        for skipped in document.get("skipped") or []:
            if isinstance(skipped, dict):
                found.notes.append(f"{tray_id}: {skipped.get('what', 'a probe')} not judged "
                                   f"({skipped.get('component', 'tray')}): {skipped.get('reason', 'no reason given')}")
        found.checks += [_tray_check(raw, tray_id, rack.name) for raw in document.get("checks") or [] if isinstance(raw, dict)]
        for gpu in document.get("gpus") or []:
            if isinstance(gpu, dict) and isinstance(gpu.get("index"), int):
                found.gpus[f"{tray_id}/gpu{gpu['index']}"] = gpu
                found.checks += [Check.from_probe(raw, tray_id) for raw in gpu.get("checks") or [] if isinstance(raw, dict)]
        for entry in document.get("switch_links") or []:  # a switch tray's end of its links
            if isinstance(entry, dict) and entry.get("chip") and isinstance(entry.get("switch_port"), int):
                found.switch_ports[(f"{tray_id}/{entry['chip']}", entry["switch_port"])] = entry
    return found


def _tray_check(raw: dict[str, Any], tray_id: str, rack: str) -> Check:
    """A tray-level probe check. A switch tray's check on one of its ports is about the link
    that port ends: it gets the link's id, so both ends of a link are judged together."""
    check = Check.from_probe(raw, tray_id)
    if raw.get("link"):
        return replace(check, check=f"switch.{check.check}", component=f"{rack}/{raw['link']}")
    return check


def _link_symptoms_to_their_links(checks: list[Check], bad: set[str], topology: Topology) -> list[Check]:
    """An NVLink XID, or a fabric 'bandwidth degraded', on a GPU whose own links fail is those
    links' failure, not the GPU's: the verdict names the link (and the localizer the part), not
    a healthy GPU. Charged to the GPU's lowest failing link, naming the others; the same every
    run, whatever the moment of reading."""
    failing_links: dict[str, set[str]] = {}
    for check in checks:
        if check.verdict in bad and check.component in topology.links:
            failing_links.setdefault(topology.links[check.component].gpu, set()).add(check.component)
    moved = []
    for check in checks:
        links = sorted(failing_links.get(check.component, ()))
        if links and check.verdict in bad and is_link_symptom(check.check, check.value):
            others = f" (and {', '.join(links[1:])})" if len(links) > 1 else ""
            check = replace(check, component=links[0], reason=f"{check.reason} — logged by {check.component} "
                            f"for its link {links[0]}{others}, whose counters fail too")
        moved.append(check)
    return moved


def _own_failures(gpu_id: str, checks: list[Check], bad: set[str]) -> list[dict[str, Any]]:
    """The checks a GPU failed on its own account (its links' are theirs by now; its XIDs go to
    the localizer as XIDs): what the localizer names it for, and what decides its repair."""
    return [{"check": c.check, "value": c.value, "reason": c.reason} for c in checks
            if c.component == gpu_id and c.verdict in bad and c.check not in XID_CHECKS]


XID_CHECKS = ("xid", "xid.recorded")  # the window's XIDs, and those logged before the run


def _xid_events(reading: dict[str, Any]) -> list[dict[str, Any]]:
    """The GPU's XIDs for the localizer: those logged in the window, then those it had logged
    before the run (no time: they came before the window began)."""
    window = (reading.get("counters") or {}).get("xids") or []
    recorded = (reading.get("recorded_xids") or {}).get("events") or []
    return ([{"xid": x["xid"], "time": x.get("time")} for x in window if isinstance(x, dict) and isinstance(x.get("xid"), int)]
            + [{"xid": code, "time": None}
               for code in recorded_gpu_xids(x["xid"] for x in recorded if isinstance(x, dict) and isinstance(x.get("xid"), int))])


def _gpu_rows(rack: Rack, gpu_readings: dict[str, dict[str, Any]], system: dict[str, dict[str, Any]],
              checks: list[Check]) -> list[dict[str, Any]]:
    model = rack.model
    verdicts: dict[str, list[str]] = {}
    for check in checks:
        verdicts.setdefault(check.component, []).append(check.verdict)
    rows = []
    for index in range(model.gpus):
        gpu_id = model.gpu_id(rack.name, index)
        tray = model.gpu_tray(index)
        reading = gpu_readings.get(gpu_id)
        row = {"id": gpu_id, "index": index, "tray": tray, "observed": reading is not None,
               "verdict": worst(verdicts.get(gpu_id, []), "pass") if reading is not None else "unobserved"}
        if reading is not None:
            xids = (reading.get("counters") or {}).get("xids") or []
            row.update({
                "name": reading.get("name"), "uuid": reading.get("uuid"), "serial": reading.get("serial"),
                "vbios": reading.get("vbios"), "inforom": reading.get("inforom"), "pci_bus_id": reading.get("pci_bus_id"),
                "lost": bool(reading.get("lost")), "driver": (system.get(tray) or {}).get("driver_version"),
                "xids": sorted({x["xid"] for x in xids if isinstance(x, dict) and isinstance(x.get("xid"), int)}),
                **{name: metric_value(name, reading) for name in METRICS},
            })
        else:
            row.update({"lost": False, "xids": []})
        rows.append(row)
    return rows


def _failing(checks: list[Check], bad: set[str], topology: Topology) -> dict[str, list[str]]:
    """The failing components, by kind: what the verdict names."""
    failing: dict[str, set[str]] = {"gpus": set(), "links": set(), "trays": set(), "other": set()}
    for check in checks:
        component = check.component
        if check.verdict == "incomplete" and check.check == "tray.reported":
            failing["trays"].add(component)
        if check.verdict not in bad:
            continue
        if component in topology.links:
            failing["links"].add(component)
        elif component in topology.components and topology.components[component].kind == "gpu":
            failing["gpus"].add(component)
        else:
            failing["other"].add(component)
    return {kind: sorted(ids) for kind, ids in failing.items()}
