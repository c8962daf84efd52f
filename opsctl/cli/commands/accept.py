"""`opsctl accept RACK [--criteria FILE]`: a burn-in judged by a versioned acceptance-criteria
file, with the handover report (HTML, JSON, JUnit XML) recording the criteria's version and
sha256, when and by whom."""

import click

from opsctl.burnin.session import make_plan
from opsctl.cli.commands.burnin import reject_with_resume, rack_run_options, run_rack_command


@click.command("accept")
@rack_run_options
@click.option("--criteria", "criteria_file", type=click.Path(dir_okay=False),
              help="Acceptance criteria YAML (default: opsctl's, opsctl/data/criteria/default.yaml).")
@click.pass_context
def command(ctx, rack, out, resume, concurrency, connect_timeout, accept_new_host_keys, as_json, record, db, criteria_file):
    """Acceptance before handover: burn the rack in for the criteria's duration and judge it by
    the criteria; exit 0 accepted, 1 rejected (what failed is named), 3 incomplete."""
    reject_with_resume(resume, criteria=criteria_file)
    run_rack_command(ctx, "accept", rack, resume, out, as_json, lambda: make_plan(
        "accept", criteria_file=criteria_file, concurrency=concurrency, connect_timeout_s=connect_timeout,
        accept_new_host_keys=accept_new_host_keys), record, db)
