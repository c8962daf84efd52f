"""`opsctl burnin RACK`: run the probes on every tray at once, judge the rack, write the reports.

Also the flow `opsctl accept` shares (accept.py): the fan-out options, starting or resuming
a run, the live progress, and the verdict's exit code.
"""

from __future__ import annotations

import dataclasses
import signal
import tempfile
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich.console import Console

from opsctl.burnin.preflight import preflight
from opsctl.burnin.session import execute, make_plan, resume_run, start_run
from opsctl.cli.commands.drain import contain
from opsctl.cli.context import inventory_option, rack_from
from opsctl.cli.ledger_options import record_in_ledger, recording_options
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import EXIT_INCOMPLETE, InputError
from opsctl.fanout.options import reach_options
from opsctl.input_checks import seconds
from opsctl.inventory import load_inventory
from opsctl.ledger import record_burnin
from opsctl.regular_files import OutputFolder
from opsctl.reports import print_summary
from opsctl.runs.run_lock import RackLock

if TYPE_CHECKING:
    from pathlib import Path

    from click.decorators import FC

    from opsctl.burnin.session import Plan
    from opsctl.inventory import Rack

DEFAULT_DURATION_S = 20.0  # a quick burn-in; acceptance runs take the criteria's duration (900 s)


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.ensure_object(dict)[param.name] = value
    return value


def rack_run_options(command: FC) -> FC:
    """Options of every command that runs the probes on a rack's trays."""
    for option in reversed([
        click.argument("rack", required=False),
        inventory_option,
        click.option("--out", type=OutputFolder(), help="Run folder (default: a new one under "
                     "$XDG_STATE_HOME/opsctl/runs, else ~/.local/state/opsctl/runs)."),
        click.option("--resume", metavar="RUN", help="Finish an earlier run (its folder or name): only trays without a result run again."),
        json_option,
        # Read by run_rack_command from the context, so the commands' signatures stay theirs.
        click.option("--via", type=click.Choice(["slurm"]), expose_value=False, callback=_remember,
                     help="Run the compute trays' probes as one Slurm job, one task per tray (docs/slurm.md); "
                          "default: the inventory's opsctl_transport."),
        click.option("--drain", is_flag=True, expose_value=False, callback=_remember,
                     help="Drain in Slurm the nodes each failing part's repair takes out of service (opsctl drain)."),
        click.option("--dry-run", is_flag=True, expose_value=False, callback=_remember,
                     help="With --drain: print the exact scontrol commands the drain would run and run none (the "
                          "probes still run)."),
        click.option("--force", is_flag=True, expose_value=False, callback=_remember,
                     help="Run even while another burn-in or acceptance of the rack runs on this machine (both "
                          "loads skew each other's figures; the ledger still refuses two runs of a rack that overlap)."),
    ]):
        command = option(command)
    return recording_options(reach_options(command))


def run_rack_command(ctx: click.Context, kind: str, rack: str | None, resume: str | None, out: str | None, as_json: bool,
                     new_plan: Callable[[], Plan], record: bool = True, db: str | None = None) -> NoReturn:
    """Start (or resume) a run, show its progress, print the verdict, record it in the ledger;
    exit with the verdict's code."""
    via, drain, dry_run, force = ctx.obj.get("via"), ctx.obj.get("drain"), ctx.obj.get("dry_run"), ctx.obj.get("force")
    if dry_run and not drain:  # refused before the run: the probes run whatever --dry-run says
        raise InputError(f"--dry-run goes with --drain (it shows the drain's scontrol commands); "
                         f"opsctl {kind} runs the probes either way")
    if resume:
        if via:
            raise InputError("--via cannot change a resumed run: it keeps the way it reached the trays")
        if out:
            raise InputError("--out and --resume do not go together: a resumed run stays in its folder")
        run, plan, meta = resume_run(resume)
        if ctx.get_parameter_source("concurrency") == click.core.ParameterSource.COMMANDLINE:
            # How many trays work at once is how the rest is reached, not what the run judges.
            plan = dataclasses.replace(plan, concurrency=ctx.params["concurrency"])
        if plan.kind != kind:
            raise InputError(f"{run.path} is an `opsctl {plan.kind}` run: resume it with opsctl {plan.kind} --resume")
        if rack and rack != meta["rack"]:
            raise InputError(f"{run.path} is a run of rack {meta['rack']}, not {rack}")
        inventory = ctx.find_root().obj.get("inventory") or meta.get("inventory")
        chosen = load_inventory(inventory).rack(meta["rack"])
        held = None if force else _hold(ctx, chosen.name, kind)  # after the run's own lock: a second --resume says so
        todo = [t.name for t in chosen.trays if t.name not in run.completed_trays()]
        if todo:  # the plan stays the run's: a probe the run left out stays out
            _preflight(ctx, kind, chosen, plan, todo, run.path, as_json, drain and not dry_run)
    else:
        if not rack:
            raise click.UsageError("Missing argument 'RACK' (or --resume RUN).")
        chosen = rack_from(ctx, rack)
        plan = new_plan()
        if via:
            plan = dataclasses.replace(plan, via=via)
        held = None if force else _hold(ctx, chosen.name, kind)  # refused before the run folder is made
        with tempfile.TemporaryDirectory(prefix="opsctl-preflight-") as workdir:
            plan = _preflight(ctx, kind, chosen, plan, [t.name for t in chosen.trays], workdir, as_json, drain and not dry_run)
        run = start_run(chosen, plan, out)
    if held is not None:
        held.name_run(run.path)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # `kill` or a service stop ends the run as Ctrl-C does
    try:
        judgment, summary = execute(chosen, run, plan, progress_console=Console(stderr=True, highlight=False))
    finally:
        signal.signal(signal.SIGTERM, previous)
    if as_json:
        print_json(summary)
    else:
        print_summary(console(), summary)
    if record:
        record_in_ledger(ctx, record_burnin, summary, db, f"opsctl ledger record-burnin {run.path}")
    if drain:
        actions = {s["component"]: s.get("repair") for s in summary.get("suspects", [])}
        contain(ctx, chosen, [(part, actions.get(part)) for part in summary.get("failing_parts", [])], record=record,
                db=db, dry_run=dry_run, to_stderr=as_json)
    ctx.exit(summary["exit_code"])  # an interrupted run is incomplete (exit 3), whatever it found


def _preflight(ctx: click.Context, kind: str, rack: Rack, plan: Plan, trays: list[str], workdir: str | Path,
               as_json: bool, slurm_controller: bool) -> Plan:
    """Ask the trays whether they can run the plan, before any load (opsctl/burnin/preflight.py):
    say each problem in one line; end incomplete (exit 3), nothing loaded, when one stops the
    run; return the plan, without the optional probes the trays cannot run."""
    checked = preflight(rack, plan, plan.criteria, trays, workdir, slurm_controller=slurm_controller)
    for line in checked.lines():
        click.echo(f"opsctl: preflight: {line}", err=True)
    if checked.blocking:
        stopping = sum(p.blocking for p in checked.problems)
        click.echo(f"opsctl: preflight: {stopping} thing(s) above stop this {kind} of {rack.name}: nothing was loaded; "
                   f"INCOMPLETE (exit {EXIT_INCOMPLETE}) after {checked.seconds:.1f} s", err=True)
        if as_json:
            print_json({"kind": kind, "rack": rack.name, "verdict": "INCOMPLETE", "exit_code": EXIT_INCOMPLETE,
                        "interrupted": False, "preflight": checked.to_dict()})
        ctx.exit(EXIT_INCOMPLETE)
    if checked.skipped:
        plan = dataclasses.replace(plan, probes=tuple(p for p in plan.selected_probes(plan.criteria)
                                                      if p not in checked.skipped))
    return plan


def _hold(ctx: click.Context, rack: str, kind: str) -> RackLock:
    """The rack, for this run (runs/run_lock.py); released as the command ends, however it ends
    (in-process too: an exception's traceback would otherwise keep it held)."""
    held = RackLock(rack, kind)
    ctx.call_on_close(held.release)
    return held


def _interrupt(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


def reject_with_resume(resume: str | None, **given: object) -> None:
    named = [f"--{name.replace('_', '-')}" for name, value in given.items() if value is not None]
    if resume and named:
        raise InputError(f"{', '.join(named)} cannot change a resumed run: it keeps the options it started with")


@click.command("burnin")
@rack_run_options
@click.option("--duration", type=seconds(),
              help=f"Seconds of load on each tray (default {DEFAULT_DURATION_S:g}; a full burn-in: --duration 900 or more).")
@click.option("--run-timeout", type=seconds(1, min_open=False), help="Seconds before a tray's probe is given up as "
              "incomplete (default: the duration plus 120).")
@click.option("--probes", "probes", metavar="LIST", help="Comma-separated, of gemm,membw,nvlink,counters and collective "
              "(the rack's NVLink domain as one NCCL job, after IMEX and the fabric are checked); default: the tray "
              "probes of the default criteria, without collective.")
@click.pass_context
def command(ctx: click.Context, rack: str | None, out: str | None, resume: str | None, concurrency: int,
            connect_timeout: float, accept_new_host_keys: bool, ssh_config: str | None, as_json: bool, record: bool,
            db: str | None, duration: float | None, run_timeout: float | None, probes: str | None) -> None:
    """Burn in a rack: GEMM, memory and NVLink load with every counter read before and after, on
    all trays at once; the verdict names every failing GPU, link and part (exit 1), or says
    which trays did not report (exit 3)."""
    reject_with_resume(resume, duration=duration, run_timeout=run_timeout, probes=probes, ssh_config=ssh_config)
    chosen = tuple(p.strip() for p in probes.split(",") if p.strip()) if probes is not None else None
    run_rack_command(ctx, "burnin", rack, resume, out, as_json, lambda: make_plan(
        "burnin", duration_s=duration or DEFAULT_DURATION_S, concurrency=concurrency, connect_timeout_s=connect_timeout,
        run_timeout_s=run_timeout, accept_new_host_keys=accept_new_host_keys, probes=chosen, ssh_config=ssh_config), record, db)
