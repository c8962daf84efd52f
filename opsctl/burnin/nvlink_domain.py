"""The rack's NVLink domain as one job: its prerequisites, then every GPU of the rack in one
collective job (probes/collective.py), judged.

    document = run_domain_test(rack, run_folder, tray_documents, sim_spec, options)   # runs it
    checks, section, notes = judge_domain(rack, gpu_readings, systems, document)     # judges it

Prerequisites first, each a check with its reason, before any load: on an NVL72, the IMEX
service running and a channel present on every compute tray (`python -m probes imex`); the
fabric registration completed with status success on every GPU; one clique and cluster UUID
across the GPUs; one driver version on every tray. A rack that fails one is told why, and the
collective is not run. Then `python -m probes collective` starts on every compute tray at once
through the fan-out (ssh or local), one process group over the rack, the rendezvous on the
first compute tray. What comes back is judged: bus bandwidth against the GPU model's floor,
the path NCCL took (the network inside an NVL72 fails the rack), results verified per tray, the
trays that never joined or had not arrived when a collective timed out (incomplete, named), and
the bisection's slow tray (failed, named — and handed to the localizer as evidence).
"""

from __future__ import annotations

import socket
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl.burnin.checks import Check
from opsctl.burnin.rack_evidence import RackEvidence, RackFindings
from opsctl.fanout import FanoutOptions, run_on_trays
from probes.sku_references import load_references

if TYPE_CHECKING:
    from opsctl.inventory import Rack, Tray
    from opsctl.backend import RackSpec

DOMAIN_FILE = "domain.json"
DOMAIN_FORMAT = "opsctl-domain/1"
PROBE = "collective"  # its name in --probes and the criteria; a rack-level step, not a tray probe
INCOMPLETE_SOURCE = "opsctl's exit codes (README): a collective that cannot form or finish is incomplete, never a pass"
FABRIC_STATE_SOURCE_KEY = "fabric"


@dataclass(frozen=True)
class DomainOptions:
    sizes: str = "8K,64K,512K,4M,32M,256M,1G,4G"  # nccl-tests' range, latency- to bandwidth-bound
    iterations: int = 5
    op_timeout_s: float = 120.0
    rendezvous_timeout_s: float = 120.0
    master_port: int = 29517
    connect_timeout_s: float = 10.0
    accept_new_host_keys: bool = False
    ssh_config: str | None = None


# --- prerequisites -----------------------------------------------------------------------------------
def prerequisites(rack: Rack, gpu_readings: dict[str, dict[str, Any]], systems: dict[str, dict[str, Any]],
                  imex_documents: dict[str, dict[str, Any]]) -> list[tuple[str, list[Check]]]:
    """[(name, Check list)] in order; a prerequisite passes when none of its checks fails."""
    rules = load_references().rules
    found = []
    if rack.model.is_nvl72:
        imex = []
        for tray in rack.model.compute_tray_names():
            tray_id = rack.model.tray_id(rack.name, tray)
            document = imex_documents.get(tray)
            if document is None:
                imex.append(Check("domain.imex", tray_id, "incomplete", None, "active, a channel", "", "!=",
                                  rules["imex"]["source"], f"{tray_id}: its IMEX state could not be read"))
                continue
            bad = [c for c in document.get("checks") or [] if c.get("verdict") != "pass"]
            reason = "; ".join(c["reason"] for c in bad) or \
                f"{document.get('service')}, {len(document.get('channels') or [])} channel(s)"
            verdict = "fail" if any(c.get("verdict") == "fail" for c in bad) else ("incomplete" if bad else "pass")
            imex.append(Check("domain.imex", tray_id, verdict, {"service": document.get("service"),
                              "channels": document.get("channels")}, "active, a channel", "", "!=",
                              rules["imex"]["source"], f"{tray_id}: IMEX {reason}"))
        found.append(("IMEX running with a channel on every compute tray", imex))
        fabric_rule = rules[FABRIC_STATE_SOURCE_KEY]["source"]
        fabric = []
        for gpu_id, reading in sorted(gpu_readings.items()):
            info = (reading.get("counters") or {}).get("fabric") or {}
            ok = info.get("state") == "completed" and info.get("status") == 0
            fabric.append(Check("domain.fabric", gpu_id, "pass" if ok else "fail", [info.get("state"), info.get("status")],
                                ["completed", 0], "state, status", "!=", fabric_rule,
                                f"{gpu_id}: fabric {info.get('state') or 'unread'}, status {info.get('status')}"))
        found.append(("fabric registration completed with status success on every GPU", fabric))
        cliques = Counter(c for c in map(_clique, gpu_readings.values()) if c is not None)
        clique_checks = []
        if cliques:
            (domain, count), = cliques.most_common(1)
            for gpu_id, reading in sorted(gpu_readings.items()):
                mine = _clique(reading)
                if mine is not None and mine != domain:
                    clique_checks.append(Check("domain.clique", gpu_id, "fail", list(mine), list(domain), "clique, cluster",
                                               "!=", rules["fabric_clique"]["source"],
                                               f"{gpu_id} is in clique {mine[0]}, where {count} GPUs are in {domain[0]}"))
        found.append(("one clique and one cluster UUID across the GPUs", clique_checks))
    drivers = {tray: (systems.get(tray) or {}).get("driver_version") for tray in rack.model.compute_tray_names()
               if systems.get(tray)}
    counts = Counter(d for d in drivers.values() if d)
    driver_checks = []
    if len(counts) > 1:
        (common, _), = counts.most_common(1)
        for tray, version in sorted(drivers.items()):
            if version != common:
                tray_id = rack.model.tray_id(rack.name, tray)
                driver_checks.append(Check("domain.driver", tray_id, "fail", version, common, "", "!=",
                                           rules["domain_driver"]["source"],
                                           f"{tray_id} runs driver {version}, the rest of the rack {common}"))
    found.append(("one driver version on every tray", driver_checks))
    return found


def _clique(reading: dict[str, Any]) -> tuple[Any, Any] | None:
    fabric = (reading.get("counters") or {}).get("fabric") or {}
    if fabric.get("state") != "completed" or fabric.get("clique_id") is None:
        return None
    return (fabric.get("clique_id"), fabric.get("cluster_uuid"))


def blocking(prereqs: list[tuple[str, list[Check]]]) -> list[str]:
    """Why the load must not run: one line per prerequisite that fails (or cannot be told)."""
    lines = []
    for name, checks in prereqs:
        bad = [c for c in checks if c.verdict in ("fail", "incomplete")]
        if bad:
            lines.append(f"{name}: " + "; ".join(c.reason for c in bad[:4]) + (f" (and {len(bad) - 4} more)" if len(bad) > 4 else ""))
    return lines


# --- running it ----------------------------------------------------------------------------------------
def run_domain_test(rack: Rack, workdir: str | Path, tray_documents: dict[str, Any], sim_spec: RackSpec | None,
                    options: DomainOptions | None = None, stop: threading.Event | None = None) -> dict[str, Any]:
    """The domain document: the IMEX readings, the prerequisites' verdicts, and — when they
    pass — every compute tray's collective document."""
    options = options or DomainOptions()
    compute = rack.model.compute_tray_names()
    trays = [t for t in rack.trays if t.name in compute]
    fanout = FanoutOptions(concurrency=max(1, len(trays)), connect_timeout_s=options.connect_timeout_s,
                           run_timeout_s=options.rendezvous_timeout_s + 120.0, accept_new_host_keys=options.accept_new_host_keys,
                           ssh_config=options.ssh_config)
    imex: dict[str, Any] = {}
    if rack.model.is_nvl72:
        for result in run_on_trays(rack, ["imex", "--json"], trays=[t.name for t in trays], options=fanout,
                                   workdir=workdir, sim_spec=sim_spec, stop=stop):
            if result.document is not None:
                imex[result.tray] = result.document
    gpus, systems = gpu_readings_of(rack, tray_documents)
    reasons = blocking(prerequisites(rack, gpus, systems, imex))
    document: dict[str, Any] = {"format": DOMAIN_FORMAT, "imex": imex, "collective": {}, "ran": not reasons, "not_run_because": reasons,
                "options": options.__dict__, "trays": [t.name for t in trays]}
    if reasons or not trays:
        return document
    steps = len(options.sizes.split(",")) * 4 + 12  # the sweep, the bisection's rounds, the gathers
    fanout = FanoutOptions(concurrency=len(trays), connect_timeout_s=options.connect_timeout_s,
                           run_timeout_s=options.rendezvous_timeout_s + options.op_timeout_s * steps + 120.0,
                           accept_new_host_keys=options.accept_new_host_keys, ssh_config=options.ssh_config)
    args = ["collective", "--json", "--job-trays", ",".join(t.name for t in trays), "--master-addr",
            rendezvous_address(rack, trays[0]), "--master-port", str(_port(rack, options)), "--sizes", options.sizes,
            "--iterations", str(options.iterations), "--op-timeout", f"{options.op_timeout_s:g}",
            "--rendezvous-timeout", f"{options.rendezvous_timeout_s:g}"]
    for result in run_on_trays(rack, args, trays=[t.name for t in trays], options=fanout, workdir=workdir,
                               sim_spec=sim_spec, stop=stop):
        document["collective"][result.tray] = {"status": result.status, "reason": result.reason, "host": result.host,
                                               "seconds": round(result.seconds, 2), "document": result.document}
    return document


def rendezvous_address(rack: Rack, first_tray: Tray) -> str:
    """Where every tray finds the job's TCPStore: the first compute tray (this machine for local trays)."""
    return "127.0.0.1" if rack.transport == "local" else first_tray.host


def _port(rack: Rack, options: DomainOptions) -> int:
    if rack.transport != "local":
        return options.master_port
    with socket.socket() as s:  # local trays: any free port here, so that runs side by side do not meet
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gpu_readings_of(rack: Rack, tray_documents: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """({GPU id: its entry of its tray's run document}, {tray: the document's system})."""
    gpus: dict[str, dict[str, Any]] = {}
    systems: dict[str, dict[str, Any]] = {}
    for tray, document in tray_documents.items():
        if not isinstance(document, dict):
            continue
        systems[tray] = document.get("system") or {}
        tray_id = rack.model.tray_id(rack.name, tray)
        for gpu in document.get("gpus") or []:
            if isinstance(gpu, dict) and isinstance(gpu.get("index"), int):
                gpus[f"{tray_id}/gpu{gpu['index']}"] = gpu
    return gpus, systems


# --- judging it ----------------------------------------------------------------------------------------
def rack_checks(evidence: RackEvidence) -> RackFindings:
    """The domain test's checks, section and notes, where it ran."""
    if evidence.domain_document is None:
        return RackFindings([])
    checks, section, notes = judge_domain(evidence.rack, evidence.gpus, evidence.systems, evidence.domain_document)
    return RackFindings(checks, notes, section)


def judge_domain(rack: Rack, gpu_readings: dict[str, dict[str, Any]], systems: dict[str, dict[str, Any]],
                 document: dict[str, Any]) -> tuple[list[Check], dict[str, Any], list[str]]:
    """(checks, the report's domain section, notes) of a domain document."""
    prereqs = prerequisites(rack, gpu_readings, systems, document.get("imex") or {})
    checks = [c for _, found in prereqs for c in found if c.check != "domain.fabric"]  # the probe judged fabric already
    section: dict[str, Any] = {"prerequisites": [{"name": name, "passed": not any(c.verdict in ("fail", "incomplete") for c in found),
                                  "reasons": [c.reason for c in found if c.verdict != "pass"][:8]}
                                 for name, found in prereqs],
               "ran": bool(document.get("ran")), "not_run_because": document.get("not_run_because") or []}
    notes: list[str] = []
    if not document.get("ran"):
        notes.append("NVLink domain test not run: " + "; ".join(section["not_run_because"]))
        return checks, section, notes
    rack_id = rack.name
    trays = document.get("trays") or []
    results = document.get("collective") or {}
    complete = {t: r["document"] for t, r in results.items() if r.get("document") and r["document"].get("results")}
    silent = [t for t in trays if not (results.get(t) or {}).get("document")]
    not_joined = sorted({x for r in results.values() for x in ((r.get("document") or {}).get("not_joined") or [])} | set(silent),
                        key=trays.index)
    not_arrived = sorted({x for r in results.values() for x in ((r.get("document") or {}).get("not_arrived") or [])},
                         key=trays.index)
    for tray in not_joined:
        reason = (results.get(tray) or {}).get("reason") or "never joined the job"
        checks.append(Check("collective.joined", rack.model.tray_id(rack_id, tray), "incomplete", False, True, "", "!=",
                            INCOMPLETE_SOURCE, f"{rack.model.tray_id(rack_id, tray)} never joined the rack's collective ({reason})"))
    for tray in not_arrived:
        timed: dict[str, Any] = next((r["document"]["timed_out"] for r in results.values()
                      if (r.get("document") or {}).get("timed_out")), {}) or {}
        checks.append(Check("collective.answered", rack.model.tray_id(rack_id, tray), "incomplete", False, True, "", "!=",
                            INCOMPLETE_SOURCE, f"{rack.model.tray_id(rack_id, tray)} had not arrived at the "
                            f"{timed.get('operation', 'collective')} when it timed out: the rest of the rack waited for it"))
    if not complete:
        if not (not_joined or not_arrived):
            errors = [e for r in results.values() for e in ((r.get("document") or {}).get("errors") or [])]
            checks.append(Check("collective.complete", rack_id, "incomplete", "did not finish", "finished", "", "!=",
                                INCOMPLETE_SOURCE,
                                "the rack's collective did not finish: " + ("; ".join(errors[:3]) or "no tray reported")))
        section["trays_not_joined"], section["trays_not_answering"] = not_joined, not_arrived
        section["not_finished_because"] = [c.reason for c in checks if c.check.startswith("collective.")][:8]
        return checks, section, notes
    first = complete[min(complete, key=trays.index)]
    for tray, tray_document in complete.items():
        for raw in tray_document.get("checks") or []:
            if raw.get("component") == "tray":  # the tray's own: named by its id
                checks.append(Check.from_probe({**raw, "component": ""}, rack.model.tray_id(rack_id, tray)))
    seen: set[str] = set()
    for tray, tray_document in sorted(complete.items(), key=lambda item: trays.index(item[0])):
        for raw in tray_document.get("checks") or []:  # the job's checks: every tray holds them; once each
            if raw.get("component") == "job" and (raw["check"] not in seen or raw.get("verdict") == "fail"):
                if raw["check"] in seen:
                    checks = [c for c in checks if not (c.check == raw["check"] and c.component == rack_id)]
                seen.add(raw["check"])
                checks.append(Check.from_probe({**raw, "component": ""}, rack_id))
    slow = slow_tray(first.get("bisection") or [])
    rules = load_references().rules
    if slow:
        tray_id = rack.model.tray_id(rack_id, slow["tray"])
        checks.append(Check("collective.bisection", tray_id, "fail", slow["busbw_gbps"], slow["other_gbps"], "GB/s", "<",
                            rules["collective_trays"]["source"],
                            f"{tray_id} is the slow part of the domain: the all-reduce by halves narrowed to it "
                            f"({slow['busbw_gbps']:.0f} GB/s, against {slow['other_gbps']:.0f} GB/s of the other half)"))
    section.update(_figures(first, rack, results), slow_tray=rack.model.tray_id(rack_id, slow["tray"]) if slow else None,
                   bisection=first.get("bisection") or [], trays_not_joined=not_joined, trays_not_answering=not_arrived)
    return checks, section, notes


def slow_tray(rounds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """{"tray", "busbw_gbps", "other_gbps"} when the bisection narrowed to one tray, else None."""
    if not rounds or rounds[-1].get("slower") is None:
        return None
    last = rounds[-1]
    slower = last["halves"][last["slower"]]
    if len(slower["trays"]) != 1:
        return None
    other = last["halves"][1 - last["slower"]]
    return {"tray": slower["trays"][0], "busbw_gbps": slower["busbw_gbps"], "other_gbps": other["busbw_gbps"]}


def _figures(first: dict[str, Any], rack: Rack, results: dict[str, Any]) -> dict[str, Any]:
    """The report's figures: bus bandwidth by size per collective, against the floor and ceiling."""
    refs = load_references(sku=first.get("sku"))
    figure = (refs.sku or {}).get("collective") or {}
    by_op: dict[str, list[dict[str, Any]]] = {}
    for row in first.get("results") or []:
        judged = row["operation"] == "all_reduce" and figure and row["bytes"] >= figure.get("from_bytes", 0)
        by_op.setdefault(row["operation"], []).append({**row, "floor_gbps": figure.get("min_busbw_gbps") if judged else None})
    paths: dict[str, int] = {}
    nvls = False
    for result in results.values():
        transport = (result.get("document") or {}).get("transport") or {}
        nvls = nvls or bool(transport.get("nvls"))
        for path, count in (transport.get("paths") or {}).items():
            paths[path] = paths.get(path, 0) + count
    return {"gpus": first.get("gpus"), "dist_backend": first.get("dist_backend"), "results": by_op,
            "floor_gbps": figure.get("min_busbw_gbps"), "floor_source": figure.get("source"),
            "ceiling_gbps": figure.get("ceiling_gbps"), "ceiling_source": figure.get("ceiling_source"),
            "floor_note": f"all-reduce judged from {figure.get('from_bytes', 0) // 2**20} MiB against the GPU model's floor; "
                          "no public source gives a floor for smaller sizes or the other collectives: they are shown, and "
                          "the rack is judged against its own trays by the bisection",
            "transport": {"paths": paths, "nvls": nvls}}
