"""The recording API: what burn-in, acceptance and triage already print (their --json
documents) goes into the ledger with one call, and so do racks and incidents said by hand.

    record_burnin(summary)        # opsctl burnin / accept
    record_triage(result)         # opsctl triage / localize
    record_incident(part, at=…)   # a failure nobody triaged with opsctl

Each call is one write transaction, and each is idempotent, so a retried hook, a command that
records itself and is then recorded by hand, or a re-run import adds nothing:
- a run is one row, keyed by its run's id (summary.json's run_id): resumed or judged again, the
  row is updated to the latest judgment, never doubled;
- a triage is keyed by its rack, time and suspects, and each fault it names (every suspect not
  offered as an `alternative_to` another) joins its part's open incident, if it has one
  (incidents.py) — one fault episode of one part is one incident.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.ledger.incidents import open_or_join
from opsctl.ledger.parts import Part, Parts, RackFacts, rack_of
from opsctl.ledger.store import COHORT_COLUMNS, Ledger, Record, content_key, new_key, open_ledger
from opsctl.ledger.timestamps import Moment, stored, utc_now

if TYPE_CHECKING:
    from opsctl.inventory import Inventory
    from opsctl.ledger.database import Transaction

VERDICTS = ("pass", "fail", "incomplete")
RUN_KINDS = ("burnin", "accept")
_VERDICT_WORDS = {"pass": "pass", "passed": "pass", "healthy": "pass", "ok": "pass",
                  "fail": "fail", "failed": "fail", "unhealthy": "fail",
                  "incomplete": "incomplete", "error": "incomplete"}
_TIME_FIELDS = ("finished", "finished_at", "taken", "time", "at", "started", "started_at")  # taken: a snapshot's moment


class RecordingSession:
    """A ledger (opened here unless given; closed here only then) and the part resolver."""

    def __init__(self, ledger: Ledger | None = None, inventory: Inventory | None = None,
                 parts: Parts | None = None) -> None:
        self.owned = ledger is None
        self.ledger = ledger if ledger is not None else open_ledger()
        self.parts = parts or Parts(inventory)

    def __enter__(self) -> RecordingSession:
        return self

    def __exit__(self, *_: object) -> None:
        if self.owned:
            self.ledger.close()

    def rack(self, tx: Transaction, name: str, model: str | None = None) -> RackFacts:
        """The rack's facts; a rack new to the ledger is added from the inventory or `model`."""
        recorded = tx.row("SELECT rack, model, gpus, vendor, batch, firmware FROM racks WHERE rack = :rack", {"rack": name})
        facts = self.parts.rack_facts(name, recorded, model)
        if model and model != facts.model:  # the document's model is never overridden without a word
            known = f"recorded as {facts.model}" if recorded else f"a {facts.model} in the inventory"
            raise InputError(f"rack {name} is {known}, not {model}")
        # The cohort is what the rack came with: taken from the inventory the first time the ledger
        # hears of each field, and kept (a later firmware update does not move it to another cohort).
        cohort = self.parts.cohort(name)
        if recorded is None:
            Ledger.insert(tx, "racks", {"rack": name, "model": facts.model, "gpus": facts.gpus, **cohort,
                                        "recorded_at": stored(utc_now())})
        else:
            missing = {field: value for field, value in cohort.items() if recorded.get(field) is None}
            if missing:
                Ledger.update(tx, "racks", name, missing)
        return facts

    def each_rack(self, tx: Transaction, document: Any, what: str) -> Iterator[tuple[dict[str, Any], str, RackFacts]]:
        """(rack's document, rack name, rack facts) for each rack the document covers."""
        for part in _rack_documents(document, what):
            name = _rack_name(part, what)
            yield part, name, self.rack(tx, name, part.get("model"))


def _time_of(document: dict[str, Any], at: Moment | None) -> str:
    if at is not None:
        return stored(at, "--at")
    for field in _TIME_FIELDS:
        if document.get(field):
            return stored(document[field], f"the document's {field!r}")
    return stored(utc_now())


def _rack_documents(document: Any, what: str) -> list[dict[str, Any]]:
    """A document covers one rack, or several under "racks" (as localize prints)."""
    if not isinstance(document, dict):
        raise InputError(f"{what}: expected a JSON object")
    if isinstance(document.get("racks"), list):
        if not document["racks"] or not all(isinstance(rack, dict) for rack in document["racks"]):
            raise InputError(f"{what}: \"racks\" must be a non-empty list of objects, one per rack")
        shared = {k: v for k, v in document.items() if k != "racks"}
        return [{**shared, **rack} for rack in document["racks"]]
    return [document]


# --- which document is this ----------------------------------------------------------------
# The documents opsctl writes say what they are in "format"; the triage and localize JSON
# (docs/triage.md) has none, and is known by its fields. Recording a
# document of the wrong kind would be a silent wrong record (a snapshot taken for a healthy
# triage, a triage for a failed burn-in).
BURNIN_FORMATS = ("opsctl-burnin/1", "opsctl-fleet/1")  # a rack's summary.json; a fleet run's summary
KNOWN_FORMATS = {
    "opsctl-burnin/1": "a burn-in or acceptance summary",
    "opsctl-fleet/1": "a fleet run's summary",
    "opsctl-snapshot/1": "a link-health snapshot",
    "opsctl-probe/1": "a probe's output (one tray's result)",
    "opsctl-run/1": "a run's metadata (run.json; the run has no summary.json yet)",
    "opsctl-fleet-run/1": "a fleet run's plan",
    "opsctl-ledger/1": "a ledger export (opsctl ledger import reads it)",
    "opsctl-sim-rack/1": "a simulated rack's spec",
}
EXPECT_BURNIN = "expected a burn-in or acceptance summary (the --json of opsctl burnin or accept, or its run folder)"
EXPECT_TRIAGE = "expected a triage result (the --json of opsctl triage or opsctl localize)"


def _looks_like_triage(document: dict[str, Any]) -> bool:
    return "suspects" in document and "verdict" not in document and "failing_parts" not in document


def _looks_like_snapshot(document: dict[str, Any]) -> bool:
    return "links" in document and "gpus" in document and "suspects" not in document and "verdict" not in document


def describe(document: Any) -> str:
    """What a document is, in words, for the message that refuses it."""
    if not isinstance(document, dict):
        return f"a JSON {type(document).__name__}, not an object"
    fmt = document.get("format")
    if fmt is not None:
        if fmt == "opsctl-burnin/1" and document.get("kind") in RUN_KINDS:
            return f"{'an acceptance' if document['kind'] == 'accept' else 'a burn-in'} summary ({fmt})"
        return f"{KNOWN_FORMATS.get(fmt, 'a document')} (format {fmt!r})"
    racks = document.get("racks")
    parts = [r for r in racks if isinstance(r, dict)] if isinstance(racks, list) else [document]
    if parts and all(_looks_like_triage(p) for p in parts):
        return "a triage result (opsctl triage/localize --json)"
    if parts and all(_looks_like_snapshot(p) for p in parts):
        return "a link-health snapshot"
    return "a document"


def check_burnin_document(document: Any, what: str) -> None:
    """Refuse (InputError) a document that is not a burn-in or acceptance summary."""
    fmt = document.get("format") if isinstance(document, dict) else None
    if fmt in BURNIN_FORMATS:
        return
    hint = "; record it with opsctl ledger record-triage" if describe(document).startswith("a triage") else ""
    if fmt is not None:
        raise InputError(f"{what}: {describe(document)}, not a burn-in summary; {EXPECT_BURNIN}{hint}")
    for part in _rack_documents(document, what):
        if _looks_like_triage(part) or _looks_like_snapshot(part):
            raise InputError(f"{what}: {describe(document)}, not a burn-in summary; {EXPECT_BURNIN}{hint}")


def check_triage_document(document: Any, what: str) -> None:
    """Refuse (InputError) a document that is not a triage or localize result."""
    fmt = document.get("format") if isinstance(document, dict) else None
    if fmt is not None:
        hint = "; record it with opsctl ledger record-burnin" if fmt in BURNIN_FORMATS else ""
        raise InputError(f"{what}: {describe(document)}, not a triage result; {EXPECT_TRIAGE}{hint}")
    for part in _rack_documents(document, what):
        if not _looks_like_triage(part) and not (isinstance(part.get("healthy"), bool) and "verdict" not in part
                                                 and not _looks_like_snapshot(part)):
            what_it_is = describe(document)
            hint = "; record it with opsctl ledger record-burnin" if "verdict" in part else ""
            got = what_it_is if what_it_is != "a document" else "a document with no \"suspects\" or \"healthy\""
            raise InputError(f"{what}: {got}, not a triage result; {EXPECT_TRIAGE}{hint}")


def _rack_name(document: dict[str, Any], what: str) -> str:
    name = document.get("rack")
    if not isinstance(name, str):
        raise InputError(f"{what}: no \"rack\" in the document")
    rack_of(name)  # a valid name
    return name


# --- burn-in and acceptance ---------------------------------------------------------------
def _verdict(document: dict[str, Any], what: str) -> str:
    if document.get("interrupted") is True:  # stopped before every tray reported: incomplete, whatever it saw (README)
        return "incomplete"
    for field in ("verdict", "status", "result"):
        word = document.get(field)
        if isinstance(word, str) and word.lower() in _VERDICT_WORDS:
            return _VERDICT_WORDS[word.lower()]
    if isinstance(document.get("healthy"), bool):
        return "pass" if document["healthy"] else "fail"
    raise InputError(f"{what}: no verdict (a \"verdict\" of pass, fail or incomplete); {EXPECT_BURNIN}")


def _failing_components(node: Any, rack: str, tray: str | None = None) -> Iterator[str]:
    """Every component a failed check names, anywhere in the document, as a full id.

    Probes name components relative to their tray (gpu2/nvl05); opsctl's documents give full
    ids (rack07/ct03/gpu2/nvl05). A relative id is completed with the nearest enclosing tray.
    """
    if isinstance(node, list):
        for item in node:
            yield from _failing_components(item, rack, tray)
        return
    if not isinstance(node, dict):
        return
    tray = node.get("tray") if isinstance(node.get("tray"), str) else tray
    if node.get("verdict") == "fail" and isinstance(node.get("component"), str):
        component = node["component"]
        if component == rack or component.startswith(f"{rack}/"):
            yield component
        elif tray and tray != "node":
            yield f"{rack}/{tray}/{component}"
        else:
            yield f"{rack}/{component}"
    for value in node.values():
        if isinstance(value, (dict, list)):
            yield from _failing_components(value, rack, tray)


def _suspects(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts the localizer named, less those it offers only as an alternative to another
    (a connector that would explain the same one link as the link itself): as burn-in's own
    failing_parts counts them."""
    suspects = document.get("suspects")
    if not isinstance(suspects, list):
        return []
    return [s for s in suspects if isinstance(s, dict) and isinstance(s.get("component"), str)
            and not s.get("alternative_to")]


def _failing_parts(document: dict[str, Any], rack: str) -> list[str]:
    named = document.get("failing_parts") or []
    ids = [p if isinstance(p, str) else (p.get("part") or p.get("component") or p.get("id"))
           for p in named if isinstance(p, (str, dict))]
    ids += list(_failing_components({k: v for k, v in document.items() if k not in ("failing_parts", "suspects")}, rack))
    return list(dict.fromkeys(i for i in ids if isinstance(i, str)))  # once each, in order


def _explained(document: dict[str, Any]) -> dict[str, str]:
    """{failing id: the localized suspect that explains it}. A burn-in summary lists the parts the
    localizer named (suspects) and every failing GPU and link, so one bad connector appears as
    itself and as each link through it: the links it explains are attributed to it, so that
    each fault is counted once. A suspect itself is never explained by another."""
    suspects = _suspects(document)
    explained: dict[str, str] = {}
    for suspect in suspects:
        for link in suspect.get("links") or []:
            if isinstance(link, str) and link != suspect["component"]:
                explained.setdefault(link, suspect["component"])
    for suspect in suspects:
        explained.pop(suspect["component"], None)
    return explained


def record_burnin(summary: Any, ledger: Ledger | None = None, *, kind: str | None = None, at: Moment | None = None,
                  source: str | None = None, inventory: Inventory | None = None, parts: Parts | None = None) -> list[Record]:
    """Record a burn-in or acceptance run from its summary document; returns what was recorded.

    A passing acceptance puts a rack into service (its handover), unless it already was.
    """
    what = source or "burn-in summary"
    check_burnin_document(summary, what)
    recorded = []
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        for document, rack, facts in session.each_rack(tx, summary, what):
            run_kind = kind or (document.get("kind") if document.get("kind") in RUN_KINDS else "burnin")
            if run_kind not in RUN_KINDS:
                raise InputError(f"{what}: run kind {run_kind!r} is not one of {', '.join(RUN_KINDS)}")
            verdict = _verdict(document, what)
            finished = _time_of(document, at)
            ids = _failing_parts(document, rack)
            if verdict != "pass":  # the localized parts count even where failing_parts leaves them out
                ids = list(dict.fromkeys([*(s["component"] for s in _suspects(document)), *ids]))
            explained = _explained(document)
            resolved = [(i, session.parts.part(i, facts)) for i in ids]
            failing = []
            for raw, part in resolved:
                entry = {"part": part.id, "kind": part.kind}
                by = explained.get(raw) or explained.get(part.id)
                if by is not None and by in ids:  # its explainer is counted in this run
                    entry["explained_by"] = next(p.id for i, p in resolved if i == by)
                failing.append(entry)
            identity = _run_identity(document)
            key = content_key("run", identity) if identity else content_key("run", run_kind, finished, document)
            started = stored(document["created"], "the document's 'created'") if document.get("created") else None
            record = {"key": key, "rack": rack, "kind": run_kind, "started_at": started, "finished_at": finished,
                      "verdict": verdict,
                      "failing_parts": failing, "source": str(source) if source else None,
                      "recorded_at": stored(utc_now())}
            new, updated = _put_run(tx, record)
            handover = None
            # A trial acceptance (loaded for less than its criteria ask) hands nothing over.
            if run_kind == "accept" and verdict == "pass" and not document.get("trial"):
                tx.execute("UPDATE racks SET handover_at = :finished WHERE rack = :rack AND handover_at IS NULL",
                           {"finished": finished, "rack": rack})
                rack_row = tx.row("SELECT handover_at FROM racks WHERE rack = :rack", {"rack": rack})
                handover = rack_row["handover_at"] if rack_row else None  # the rack was recorded above: a row
            recorded.append({**record, "new": new, "updated": updated, "handover_at": handover})
    return recorded


def _run_identity(document: dict[str, Any]) -> str | None:
    """What names one run however often it is resumed or judged: the run_id a run folder's
    summary carries; for a summary of a run made before runs had one, its rack, kind and
    creation time (as RunDirectory.run_id names such a run). None for a hand-written document."""
    if isinstance(document.get("run_id"), str) and document["run_id"]:
        return document["run_id"]
    if document.get("format") == "opsctl-burnin/1" and document.get("created") and document.get("kind"):
        return f"{document.get('rack')}/{document['kind']}/{document['created']}"
    return None


def _put_run(tx: Transaction, record: Record) -> tuple[bool, bool]:
    """Insert the run, or bring its row up to this judgment of it: (new, updated)."""
    refuse_overlap(tx, record)
    if Ledger.insert(tx, "runs", record):
        return True, False
    present = Ledger.select(tx, "runs", "key = :key", {"key": record["key"]})[0]
    judged = ("kind", "verdict", "failing_parts")
    if all(present[c] == record[c] for c in judged):
        return False, False  # the same judgment again (a resume of a finished run): nothing changes
    Ledger.update(tx, "runs", record["key"], {c: record[c] for c in (*judged, "started_at", "finished_at", "source")})
    return False, True


def refuse_overlap(tx: Transaction, record: Record) -> None:
    """One run of a rack at a time: a run whose time (started_at to finished_at; a run recorded
    without its start is its finish) overlaps another run of the rack is refused, naming that one.
    Both loaded the rack at once, so neither's figures can be trusted (issue 28)."""
    if record.get("started_at") and record["started_at"] > record["finished_at"]:
        raise InputError(f"run {record['key']}: started {record['started_at']}, after it finished {record['finished_at']}")
    start = record.get("started_at") or record["finished_at"]
    other = tx.row("SELECT key, kind, started_at, finished_at, source FROM runs WHERE rack = :rack AND key <> :key "
                   "AND COALESCE(started_at, finished_at) < :end AND :start < finished_at "
                   "ORDER BY finished_at, key", {"rack": record["rack"], "key": record["key"], "start": start,
                                                 "end": record["finished_at"]})
    if other is not None:
        when = f"{other['started_at'] or other['finished_at']} to {other['finished_at']}"
        source = f", from {other['source']}" if other["source"] else ""
        raise InputError(f"rack {record['rack']}: this run ({start} to {record['finished_at']}) overlaps {other['kind']} "
                         f"run {other['key']} ({when}{source}) already in the ledger: one run of a rack at a time; "
                         "nothing was recorded")


# --- triage --------------------------------------------------------------------------------
def _chosen_action(session: RecordingSession, suspect: dict[str, Any], part: Part, facts: RackFacts) -> str | None:
    """The repair the triage chose, as an action name of the repair model."""
    if part.kind == "rack":
        return None
    said = suspect.get("action_name") or suspect.get("action")
    for action in session.parts.mttr.actions.values():
        if said in (action.name, action.action):
            return action.name
    return session.parts.default_action(part, facts).name


def _faults(document: dict[str, Any], what: str, rack: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The faults a triage names: every suspect not offered only as an alternative to another
    (localize orders them most likely first)."""
    suspects = document.get("suspects") or []
    if not isinstance(suspects, list) or not all(isinstance(s, dict) for s in suspects):
        raise InputError(f"{what}: rack {rack}: \"suspects\" must be a list of objects")
    for number, suspect in enumerate(suspects, 1):
        if not isinstance(suspect.get("component"), str):
            raise InputError(f"{what}: rack {rack}: suspect {number} names no \"component\"")
    return suspects, [s for s in suspects if not s.get("alternative_to")]


def record_triage(result: Any, ledger: Ledger | None = None, *, at: Moment | None = None, source: str | None = None,
                  inventory: Inventory | None = None, parts: Parts | None = None) -> list[dict[str, Any]]:
    """Record a triage (or localize) result: one triage per rack, and each fault it names as an
    incident of its part — or, while that part's fault is still open, as the incident it already
    has. The triage's chosen part and action are its first suspect's."""
    what = source or "triage result"
    check_triage_document(result, what)
    recorded = []
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        for document, rack, facts in session.each_rack(tx, result, what):
            suspects, faults = _faults(document, what, rack)
            healthy = bool(document.get("healthy", not suspects)) and not suspects
            when = _time_of(document, at)
            named = [session.parts.part(s["component"], facts) for s in faults]
            chosen = session.parts.part(suspects[0]["component"], facts) if suspects else None
            action = _chosen_action(session, suspects[0], chosen, facts) if chosen is not None else None
            # The same triage has the same key however it reaches the ledger: recorded by
            # `opsctl triage` itself, or its --json (which holds more fields) by record-triage.
            key = content_key("tri", rack, when, suspects)
            new = Ledger.insert(tx, "triages", {
                "key": key, "rack": rack, "at": when, "healthy": int(healthy), "suspects": suspects,
                "chosen_part": chosen.id if chosen else None, "chosen_action": action,
                "source": str(source) if source else None, "recorded_at": stored(utc_now())})
            incidents = []
            for part in dict.fromkeys(named):  # a part named twice is one fault
                incident, opened = open_or_join(tx, {
                    "key": content_key("inc", key, part.id), "rack": rack, "occurred_at": when, "part": part.id,
                    "kind": part.kind, "origin": "triage", "triage_key": key, "note": None,
                    "recorded_at": stored(utc_now())})
                incidents.append({"key": incident["key"], "part": part.id, "kind": part.kind, "new": opened,
                                  "since": incident["occurred_at"]})
            first = next((i["key"] for i in incidents if chosen and i["part"] == chosen.id), None)
            recorded.append({"triage": key, "rack": rack, "at": when, "healthy": healthy, "new": new,
                             "incident": first, "incidents": incidents, "part": chosen.id if chosen else None,
                             "action": action})
    return recorded


# --- by hand -------------------------------------------------------------------------------
def record_incident(part_id: str, ledger: Ledger | None = None, *, at: Moment | None = None, note: str | None = None,
                    inventory: Inventory | None = None, parts: Parts | None = None) -> Record:
    """A failure (an interruption) of a part, said by hand; while the part's fault is still open,
    the incident it already has (with "new": False)."""
    rack = rack_of(part_id)
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        facts = session.rack(tx, rack)
        part = session.parts.part(part_id, facts)
        incident, opened = open_or_join(tx, {
            "key": new_key("inc"), "rack": rack, "occurred_at": stored(at or utc_now(), "--at"), "part": part.id,
            "kind": part.kind, "origin": "manual", "triage_key": None, "note": note, "recorded_at": stored(utc_now())})
    return {**incident, "new": opened}


def set_rack(name: str, ledger: Ledger | None = None, *, model: str | None = None, handover: Moment | None = None,
             retired: Moment | None = None, inventory: Inventory | None = None, parts: Parts | None = None,
             cohort: dict[str, str] | None = None) -> Record:
    """Add a rack to the ledger, or say when it went into service or was retired; `cohort` sets
    its vendor, batch or firmware (over what the inventory said)."""
    rack_of(name)
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        facts = session.rack(tx, name, model)
        if model and model != facts.model:
            raise InputError(f"rack {name} is recorded as {facts.model}, not {model}")
        changes = {}
        if handover is not None:
            changes["handover_at"] = stored(handover, "--handover")
        if retired is not None:
            changes["retired_at"] = stored(retired, "--retired")
        for field, value in (cohort or {}).items():
            if field not in COHORT_COLUMNS:
                raise InputError(f"{field!r} is not a cohort field ({', '.join(COHORT_COLUMNS)})")
            if not str(value).strip():
                raise InputError(f"--{field}: empty")
            changes[field] = str(value)
        if changes:
            Ledger.update(tx, "racks", name, changes)
        row = Ledger.select(tx, "racks", "rack = :rack", {"rack": name})[0]
        if row["handover_at"] and row["retired_at"] and row["retired_at"] < row["handover_at"]:
            raise InputError(f"rack {name}: retired {row['retired_at']} before its handover {row['handover_at']}")
    return row
