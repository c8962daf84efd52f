"""What the commands that touch the fleet's ledger share: which database (--db), times as users
type them, part ids checked against the user's inventory, and recording a command's result.

burnin, accept, report and triage record what they found unless told --no-ledger: the ledger
is a record of every run and triage, and one nobody remembers to feed measures nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from opsctl.cli.context import inventory_from
from opsctl.errors import OpsctlError, InputError
from opsctl.ledger import DB_ENV, open_ledger
from opsctl.ledger.database import check_url, without_password
from opsctl.ledger.parts import Parts
from opsctl.ledger.timestamps import parse_time

if TYPE_CHECKING:
    from click.decorators import FC

class LedgerUrl(click.ParamType):
    """A ledger URL whose form can work (sqlite:///FILE, a path, postgresql://…), checked when the
    flag is read: a mistyped scheme is a bad flag (exit 2) before a burn-in starts, not a warning
    after it. Whether the ledger can be opened or written is found out when it is used."""

    name = "URL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            check_url(value)
        except InputError as error:
            self.fail(str(error), param, ctx)
        return value


db_option = click.option(
    "--db", envvar=DB_ENV, type=LedgerUrl(), metavar="URL",
    help="Ledger database: sqlite:///FILE or postgresql://… (default: $OPSCTL_DB, else "
         "$XDG_STATE_HOME/opsctl/ledger.sqlite).")


class TimeType(click.ParamType):
    """A date or time as users type it (2026-11-30, 2026-11-30T14:05Z); UTC unless a zone is given."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        try:
            return parse_time(value, "")
        except InputError as error:  # not a time, or a year out of range: the message says which
            self.fail(str(error).lstrip(": "), param, ctx)


TIME = TimeType()


def parts_for(ctx: click.Context) -> Parts:
    """Part ids are checked against the inventory the user named (--inventory, $OPSCTL_INVENTORY),
    else the ledger's own racks and the built-in inventory."""
    return Parts(inventory_from(ctx)) if ctx.find_root().obj.get("inventory") else Parts()


def recording_options(command: FC) -> FC:
    """--ledger/--no-ledger and --db, for a command whose result goes into the ledger."""
    command = db_option(command)
    return click.option("--ledger/--no-ledger", "record", default=True, show_default=True,
                        help="Record the result in the fleet's ledger (opsctl ledger stats).")(command)


def record_in_ledger(ctx: click.Context, record: Callable[..., list[dict[str, Any]]], document: dict[str, Any],
                     db: str | None, later: str) -> bool:
    """Record `document` with `record` (record_burnin, record_triage); a ledger that cannot be
    written costs a warning, never the result: `later` says how to record it by hand. Says on
    stderr what the ledger holds now — a new record, or one it already had (nothing counted twice)."""
    try:
        with open_ledger(db) as ledger:
            recorded = record(document, ledger, parts=parts_for(ctx))
            where = ledger.url
    except OpsctlError as error:
        click.echo(f"opsctl: warning: not recorded in the ledger ({error}); record it later with: {later}{db_flag(db)}",
                   err=True)
        return False
    click.echo(f"recorded in the ledger {where}", err=True)
    for item in recorded:
        click.echo(f"  {recorded_line(item)}", err=True)
    return True


def db_flag(db: str | None) -> str:
    """' --db URL' for a hint the user pastes, so that it writes to the ledger they named; the
    password left out (libpq then takes it from PGPASSWORD or ~/.pgpass), never printed."""
    if not db:
        return ""
    bare = without_password(db)
    flag = f" --db {shlex.quote(bare)}"
    return flag + (" (the password from PGPASSWORD or ~/.pgpass)" if bare != db else "")


# --- saying what was recorded ------------------------------------------------------------------
def recorded_line(item: dict[str, Any]) -> str:
    """One line for what record_burnin or record_triage returned."""
    return triage_line(item) if "triage" in item else run_line(item)


def run_line(run: dict[str, Any]) -> str:
    """'rack07 burnin 2026-…: fail, failing parts: rack07/ct12/j2 (explains 3 failing links) (recorded)'."""
    counted = [p for p in run["failing_parts"] if not p.get("explained_by")]
    failing = ", ".join(_explaining(p, run["failing_parts"]) for p in counted) or "none"
    handover = f"; {run['rack']} in service since {run['handover_at']}" if run["handover_at"] else ""
    if run["new"]:
        status = "recorded"
    elif run.get("updated"):
        status = "the run's row updated: the same run, judged again"
    else:
        status = "already in the ledger"
    return (f"{run['rack']} {run['kind']} {run['finished_at']}: {run['verdict']}, failing parts: {failing}"
            f"{handover} ({status})")


def _explaining(part: dict[str, Any], failing: list[dict[str, Any]]) -> str:
    """'rack07/ct12/j2 (explains 3 failing links)': the symptoms a part accounts for."""
    symptoms = [p for p in failing if p.get("explained_by") == part["part"]]
    if not symptoms:
        return part["part"]
    kinds = sorted({p["kind"] for p in symptoms})
    return f"{part['part']} (explains {len(symptoms)} failing {'/'.join(k + 's' for k in kinds)})"


def triage_line(triage: dict[str, Any]) -> str:
    """'rack07 triage 2026-…: rack07/ct12/j2 (connector): new incident inc-…; … (recorded)'."""
    if triage["healthy"]:
        what = "healthy"
    else:
        faults = "; ".join(
            f"{i['part']} ({i['kind']}): " + (f"new incident {i['key']}" if i["new"] else
                                              f"still open, incident {i['key']} since {i['since']}, not counted again")
            for i in triage["incidents"])
        what = f"{faults}; action {triage['action']}"
    status = "recorded" if triage["new"] else "this triage was already in the ledger"
    return f"{triage['rack']} triage {triage['at']}: {what} ({status})"
