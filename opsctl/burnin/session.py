"""One burn-in of a rack, from start (or resume) to the written summary and reports.

    run = start_run(rack, plan, out)        # or: run, plan = resume_run(name)
    judgment = execute(rack, run, plan)

`execute` runs `python -m probes run` on every tray that has no result yet, keeps each tray's
raw JSON the moment it arrives, judges the rack from every result the run holds, and writes
summary.json, the rack's link-health snapshot, JUnit XML and the HTML handover report.
Starting or resuming a run locks its folder for this process (opsctl/runs/run_lock.py), so one
run is never run twice at once.
"""

from __future__ import annotations

import getpass
import json
import socket
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl import __version__
from opsctl.acceptance.criteria import PROBES, load_criteria
from opsctl.runs.trial import trial_fields
from opsctl.backend import sim_spec_for, topology_for
from opsctl.burnin.rack_judge import INCOMPLETE, TrayOutcome, judge_rack
from opsctl.burnin.nvlink_domain import DOMAIN_FILE, PROBE as DOMAIN_PROBE, DomainOptions, run_domain_test
from opsctl.burnin.progress import TrayProgress
from opsctl.errors import EXIT_INCOMPLETE, InputError
from opsctl.fanout import FanoutOptions, run_on_trays
from opsctl.regular_files import read_regular_text
from opsctl.reports import REPORT_FILES, write_reports
from opsctl.runs import RunDirectory
from opsctl.runs.journal import utc_now

if TYPE_CHECKING:
    from rich.console import Console

    from opsctl.acceptance.criteria import Criteria
    from opsctl.burnin.rack_judge import RackJudgment
    from opsctl.fanout.runner import TrayResult
    from opsctl.inventory import Rack, Tray
    from opsctl.topology.graph import Topology

SUMMARY_FORMAT = "opsctl-burnin/1"
# What judging writes; the summary lists the other files of the run, the raw ones, with their hashes.
JUDGED_FILES = ("summary.json", "snapshot.json", *REPORT_FILES)  # domain.json is raw: what the domain test read
RUN_TIMEOUT_MARGIN_S = 120.0  # beyond the load: starting Python, reading counters, ssh


@dataclass(frozen=True)
class Plan:
    """What a run does: which probes for how long, judged by which criteria, reached how."""

    kind: str  # burnin | accept
    criteria_file: str | None  # None: the default criteria
    duration_s: float
    concurrency: int
    connect_timeout_s: float
    run_timeout_s: float
    accept_new_host_keys: bool
    probes: tuple | None = None  # `opsctl burnin --probes`; None: the criteria's
    via: str = "inventory"  # `--via slurm`: the compute trays as one Slurm job (opsctl/fanout/slurm.py)
    ssh_config: str | None = None  # `--ssh-config`, resolved; None: the inventory's, else ~/.ssh/config

    @property
    def criteria(self) -> Criteria:
        return load_criteria(self.criteria_file)

    def fanout_options(self) -> FanoutOptions:
        return FanoutOptions(concurrency=self.concurrency, connect_timeout_s=self.connect_timeout_s,
                             run_timeout_s=self.run_timeout_s, accept_new_host_keys=self.accept_new_host_keys,
                             via=self.via, ssh_config=self.ssh_config)

    def selected_probes(self, criteria: Criteria) -> tuple[str, ...]:
        return tuple(self.probes or criteria.probes)

    def runs_domain_test(self, criteria: Criteria) -> bool:
        """Whether the rack's NVLink domain runs as one collective job after the tray probes."""
        return DOMAIN_PROBE in self.selected_probes(criteria)

    def probe_args(self, criteria: Criteria) -> list[str]:
        tray_probes = [p for p in self.selected_probes(criteria) if p != DOMAIN_PROBE] or ["counters"]
        return ["run", "--duration", f"{self.duration_s:g}", "--probes", ",".join(tray_probes), "--json"]


def make_plan(kind: str, criteria_file: str | None = None, duration_s: float | None = None,
              concurrency: int = FanoutOptions.concurrency, connect_timeout_s: float = FanoutOptions.connect_timeout_s,
              run_timeout_s: float | None = None, accept_new_host_keys: bool = False,
              probes: tuple[str, ...] | None = None, via: str | None = None, ssh_config: str | None = None) -> Plan:
    criteria = load_criteria(criteria_file)
    if probes is not None:
        unknown = [p for p in probes if p not in PROBES]
        if unknown or not probes:
            raise InputError(f"--probes: unknown probe {', '.join(unknown) or '(none)'} (known: {','.join(PROBES)})")
        probes = tuple(dict.fromkeys(probes))
    elif kind == "burnin":  # a quick burn-in loads the trays; the domain test runs when asked for (--probes …,collective)
        probes = tuple(p for p in criteria.probes if p != DOMAIN_PROBE)
    duration = criteria.duration_s if duration_s is None else duration_s
    if duration <= 0:
        raise InputError(f"--duration must be above 0 seconds, got {duration:g}")
    if concurrency < 1:
        raise InputError(f"--concurrency must be at least 1, got {concurrency}")
    if run_timeout_s is None:
        run_timeout_s = criteria.run_timeout_s if duration_s is None else duration + RUN_TIMEOUT_MARGIN_S
    if run_timeout_s <= duration:
        raise InputError(f"--run-timeout ({run_timeout_s:g} s) must be longer than --duration ({duration:g} s)")
    return Plan(kind=kind, criteria_file=str(Path(criteria_file).resolve()) if criteria_file else None, duration_s=duration,
                concurrency=concurrency, connect_timeout_s=connect_timeout_s, run_timeout_s=run_timeout_s,
                accept_new_host_keys=accept_new_host_keys, probes=probes, via=via or "inventory",
                ssh_config=str(Path(ssh_config).expanduser().resolve()) if ssh_config else None)


def operator() -> str:
    """Who ran it, as the report records: user@host."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def start_run(rack: Rack, plan: Plan, out: str | Path | None = None) -> RunDirectory:
    criteria = plan.criteria
    meta = {"inventory": str(Path(rack.source).resolve()), "created": utc_now(), "by": operator(), "plan": asdict(plan),
            "criteria": criteria.record()}
    run = RunDirectory.create(rack.name, plan.kind, meta, out)
    run.journal.record("run_created", rack=rack.name, kind=plan.kind, by=meta["by"])
    return run


def resume_run(name: str | Path) -> tuple[RunDirectory, Plan, dict[str, Any]]:
    """The run and its plan; the rack is read again from the inventory it recorded.

    The run is locked for this process (runs/run_lock.py): a second `--resume` of a run that
    is being run or resumed is refused, rather than running the trays' probes beside it."""
    run = RunDirectory.open(name).lock()
    meta = run.meta
    try:
        plan = Plan(**meta["plan"])
    except (KeyError, TypeError) as error:
        raise InputError(f"{run.path}: run.json has no usable plan ({error})") from None
    return run, plan, meta


def unchanged_criteria(run: RunDirectory, plan: Plan) -> Criteria:
    """The plan's criteria; refused when the file changed since the run started."""
    criteria = plan.criteria
    recorded = (run.meta.get("criteria") or {}).get("sha256")
    if recorded and recorded != criteria.sha256:
        raise InputError(f"{criteria.path} changed since run {run.path.name} started (sha256 {recorded[:12]}… then, "
                         f"{criteria.sha256[:12]}… now): start a new run")
    return criteria


def execute(rack: Rack, run: RunDirectory, plan: Plan,
            progress_console: Console | None = None) -> tuple[RackJudgment, dict[str, Any]]:
    """Run what is left, judge, write the summary and reports; return (judgment, summary)."""
    criteria = unchanged_criteria(run, plan)
    topology = topology_for(rack)
    done = run.completed_trays()
    todo = [tray for tray in rack.trays if tray.name not in done]
    run.journal.record("run_started", trays=[t.name for t in todo], resumed=bool(done), by=operator())
    stop = threading.Event()
    interrupted = False
    if todo:
        with TrayProgress(rack, todo, plan.duration_s, console=progress_console, already_done=sorted(done)) as progress:
            def finished(result: TrayResult) -> None:
                run.save_tray_result(result)  # first: nothing that arrived is lost
                progress.finished(result)

            def started(tray: Tray) -> None:
                run.journal.record("tray_started", tray=tray.name, host=tray.host)
                progress.started(tray)

            results = run_on_trays(rack, plan.probe_args(criteria), trays=[t.name for t in todo],
                                   options=plan.fanout_options(), workdir=run.path,
                                   sim_spec=sim_spec_for(rack, topology), on_start=started, on_result=finished, stop=stop)
            progress.note(f"judging {rack.name}: {len(rack.trays)} tray(s), {len(topology.links)} links …")
        # stop is set by the fan-out when Ctrl-C (or SIGTERM) reached it: a tray whose probe ended
        # as the signal came then has a result of its own, not one that says `interrupted`.
        interrupted = stop.is_set() or any(r.interrupted for r in results)
    if plan.runs_domain_test(criteria) and not interrupted and not (run.path / DOMAIN_FILE).exists():
        _domain_test(rack, run, plan, topology, progress_console, stop)
    return judge_run(rack, run, plan, topology, interrupted)


def _domain_test(rack: Rack, run: RunDirectory, plan: Plan, topology: Topology, progress_console: Console | None,
                 stop: threading.Event) -> None:
    """The rack's NVLink domain as one job, once the trays have reported (nvlink_domain.py)."""
    if progress_console is not None:
        progress_console.print(f"{rack.name}: NVLink domain test — prerequisites, then every GPU in one collective job …")
    run.journal.record("domain_started")
    options = DomainOptions(connect_timeout_s=plan.connect_timeout_s, accept_new_host_keys=plan.accept_new_host_keys,
                            ssh_config=plan.ssh_config)
    document = run_domain_test(rack, run.path, run.tray_documents(), sim_spec_for(rack, topology), options, stop)
    run.write_json(DOMAIN_FILE, document)
    run.journal.record("domain_finished", ran=document["ran"])


def judge_run(rack: Rack, run: RunDirectory, plan: Plan, topology: Topology | None = None,
              interrupted: bool = False) -> tuple[RackJudgment, dict[str, Any]]:
    """Judge every tray result the run holds; write summary.json, snapshot.json and the reports;
    return (judgment, summary). Also how `opsctl report` judges the racks Ansible ran."""
    criteria = plan.criteria
    topology = topology or topology_for(rack)
    # Judged again (`opsctl report RUN`) before a resume ran what the interruption stopped, the
    # run is still interrupted: the journal's last word on those trays says so.
    interrupted = interrupted or any(entry.get("interrupted") for entry in run.outcomes().values())
    outcomes = _outcomes(rack, run)
    domain_file = run.path / DOMAIN_FILE
    domain = json.loads(read_regular_text(domain_file)) if domain_file.exists() else None
    judgment = judge_rack(rack, topology, run.tray_documents(), outcomes, criteria, domain)
    if interrupted:
        judgment.notes.insert(0, f"interrupted: resume with `opsctl {plan.kind} --resume {run.path}`")
    summary = summarize(rack, run, plan, criteria, judgment, interrupted)
    run.write_json("summary.json", summary)
    run.write_json("snapshot.json", judgment.snapshot)
    write_reports(run, summary)
    run.journal.record("run_judged", verdict=summary["verdict"], interrupted=interrupted)
    return judgment, summary


def _outcomes(rack: Rack, run: RunDirectory) -> dict[str, TrayOutcome]:
    outcomes = {}
    for tray, entry in run.outcomes().items():
        outcomes[tray] = TrayOutcome(tray=tray, status=entry.get("status", "incomplete"), exit_code=entry.get("exit_code"),
                                     reason=entry.get("reason"), seconds=entry.get("seconds"), host=entry.get("host"))
    for tray in rack.missing_trays:
        outcomes[tray] = TrayOutcome(tray=tray, status="missing", reason="not in the inventory")
    return outcomes


def summarize(rack: Rack, run: RunDirectory, plan: Plan, criteria: Criteria, judgment: RackJudgment,
              interrupted: bool) -> dict[str, Any]:
    meta = run.meta
    judged = utc_now()
    return {
        "format": SUMMARY_FORMAT,
        "opsctl_version": __version__,
        "kind": plan.kind,
        "rack": rack.name,
        "model": rack.model.name,
        "description": rack.model.description,
        "interrupted": interrupted,
        "run": str(run.path),
        "run_id": run.run_id,  # one ledger row per run, however often it is resumed and judged
        "inventory": str(rack.source),
        "backend": rack.backend,
        "transport": rack.transport,
        "created": meta.get("created"),
        "judged": judged,
        "finished": judged,
        "by": operator(),
        "started_by": meta.get("by"),
        "criteria": criteria.record(),
        # an acceptance loaded for less than its criteria ask is a trial, and says so
        **trial_fields(plan.kind, plan.duration_s, criteria.duration_s),
        **judgment.to_dict(),
        # Stopped (Ctrl-C, kill) is incomplete, exit 3, whatever the trays that reported showed
        # (README): after the judgment's own verdict and exit code, which these replace. What the
        # trays that reported showed stays in `failing`, `suspects` and `checks`.
        **({"verdict": INCOMPLETE, "exit_code": EXIT_INCOMPLETE, "verdict_before_interruption": judgment.verdict}
           if interrupted else {}),
        # What to repair, for the fleet ledger (`opsctl ledger record-burnin RUN`): the parts the
        # localizer names, and every failing GPU and link.
        "failing_parts": judgment.failing_parts(),
        "files": [name for name in run.raw_files() if name not in JUDGED_FILES],
    }
