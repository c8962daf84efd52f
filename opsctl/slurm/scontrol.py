"""The scontrol calls opsctl makes, as argument lists (never a shell), and what `scontrol show
node` answers, parsed.

slurmctld is found the way every Slurm client finds it: $SLURM_CONF, else /etc/slurm/slurm.conf.
A client that is missing, or a controller that does not answer, is an IncompleteError (exit 3):
containment that could not be done is never reported as done.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from opsctl.errors import IncompleteError

SCONTROL = "scontrol"
TIMEOUT_S = 30.0
# `scontrol show node` ends a reason with who set it and when: "fan broken [root@2026-11-30T12:00:00]".
_SET_BY = re.compile(r"\s*\[([^@\]]*)@([^\]]*)\]\s*$")


@dataclass(frozen=True)
class NodeState:
    """A node as slurmctld sees it."""

    name: str
    state: str  # IDLE, IDLE+DRAIN, DOWN+DRAIN, ALLOCATED+DRAIN (draining), DOWN*, …
    reason: str  # "" when none
    reason_by: str  # who set the reason ("" when none)
    reason_at: str

    @property
    def flags(self) -> set[str]:
        return set(self.state.rstrip("*").split("+"))

    @property
    def drained(self) -> bool:
        """Drained or draining: no new job lands on it."""
        return "DRAIN" in self.flags

    @property
    def out_of_service(self) -> bool:
        """Drained, or down/failed: slurmctld gives it no work."""
        return self.drained or bool(self.flags & {"DOWN", "FAIL", "FAILING"}) or self.state.endswith("*")


def parse_show_node(text: str) -> dict[str, NodeState]:
    """{node name: NodeState} from `scontrol show node` output (one block of lines per node).
    `Reason=` runs to the end of its line (it may hold spaces and '='); every other field is one
    KEY=VALUE word."""
    nodes: dict[str, NodeState] = {}
    current: dict[str, str] | None = None
    reason = ""

    def close() -> None:
        if current is not None:
            match = _SET_BY.search(reason)
            text = reason[:match.start()] if match else reason
            nodes[current["NodeName"]] = NodeState(current["NodeName"], current.get("State", ""), text.strip(),
                                                   match.group(1) if match else "", match.group(2) if match else "")

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("NodeName="):
            close()
            current, reason = {}, ""
        if current is None or not stripped:
            continue
        if stripped.startswith("Reason="):
            reason = stripped[len("Reason="):]
            continue
        for word in stripped.split():
            key, sep, value = word.partition("=")
            if sep:
                current.setdefault(key, value)
    close()
    return nodes


def show_nodes_argv(nodes: Sequence[str]) -> list[str]:
    return [SCONTROL, "show", "node", ",".join(nodes)]


def drain_argv(nodes: Sequence[str], reason: str) -> list[str]:
    return [SCONTROL, "update", f"NodeName={','.join(nodes)}", "State=DRAIN", f"Reason={reason}"]


def resume_argv(nodes: Sequence[str]) -> list[str]:
    return [SCONTROL, "update", f"NodeName={','.join(nodes)}", "State=RESUME"]


def shown(argv: Sequence[str]) -> str:
    """The command as an operator would type it."""
    return shlex.join(argv)


class ClientMissing(IncompleteError):
    """The Slurm client itself is not installed: no node is "not found", the program is."""


def run(argv: Sequence[str], timeout_s: float = TIMEOUT_S) -> str:
    """Run a Slurm client; its stdout, or IncompleteError with the client's own words."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ClientMissing(f"{argv[0]} not found: the Slurm clients are not installed here (nothing was "
                              "drained or resumed)") from None
    except subprocess.TimeoutExpired:
        raise IncompleteError(f"{shown(argv)}: no answer from slurmctld within {timeout_s:g} s") from None
    if done.returncode != 0:
        said = " ".join(done.stderr.split()) or f"exit {done.returncode}"
        raise IncompleteError(f"{shown(argv)}: {said}")
    return done.stdout


def node_states(nodes: Sequence[str]) -> dict[str, NodeState]:
    """{node: NodeState} for the nodes slurmctld knows; IncompleteError names any it does not."""
    if not nodes:
        return {}
    try:
        states = parse_show_node(run(show_nodes_argv(nodes)))
    except IncompleteError as error:
        if isinstance(error, ClientMissing) or "not found" not in str(error).lower():
            raise
        states = {}
        for node in nodes:  # which one is unknown: ask one by one
            try:
                states.update(parse_show_node(run(show_nodes_argv([node]))))
            except IncompleteError:
                pass
    unknown = [node for node in nodes if node not in states]
    if unknown:
        raise IncompleteError(f"slurmctld knows no node {', '.join(unknown)} (set opsctl_slurm_node in the "
                              "inventory to the tray's Slurm node name)")
    return states
