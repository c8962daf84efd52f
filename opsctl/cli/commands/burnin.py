"""`opsctl burnin RACK`: run the probes on every tray at once, judge the rack, write the reports.

Also the flow `opsctl accept` shares (accept.py): the fan-out options, starting or resuming
a run, the live progress, and the verdict's exit code.
"""

import signal

import click
from rich.console import Console

from opsctl.burnin.session import execute, make_plan, resume_run, start_run
from opsctl.cli.context import inventory_option, rack_from
from opsctl.cli.ledger_options import record_in_ledger, recording_options
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import InputError
from opsctl.fanout.options import reach_options
from opsctl.inventory import load_inventory
from opsctl.ledger import record_burnin
from opsctl.reports import print_summary

DEFAULT_DURATION_S = 20.0  # a quick burn-in; acceptance runs take the criteria's duration (900 s)


def rack_run_options(command):
    """Options of every command that runs the probes on a rack's trays."""
    for option in reversed([
        click.argument("rack", required=False),
        inventory_option,
        click.option("--out", type=click.Path(file_okay=False), help="Run folder (default: a new one under "
                     "$XDG_STATE_HOME/opsctl/runs, else ~/.local/state/opsctl/runs)."),
        click.option("--resume", metavar="RUN", help="Finish an earlier run (its folder or name): only trays without a result run again."),
        json_option,
    ]):
        command = option(command)
    return recording_options(reach_options(command))


def run_rack_command(ctx, kind, rack, resume, out, as_json, new_plan, record=True, db=None):
    """Start (or resume) a run, show its progress, print the verdict, record it in the ledger;
    exit with the verdict's code."""
    if resume:
        if out:
            raise InputError("--out and --resume do not go together: a resumed run stays in its folder")
        run, plan, meta = resume_run(resume)
        if plan.kind != kind:
            raise InputError(f"{run.path} is an `opsctl {plan.kind}` run: resume it with opsctl {plan.kind} --resume")
        if rack and rack != meta["rack"]:
            raise InputError(f"{run.path} is a run of rack {meta['rack']}, not {rack}")
        inventory = ctx.find_root().obj.get("inventory") or meta.get("inventory")
        rack = load_inventory(inventory).rack(meta["rack"])
    else:
        if not rack:
            raise click.UsageError("Missing argument 'RACK' (or --resume RUN).")
        rack = rack_from(ctx, rack)
        plan = new_plan()
        run = start_run(rack, plan, out)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # `kill` or a service stop ends the run as Ctrl-C does
    try:
        judgment, summary = execute(rack, run, plan, progress_console=Console(stderr=True, highlight=False))
    finally:
        signal.signal(signal.SIGTERM, previous)
    if as_json:
        print_json(summary)
    else:
        print_summary(console(), summary)
    if record:
        record_in_ledger(ctx, record_burnin, summary, db, f"opsctl ledger record-burnin {run.path}")
    ctx.exit(judgment.exit_code)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def reject_with_resume(resume, **given):
    named = [f"--{name.replace('_', '-')}" for name, value in given.items() if value is not None]
    if resume and named:
        raise InputError(f"{', '.join(named)} cannot change a resumed run: it keeps the options it started with")


@click.command("burnin")
@rack_run_options
@click.option("--duration", type=click.FloatRange(min=0, min_open=True),
              help=f"Seconds of load on each tray (default {DEFAULT_DURATION_S:g}; a full burn-in: --duration 900 or more).")
@click.option("--run-timeout", type=click.FloatRange(min=1), help="Seconds before a tray's probe is given up as "
              "incomplete (default: the duration plus 120).")
@click.pass_context
def command(ctx, rack, out, resume, concurrency, connect_timeout, accept_new_host_keys, as_json, record, db, duration,
            run_timeout):
    """Burn in a rack: GEMM, memory and NVLink load with every counter read before and after, on
    all trays at once; the verdict names every failing GPU, link and part (exit 1), or says
    which trays did not report (exit 3)."""
    reject_with_resume(resume, duration=duration, run_timeout=run_timeout)
    run_rack_command(ctx, "burnin", rack, resume, out, as_json, lambda: make_plan(
        "burnin", duration_s=duration or DEFAULT_DURATION_S, concurrency=concurrency, connect_timeout_s=connect_timeout,
        run_timeout_s=run_timeout, accept_new_host_keys=accept_new_host_keys), record, db)
