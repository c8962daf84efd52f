"""The recording API: what burn-in, acceptance and triage already print (their --json
documents) goes into the ledger with one call, and so do racks and incidents said by hand.

    record_burnin(summary)        # opsctl burnin / accept
    record_triage(result)         # opsctl triage / localize
    record_incident(part, at=…)   # a failure nobody triaged with opsctl

Each call is one write transaction. Recording the same document twice adds nothing (its key
is a digest of its content), so a retried hook or a re-run import is harmless.
"""

from opsctl.errors import InputError
from opsctl.ledger.parts import Parts, rack_of
from opsctl.ledger.store import Ledger, content_key, new_key, open_ledger
from opsctl.ledger.timestamps import stored, utc_now

VERDICTS = ("pass", "fail", "incomplete")
RUN_KINDS = ("burnin", "accept")
_VERDICT_WORDS = {"pass": "pass", "passed": "pass", "healthy": "pass", "ok": "pass",
                  "fail": "fail", "failed": "fail", "unhealthy": "fail",
                  "incomplete": "incomplete", "error": "incomplete"}
_TIME_FIELDS = ("finished", "finished_at", "taken", "time", "at", "started", "started_at")  # taken: a snapshot's moment


class RecordingSession:
    """A ledger (opened here unless given; closed here only then) and the part resolver."""

    def __init__(self, ledger=None, inventory=None, parts=None):
        self.owned = ledger is None
        self.ledger = ledger if ledger is not None else open_ledger()
        self.parts = parts or Parts(inventory)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        if self.owned:
            self.ledger.close()

    def rack(self, tx, name, model=None):
        """The rack's facts; a rack new to the ledger is added from the inventory or `model`."""
        recorded = tx.row("SELECT rack, model, gpus FROM racks WHERE rack = ?", (name,))
        facts = self.parts.rack_facts(name, recorded, model)
        if recorded is None:
            Ledger.insert(tx, "racks", {"rack": name, "model": facts.model, "gpus": facts.gpus,
                                        "recorded_at": stored(utc_now())})
        return facts

    def each_rack(self, tx, document, what):
        """(rack's document, rack name, rack facts) for each rack the document covers."""
        for part in _rack_documents(document, what):
            name = _rack_name(part, what)
            yield part, name, self.rack(tx, name, part.get("model"))


def _time_of(document, at):
    if at is not None:
        return stored(at, "--at")
    for field in _TIME_FIELDS:
        if document.get(field):
            return stored(document[field], f"the document's {field!r}")
    return stored(utc_now())


def _rack_documents(document, what):
    """A document covers one rack, or several under "racks" (as localize prints)."""
    if not isinstance(document, dict):
        raise InputError(f"{what}: expected a JSON object")
    if isinstance(document.get("racks"), list):
        shared = {k: v for k, v in document.items() if k != "racks"}
        return [{**shared, **rack} for rack in document["racks"] if isinstance(rack, dict)]
    return [document]


def _rack_name(document, what):
    name = document.get("rack")
    if not isinstance(name, str):
        raise InputError(f"{what}: no \"rack\" in the document")
    rack_of(name)  # a valid name
    return name


# --- burn-in and acceptance ---------------------------------------------------------------
def _verdict(document, what):
    for field in ("verdict", "status", "result"):
        word = document.get(field)
        if isinstance(word, str) and word.lower() in _VERDICT_WORDS:
            return _VERDICT_WORDS[word.lower()]
    if isinstance(document.get("healthy"), bool):
        return "pass" if document["healthy"] else "fail"
    raise InputError(f"{what}: no verdict (a \"verdict\" of pass, fail or incomplete)")


def _failing_components(node, rack, tray=None):
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


def _failing_parts(document, rack):
    named = document.get("failing_parts") or []
    ids = [p if isinstance(p, str) else (p.get("part") or p.get("component") or p.get("id"))
           for p in named if isinstance(p, (str, dict))]
    ids += list(_failing_components({k: v for k, v in document.items() if k != "failing_parts"}, rack))
    return list(dict.fromkeys(i for i in ids if isinstance(i, str)))  # once each, in order


def record_burnin(summary, ledger=None, *, kind=None, at=None, source=None, inventory=None, parts=None):
    """Record a burn-in or acceptance run from its summary document; returns what was recorded.

    A passing acceptance puts a rack into service (its handover), unless it already was.
    """
    what = source or "burn-in summary"
    recorded = []
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        for document, rack, facts in session.each_rack(tx, summary, what):
            run_kind = kind or (document.get("kind") if document.get("kind") in RUN_KINDS else "burnin")
            if run_kind not in RUN_KINDS:
                raise InputError(f"{what}: run kind {run_kind!r} is not one of {', '.join(RUN_KINDS)}")
            verdict = _verdict(document, what)
            finished = _time_of(document, at)
            failing = [{"part": p.id, "kind": p.kind}
                       for p in (session.parts.part(i, facts) for i in _failing_parts(document, rack))]
            record = {"key": content_key("run", run_kind, finished, document), "rack": rack, "kind": run_kind,
                      "finished_at": finished, "verdict": verdict, "failing_parts": failing,
                      "source": str(source) if source else None, "recorded_at": stored(utc_now())}
            new = Ledger.insert(tx, "runs", record)
            handover = None
            if run_kind == "accept" and verdict == "pass":
                tx.execute("UPDATE racks SET handover_at = ? WHERE rack = ? AND handover_at IS NULL", (finished, rack))
                handover = tx.row("SELECT handover_at FROM racks WHERE rack = ?", (rack,))["handover_at"]
            recorded.append({**record, "new": new, "handover_at": handover})
    return recorded


# --- triage --------------------------------------------------------------------------------
def _chosen_action(session, suspect, part, facts):
    """The repair the triage chose, as an action name of the repair model."""
    if part.kind == "rack":
        return None
    said = suspect.get("action_name") or suspect.get("action")
    for action in session.parts.mttr.actions.values():
        if said in (action.name, action.action):
            return action.name
    return session.parts.default_action(part, facts).name


def record_triage(result, ledger=None, *, at=None, source=None, inventory=None, parts=None):
    """Record a triage (or localize) result: one triage per rack, and an incident for each rack
    that has a suspect (the first suspect: localize orders them most likely first)."""
    what = source or "triage result"
    recorded = []
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        for document, rack, facts in session.each_rack(tx, result, what):
            suspects = document.get("suspects") or []
            if not isinstance(suspects, list) or not all(isinstance(s, dict) for s in suspects):
                raise InputError(f"{what}: rack {rack}: \"suspects\" must be a list of objects")
            healthy = bool(document.get("healthy", not suspects)) and not suspects
            when = _time_of(document, at)
            part = action = None
            if suspects:
                top = suspects[0]
                if not isinstance(top.get("component"), str):
                    raise InputError(f"{what}: rack {rack}: the first suspect names no \"component\"")
                part = session.parts.part(top["component"], facts)
                action = _chosen_action(session, top, part, facts)
            key = content_key("tri", rack, when, document)
            new = Ledger.insert(tx, "triages", {
                "key": key, "rack": rack, "at": when, "healthy": int(healthy), "suspects": suspects,
                "chosen_part": part.id if part else None, "chosen_action": action,
                "source": str(source) if source else None, "recorded_at": stored(utc_now())})
            incident = None
            if part is not None:
                incident = key.replace("tri-", "inc-", 1)
                Ledger.insert(tx, "incidents", {
                    "key": incident, "rack": rack, "occurred_at": when, "part": part.id, "kind": part.kind,
                    "origin": "triage", "triage_key": key, "note": None, "recorded_at": stored(utc_now())})
            recorded.append({"triage": key, "rack": rack, "at": when, "healthy": healthy, "new": new,
                             "incident": incident, "part": part.id if part else None, "action": action})
    return recorded


# --- by hand -------------------------------------------------------------------------------
def record_incident(part_id, ledger=None, *, at=None, note=None, inventory=None, parts=None):
    """A failure (an interruption) of a part, said by hand."""
    rack = rack_of(part_id)
    with RecordingSession(ledger, inventory, parts) as session, session.ledger.write() as tx:
        facts = session.rack(tx, rack)
        part = session.parts.part(part_id, facts)
        record = {"key": new_key("inc"), "rack": rack, "occurred_at": stored(at or utc_now(), "--at"),
                  "part": part.id, "kind": part.kind, "origin": "manual", "triage_key": None, "note": note,
                  "recorded_at": stored(utc_now())}
        Ledger.insert(tx, "incidents", record)
    return record


def set_rack(name, ledger=None, *, model=None, handover=None, retired=None, inventory=None, parts=None):
    """Add a rack to the ledger, or say when it went into service or was retired."""
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
        if changes:
            Ledger.update(tx, "racks", name, changes)
        row = Ledger.select(tx, "racks", "rack = ?", (name,))[0]
        if row["handover_at"] and row["retired_at"] and row["retired_at"] < row["handover_at"]:
            raise InputError(f"rack {name}: retired {row['retired_at']} before its handover {row['handover_at']}")
    return row
