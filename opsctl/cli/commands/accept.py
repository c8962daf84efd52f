"""`opsctl accept RACK [--criteria FILE] [--duration S]`: a burn-in judged by a versioned
acceptance-criteria file, with the handover report (HTML, JSON, JUnit XML) recording the
criteria's version and sha256, when and by whom.

`--duration S` makes it a trial acceptance: S seconds of load instead of the criteria's. It is
judged by the criteria all the same, and every report says it is a trial, not an acceptance by
them. A trial is not recorded in the ledger, where a passing acceptance hands the rack over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from opsctl.acceptance.criteria import load_criteria
from opsctl.burnin.session import make_plan
from opsctl.cli.commands.burnin import reject_with_resume, rack_run_options, run_rack_command
from opsctl.input_checks import seconds
from opsctl.regular_files import InputFile
from opsctl.runs import RunDirectory
from opsctl.runs.trial import trial_fields

if TYPE_CHECKING:
    from opsctl.burnin.session import Plan

NOT_RECORDED = ("opsctl: note: a trial acceptance ({used:g} s of load per tray, not the criteria's {wanted:g} s) is not "
                "recorded in the ledger, where a passing acceptance would hand the rack over; "
                "record it as a burn-in with: opsctl ledger record-burnin RUN_FOLDER --kind burnin")


@click.command("accept")
@rack_run_options
@click.option("--criteria", "criteria_file", type=InputFile(),
              help="Acceptance criteria YAML (default: opsctl's, opsctl/data/criteria/default.yaml).")
@click.option("--duration", type=seconds(),
              help="A trial: seconds of load on each tray instead of the criteria's duration_s. The reports say "
                   "plainly it is not an acceptance by the criteria; it is not recorded in the ledger.")
@click.pass_context
def command(ctx: click.Context, rack: str | None, out: str | None, resume: str | None, concurrency: int,
            connect_timeout: float, accept_new_host_keys: bool, ssh_config: str | None, as_json: bool, record: bool,
            db: str | None, criteria_file: str | None, duration: float | None) -> None:
    """Acceptance before handover: burn the rack in for the criteria's duration and judge it by
    the criteria; exit 0 accepted, 1 rejected (what failed is named), 3 incomplete."""
    reject_with_resume(resume, criteria=criteria_file, duration=duration, ssh_config=ssh_config)
    used, wanted = _durations(resume, duration, criteria_file)
    trial = trial_fields("accept", used, wanted)["trial"] if used is not None and wanted is not None else False
    note = NOT_RECORDED.format(used=used, wanted=wanted) if trial and record else None
    if note and resume:
        click.echo(note, err=True)

    def new_plan() -> Plan:
        made = make_plan("accept", criteria_file=criteria_file, duration_s=duration, concurrency=concurrency,
                         connect_timeout_s=connect_timeout, accept_new_host_keys=accept_new_host_keys, ssh_config=ssh_config)
        if note:  # said once the rack and the plan are known good: bad input stays one line
            click.echo(note, err=True)
        return made

    run_rack_command(ctx, "accept", rack, resume, out, as_json, new_plan, record and not trial, db)


def _durations(resume: str | None, duration: float | None, criteria_file: str | None) -> tuple[float | None, float | None]:
    """(seconds of load per tray, the criteria's duration_s) of this acceptance; (None, None)
    when it runs for the criteria's duration, or when the run resumed is no acceptance (which
    run_rack_command refuses)."""
    if resume:  # read, not resumed: run_rack_command takes the run
        meta = RunDirectory.open(resume).meta
        plan = meta["plan"] if isinstance(meta.get("plan"), dict) else {}
        if plan.get("kind") != "accept" or not isinstance(plan.get("duration_s"), (int, float)):
            return None, None
        return plan["duration_s"], (meta.get("criteria") or {}).get("duration_s", plan["duration_s"])
    if duration is None:
        return None, None
    return duration, load_criteria(criteria_file).duration_s
