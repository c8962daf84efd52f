"""The preflight of `opsctl burnin` and `opsctl accept`: before any load, can each tray run what
the run asks of it? A run that cannot work says so within seconds, one line per missing thing
with what installs or starts it, instead of after its load.

    checked = preflight(rack, plan, criteria, trays, workdir, slurm_controller=drain and not dry_run)
    for line in checked.lines(): ...
    if checked.blocking: exit 3, nothing loaded

What is asked, on each tray through the run's own fan-out (`python -m probes preflight`, no load,
probes/preflight.py): the backend opens (pynvml and the driver, or the simulator), the module of
every selected probe imports, the load probes' compute device is there (PyTorch with CUDA on a real
tray) and, where the domain test runs, the collective's (torch.distributed with NCCL). Trays
reached by the local transport all run here, under this Python: one of them answers for all.
Here: a Slurm controller that answers, when the run is to drain in it.

What stops the run (incomplete, exit 3, nothing loaded): something a selected probe needs is
missing, unless the criteria list that probe under `optional_probes` — then the run goes on
without it and says so. What does not: a tray that does not answer. The other trays are worth
their load, and `--resume` later runs only the trays without a result; the run still ends
incomplete, naming the tray. IMEX and the fabric are not asked here: a rack without them fails
the domain test's prerequisites (exit 1), which judge them on every compute tray before the
collective's load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from opsctl.backend import sim_spec_for
from opsctl.burnin.nvlink_domain import PROBE as DOMAIN_PROBE
from opsctl.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from opsctl.fanout import FanoutOptions, run_on_trays

if TYPE_CHECKING:
    from pathlib import Path

    from opsctl.acceptance.criteria import Criteria
    from opsctl.backend import RackSpec
    from opsctl.burnin.session import Plan
    from opsctl.fanout import TrayResult
    from opsctl.inventory import Rack, Tray

PREFLIGHT_TIMEOUT_S = 25.0  # a tray's answer: Python starting, PyTorch importing; the whole stays within 30 s
LOCAL_TRIES = 3  # local trays answering for all: the next is asked when one is a simulated unreachable tray
START_SLURM = "start it: systemctl start slurmctld (or point SLURM_CONF at the cluster's slurm.conf)"


@dataclass(frozen=True)
class Problem:
    """One thing the run cannot do: where, what and why, and whether it stops the run."""

    where: str  # a tray id, "rack07 (its trays run on this machine)", or "Slurm"
    reason: str
    blocking: bool

    def line(self) -> str:
        return f"{self.where}: {self.reason}"

    def to_dict(self) -> dict[str, object]:
        return {"where": self.where, "reason": self.reason, "blocking": self.blocking}


@dataclass
class Preflight:
    problems: list[Problem] = field(default_factory=list)
    skipped: tuple[str, ...] = ()  # optional probes that cannot run: the run goes on without them
    seconds: float = 0.0

    @property
    def blocking(self) -> bool:
        return any(p.blocking for p in self.problems)

    def lines(self) -> list[str]:
        return [p.line() for p in self.problems]

    def to_dict(self) -> dict[str, object]:
        return {"problems": [p.to_dict() for p in self.problems], "skipped": list(self.skipped),
                "seconds": round(self.seconds, 1)}


def preflight(rack: Rack, plan: Plan, criteria: Criteria, trays: list[str], workdir: str | Path,
              slurm_controller: bool = False) -> Preflight:
    """Ask the trays named (those the run is about to load) and, when asked, Slurm."""
    clock = time.monotonic()
    checked = Preflight()
    if slurm_controller:
        checked.problems += _slurm_controller()
    selected = plan.selected_probes(criteria)
    tray_probes = [p for p in selected if p != DOMAIN_PROBE] or ["counters"]
    argv = ["preflight", "--probes", ",".join(tray_probes), "--json"]
    if DOMAIN_PROBE in selected:
        argv.insert(-1, "--collective")
    options = FanoutOptions(concurrency=plan.concurrency, connect_timeout_s=plan.connect_timeout_s,
                            run_timeout_s=PREFLIGHT_TIMEOUT_S, accept_new_host_keys=plan.accept_new_host_keys,
                            via=plan.via, ssh_config=plan.ssh_config)
    spec = sim_spec_for(rack)
    chosen = [t for t in rack.trays if t.name in set(trays)]
    if rack.transport == "local" and plan.via == "inventory":
        results, where = _one_answers_for_all(rack, chosen, argv, options, workdir, spec)
    else:
        results = run_on_trays(rack, argv, trays=[t.name for t in chosen], options=options, workdir=workdir,
                               sim_spec=spec)
        where = {r.tray: rack.model.tray_id(rack.name, r.tray) for r in results}
    optional = set(criteria.optional_probes)
    skipped: set[str] = set()
    for result in results:
        for problem, probes in _problems(result, where[result.tray]):
            if probes and probes <= optional:
                skipped |= probes
                problem = Problem(problem.where, f"{problem.reason} — optional in the criteria {criteria.name}: "
                                                 f"the run goes on without {', '.join(sorted(probes))}", False)
            checked.problems.append(problem)
    checked.skipped = tuple(p for p in selected if p in skipped)
    checked.seconds = time.monotonic() - clock
    return checked


def _one_answers_for_all(rack: Rack, chosen: list[Tray], argv: list[str], options: FanoutOptions, workdir: str | Path,
                         spec: RackSpec | None) -> tuple[list[TrayResult], dict[str, str]]:
    """Local trays all run under this Python: a compute tray answers for every tray (a switch
    tray loads nothing). The trays it finds unreachable are said, and the next is asked."""
    compute = [t for t in chosen if not t.is_switch] or chosen
    results: list[TrayResult] = []
    where: dict[str, str] = {}
    for tray in compute[:LOCAL_TRIES]:
        result, = run_on_trays(rack, argv, trays=[tray.name], options=options, workdir=workdir,
                               sim_spec=spec)
        results.append(result)
        if _unreachable(result):
            where[tray.name] = rack.model.tray_id(rack.name, tray.name)
            continue
        where[tray.name] = f"{rack.name} (local trays, asked as {tray.name})"
        break
    return results, where


def _unreachable(result: TrayResult) -> bool:
    """Not answering (no connection, a timeout, a sick driver: exit 3) — not a missing thing. A
    probe that crashed on its own code (its internal error) would crash the run's too."""
    return result.exit_code not in (EXIT_OK, EXIT_FAILED, EXIT_USAGE) and "internal error" not in (result.reason or "")


def _problems(result: TrayResult, where: str) -> list[tuple[Problem, set[str]]]:
    """What one tray's answer says is missing: (problem, the probes it stops)."""
    if _unreachable(result):
        return [(Problem(where, f"not reachable ({result.reason or 'no answer'}): its probes will not run and the run "
                                "ends incomplete; the other trays run, and --resume RUN later runs only the trays "
                                "without a result", False), set())]
    if result.exit_code == EXIT_USAGE or not result.document:
        reason = (result.reason or "the probe refused to run").removeprefix("probe refused to run (exit 2): ")
        if "invalid choice: 'preflight'" in reason:
            reason = ("the probes on this tray are older than this opsctl (no `preflight`): redeploy them "
                      "(ansible-playbook ansible/deploy.yml)")
        return [(Problem(where, f"the probe cannot start: {reason}", True), set())]
    found = []
    for item in result.document.get("missing") or []:
        probes = {p for p in str(item.get("probe", "")).split(",") if p}
        found.append((Problem(where, f"{item.get('probe')} cannot run: {item.get('reason')}", True), probes))
    return found


def _slurm_controller() -> list[Problem]:
    """The controller answers `scontrol ping`, or one problem saying why not."""
    from opsctl.errors import IncompleteError
    from opsctl.slurm import scontrol

    try:
        said = scontrol.run(["scontrol", "ping"])
    except IncompleteError as error:
        return [Problem("Slurm", f"--drain needs a controller that answers: {error}; {START_SLURM}", True)]
    if "DOWN" in said:
        return [Problem("Slurm", f"--drain needs a controller that answers: scontrol ping: {' '.join(said.split())}; "
                                 f"{START_SLURM}", True)]
    return []
