"""Draining the nodes a fault takes out of service, and putting them back — without ever
overwriting a drain someone else set.

What opsctl holds is written in the drain reason itself, where every operator and tool sees
it: `opsctl: rack07/ct12/j2 reseat_compute_tray incident inc-…` — one entry per part, joined
by "; " when two faults hold one node. A reason that does not start with `opsctl:` is
someone else's (an operator, NHC, slurmctld's "Not responding"): that node is left as it is
and reported. Resuming a part removes its entry; the node takes work again only when no entry
is left, so the repair of one part never puts back a node another fault still holds.

Each decision is one scontrol call over every node that gets the same reason (a rack drain is
one command), and `dry_run` returns those commands without running them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opsctl.errors import IncompleteError
from opsctl.slurm import scontrol

if TYPE_CHECKING:
    from opsctl.slurm.scope import PartScope

PREFIX = "opsctl:"

DRAINED = "drained"  # opsctl drained it now
ADDED = "added"  # already drained by opsctl for another part: this part is added to the reason
ALREADY = "already"  # already drained by opsctl for this part
LEFT = "left"  # someone else's drain (or down): left exactly as it is
RESUMED = "resumed"
KEPT = "kept"  # still held by opsctl for another part: stays drained, this part removed from the reason
NOT_DRAINED = "not_drained"
UNVALIDATED = "unvalidated"  # opsctl holds it for a part not validated since its drain: stays drained

HEALTH_ACTION = "health_check"  # the action a health drain's reason names (not a repair: the check failed)


@dataclass(frozen=True)
class Hold:
    """One part's claim on a node, as it reads in the reason."""

    part: str
    action: str
    incident: str | None = None
    detail: str = ""  # what the action is about, in a few words (a health check's failing checks)

    def text(self) -> str:
        words = [self.part, self.action, self.detail, f"incident {self.incident}" if self.incident else ""]
        return " ".join(word for word in words if word)


def reason_of(holds: Iterable[Hold]) -> str:
    return f"{PREFIX} " + "; ".join(hold.text() for hold in holds)


def holds_in(reason: str) -> list[Hold] | None:
    """The holds an opsctl reason lists; None when the reason is not opsctl's."""
    if not reason.startswith(PREFIX):
        return None
    holds: list[Hold] = []
    for entry in reason[len(PREFIX):].split(";"):
        words = entry.split()
        if not words:
            continue
        incident: str | None = None
        if "incident" in words[2:-1]:
            at = words.index("incident", 2)
            incident, words = words[at + 1], words[:at] + words[at + 2:]
        holds.append(Hold(words[0], words[1] if len(words) > 1 else "", incident, " ".join(words[2:])))
    return holds


def covers(asked: str, held: str) -> bool:
    """Whether resuming `asked` (a part, or a rack) releases a hold on `held`: the same part, or
    one holds the other (rack07 holds rack07/ct12, which holds rack07/ct12/j2)."""
    return asked == held or held.startswith(asked + "/") or asked.startswith(held + "/")


@dataclass
class NodeOutcome:
    node: str
    outcome: str
    detail: str
    state: str
    reason_before: str
    reason_after: str | None = None
    added: list[Hold] = field(default_factory=list)  # holds this call set
    released: list[Hold] = field(default_factory=list)  # holds this call removed


@dataclass
class Containment:
    verb: str  # drain | resume
    dry_run: bool
    nodes: list[NodeOutcome]  # NodeOutcome, in the order asked
    commands: list[list[str]]  # argv lists, run (or, dry run, to run) in this order
    unchecked: str = ""  # a dry run that could not read the nodes' current drains: why (slurmctld's words)

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.verb, "dry_run": self.dry_run, "checked_current_drains": not self.unchecked,
                "commands": [scontrol.shown(argv) for argv in self.commands],
                "nodes": [{"node": n.node, "outcome": n.outcome, "detail": n.detail, "state": n.state,
                           "reason_before": n.reason_before, "reason_after": n.reason_after,
                           "parts_added": [h.part for h in n.added], "parts_released": [h.part for h in n.released]}
                          for n in self.nodes]}


def _someone_else(state: scontrol.NodeState) -> str:
    set_by = f" [{state.reason_by}@{state.reason_at}]" if state.reason_by else ""
    return f"{state.state}, reason not opsctl's: {state.reason!r}{set_by}"


def _grouped(outcomes: Iterable[NodeOutcome], outcome_names: Collection[str],
             make_argv: Callable[[list[str], Any], list[str]]) -> list[list[str]]:
    """One command per distinct new reason (or one resume), over all nodes that get it.
    `make_argv(nodes, reason)`: the reason is the new one (a str), None for a resume."""
    groups: dict[str | None, list[str]] = {}
    for n in outcomes:
        if n.outcome in outcome_names:
            groups.setdefault(n.reason_after, []).append(n.node)
    return [make_argv(nodes, reason) for reason, nodes in groups.items()]


def drain_parts(wanted: Iterable[tuple[PartScope, str | None]], dry_run: bool = False,
                detail: str = "") -> Containment:
    """Drain for each (PartScope, incident key or None) in `wanted` the nodes it takes out."""
    holds: dict[str, list[Hold]] = {}
    for scope, incident in wanted:
        for node in scope.nodes:
            holds.setdefault(node, [])
            if all(h.part != scope.part for h in holds[node]):
                holds[node].append(Hold(scope.part, scope.action, incident, detail))
    states, unread = _states(list(holds), dry_run)
    outcomes: list[NodeOutcome] = []
    for node, wanted_holds in holds.items():
        state = states[node]
        ours = holds_in(state.reason) if state.reason else []
        if ours is None:
            outcomes.append(NodeOutcome(node, LEFT, f"left as it is: {_someone_else(state)}", state.state, state.reason))
            continue
        held_parts = {h.part for h in ours} if state.drained else set()
        new = [h for h in wanted_holds if h.part not in held_parts]
        kept = ours if state.drained else []
        if not new:
            outcomes.append(NodeOutcome(node, ALREADY, f"already drained by opsctl: {state.reason}", state.state,
                                        state.reason, state.reason))
            continue
        after = reason_of([*kept, *new])
        outcome = ADDED if kept else DRAINED
        if dry_run:  # says only what it would do
            detail = f"{'would stay drained; reason would be' if kept else 'would drain:'} {after}"
        else:
            detail = f"{'still drained; reason now' if kept else 'drained:'} {after}"
        outcomes.append(NodeOutcome(node, outcome, detail, state.state, state.reason, after, added=new))
    commands = _grouped(outcomes, (DRAINED, ADDED), lambda nodes, reason: scontrol.drain_argv(nodes, reason))
    return _carry_out(Containment("drain", dry_run, outcomes, commands, unchecked=unread))


UNREAD_STATE = "unknown"


def _states(nodes: list[str], dry_run: bool) -> tuple[dict[str, scontrol.NodeState], str]:
    """({node: state}, "") from slurmctld. A dry run that cannot ask it goes on as if no node were
    drained — it prints the commands and runs none — and says why: (blank states, slurmctld's words)."""
    try:
        return scontrol.node_states(nodes), ""
    except IncompleteError as error:
        if not dry_run:
            raise
        note = str(error)
        return {node: scontrol.NodeState(node, UNREAD_STATE, "", "", "") for node in nodes}, note


def resume_parts(parts: Collection[str], nodes: Iterable[str], dry_run: bool = False,
                 action: str | None = None, why_kept: Callable[[str, Hold], str | None] | None = None) -> Containment:
    """Release `parts` (part ids, or the rack's name) on `nodes` — only holds for `action`, when
    given; resume each node no other opsctl hold keeps drained. Nodes drained by someone else,
    or not drained, are left. `why_kept(node, hold)`, when given, says why a hold that would be
    released must stay (its part not validated since its drain), or None to release it."""
    asked = list(dict.fromkeys(nodes))
    states, unread = _states(asked, dry_run)
    outcomes: list[NodeOutcome] = []
    if unread:  # which holds each node has is not known: the resume it would run, all the same
        outcomes = [NodeOutcome(node, RESUMED, "would resume, if opsctl alone holds it for these parts", UNREAD_STATE,
                                "", None) for node in asked]
        return Containment("resume", dry_run, outcomes, [scontrol.resume_argv(asked)] if asked else [], unchecked=unread)
    for node, state in states.items():
        ours = holds_in(state.reason) if state.reason else []
        if ours is None:
            outcomes.append(NodeOutcome(node, LEFT, f"left drained: {_someone_else(state)}", state.state, state.reason))
            continue
        if not state.drained:
            outcomes.append(NodeOutcome(node, NOT_DRAINED, f"not drained ({state.state}): nothing to resume",
                                        state.state, state.reason))
            continue
        asked_for = [h for h in ours if any(covers(part, h.part) for part in parts) and action in (None, h.action)]
        refusals = {h: why for h in asked_for if why_kept and (why := why_kept(node, h))}
        released = [h for h in asked_for if h not in refusals]
        remaining = [h for h in ours if h not in released]
        unvalidated = "; ".join(f"{h.part}: {why}" for h, why in refusals.items())
        if refusals and not released:
            outcomes.append(NodeOutcome(node, UNVALIDATED, f"left drained, not validated: {unvalidated}",
                                        state.state, state.reason, state.reason))
        elif not released:
            outcomes.append(NodeOutcome(node, KEPT, f"left drained: opsctl holds it for another part: {state.reason}",
                                        state.state, state.reason, state.reason))
        elif remaining:
            after = reason_of(remaining)
            said = "would stay drained for another part; reason would be" if dry_run else \
                "stays drained for another part; reason now"
            not_yet = f" (not validated: {unvalidated})" if refusals else ""
            outcomes.append(NodeOutcome(node, KEPT, f"{said} {after}{not_yet}", state.state, state.reason, after,
                                        released=released))
        else:
            outcomes.append(NodeOutcome(node, RESUMED, "would resume" if dry_run else "resumed", state.state, state.reason,
                                        None, released=released))
    commands = [*_grouped([n for n in outcomes if n.released], (KEPT,), scontrol.drain_argv),
                *_grouped(outcomes, (RESUMED,), lambda nodes, _: scontrol.resume_argv(nodes))]
    return _carry_out(Containment("resume", dry_run, outcomes, commands))


def _carry_out(containment: Containment) -> Containment:
    if not containment.dry_run:
        for argv in containment.commands:
            scontrol.run(argv)
    return containment
