"""`opsctl ledger …`: the fleet's reliability record — burn-ins, triages and incidents in,
MTBI, time to restore, burn-in failure rate and infant mortality out; import and export."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from opsctl.cli.ledger_options import TIME, db_option, parts_for, run_line, triage_line
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import InputError
from opsctl.input_checks import FiniteFloat
from opsctl.ledger import fleet_statistics, open_ledger, record_burnin, record_incident, record_triage, set_rack
from opsctl.ledger.recording import check_burnin_document, check_triage_document
from opsctl.ledger.transfer import export_document, import_files, json_text, read_files, write_csv, write_text
from opsctl.rack_models import MODELS
from opsctl.regular_files import InputFile, OutputFile, check_folder, check_replaceable
from opsctl.yaml_input import load_yaml_file

if TYPE_CHECKING:
    from rich.console import Console

    from opsctl.ledger import Ledger
    from opsctl.ledger.parts import Parts

# Where a run directory keeps its summary, most specific first.
SUMMARY_NAMES = ("summary.json", "verdict.json", "run.json", "report.json")

def _document(path: str | Path) -> tuple[Path, Any]:
    path = Path(path)
    if path.is_dir():
        for name in SUMMARY_NAMES:
            if (path / name).is_file():
                path = path / name
                break
        else:
            found = sorted(path.glob("*.json"))
            if len(found) != 1:
                raise InputError(f"{path}: no run summary here (looked for {', '.join(SUMMARY_NAMES)})")
            path = found[0]
    return path, load_yaml_file(path)  # YAML reads JSON too, and names the line of a syntax error


@click.group("ledger")
def command() -> None:
    """The fleet's reliability ledger: record burn-ins and triages, measure MTBI and MTTR."""


@command.command("record-burnin")
@click.argument("paths", nargs=-1, required=True, type=InputFile(dir_okay=True))
@click.option("--kind", type=click.Choice(["burnin", "accept"]), help="Burn-in or acceptance (default: the document says, else burnin).")
@click.option("--at", type=TIME, help="When it finished (default: the document's time, else now).")
@db_option
@json_option
@click.pass_context
def record_burnin_command(ctx: click.Context, paths: tuple[str, ...], kind: str | None, at: datetime | None,
                          db: str | None, as_json: bool) -> None:
    """Record burn-in or acceptance runs (their --json summary, or the run directory)."""

    def load(path: str) -> tuple[Path, Any]:
        source, document = _document(path)
        check_burnin_document(document, str(source))
        return source, document

    def record(source: str | Path, document: Any, ledger: Ledger, parts: Parts) -> list[dict[str, Any]]:
        return record_burnin(document, ledger, kind=kind, at=at, source=str(source), parts=parts)

    _record_files(ctx, db, paths, load, record, run_line, as_json)


@command.command("record-triage")
@click.argument("paths", nargs=-1, required=True, type=InputFile())
@click.option("--at", type=TIME, help="When the triage ran (default: the document's time, else now).")
@db_option
@json_option
@click.pass_context
def record_triage_command(ctx: click.Context, paths: tuple[str, ...], at: datetime | None, db: str | None,
                          as_json: bool) -> None:
    """Record triage or localize results (their --json output): suspects, chosen action, and each
    fault named as an incident — or the incident its part already has while the fault is open."""

    def load(path: str) -> tuple[str, Any]:
        document = load_yaml_file(path)
        check_triage_document(document, str(path))
        return path, document

    def record(source: str | Path, document: Any, ledger: Ledger, parts: Parts) -> list[dict[str, Any]]:
        return record_triage(document, ledger, at=at, source=str(source), parts=parts)

    _record_files(ctx, db, paths, load, record, triage_line, as_json)


def _record_files(ctx: click.Context, db: str | None, paths: Sequence[str],
                  load: Callable[[str], tuple[str | Path, Any]],
                  record: Callable[[str | Path, Any, Ledger, Parts], list[dict[str, Any]]],
                  line: Callable[[dict[str, Any]], str], as_json: bool) -> None:
    """Read and check every file first (a wrong one costs nothing: no ledger is created or
    touched), then record each in its own transaction (each lands whole), and say what was recorded."""
    parts = parts_for(ctx)
    documents = [load(path) for path in paths]
    recorded: list[dict[str, Any]] = []
    with open_ledger(db) as ledger:
        for source, document in documents:
            recorded += record(source, document, ledger, parts)
        url = ledger.url
    if as_json:
        print_json({"ledger": url, "recorded": recorded})
        return
    out = console()
    for item in recorded:
        out.print(line(item), soft_wrap=True)
    out.print(f"ledger: {url}")


@command.command("rack")
@click.argument("rack")
@click.option("--model", type=click.Choice(sorted(MODELS)), help="The rack's model, when it is not in the inventory.")
@click.option("--handover", type=TIME, help="When the rack went into service.")
@click.option("--retired", type=TIME, help="When it left service for good.")
@click.option("--vendor", help="Its vendor or ODM (a cohort; default: the inventory's opsctl_vendor).")
@click.option("--batch", help="Its delivery batch (a cohort; default: the inventory's opsctl_batch).")
@click.option("--firmware", help="The firmware it was handed over with (a cohort; default: the inventory's opsctl_firmware).")
@db_option
@json_option
@click.pass_context
def rack_command(ctx: click.Context, rack: str, model: str | None, handover: datetime | None, retired: datetime | None,
                 vendor: str | None, batch: str | None, firmware: str | None, db: str | None, as_json: bool) -> None:
    """Add a rack to the ledger, or set when it went into service (handover) or was retired, or its cohort."""
    cohort = {k: v for k, v in (("vendor", vendor), ("batch", batch), ("firmware", firmware)) if v is not None}
    with open_ledger(db) as ledger:
        row = set_rack(rack, ledger, model=model, handover=handover, retired=retired, parts=parts_for(ctx),
                       cohort=cohort)
    if as_json:
        print_json(row)
        return
    service = f"in service since {row['handover_at']}" if row["handover_at"] else "not yet handed over"
    retired_text = f", retired {row['retired_at']}" if row["retired_at"] else ""
    said = ", ".join(f"{k} {row[k]}" for k in ("vendor", "batch", "firmware") if row.get(k))
    console().print(f"{row['rack']}: {row['model']}, {row['gpus']} GPUs, {service}{retired_text}" + (f"; {said}" if said else ""),
                    markup=False)


@command.command("incident")
@click.argument("part")
@click.option("--at", type=TIME, help="When it failed (default: now).")
@click.option("--note", help="What happened, in a few words.")
@db_option
@json_option
@click.pass_context
def incident_command(ctx: click.Context, part: str, at: datetime | None, note: str | None, db: str | None,
                     as_json: bool) -> None:
    """Record a failure of a part that no opsctl triage saw (while the part has an open incident,
    that one: the same fault is not counted twice)."""
    with open_ledger(db) as ledger:
        record = record_incident(part, ledger, at=at, note=note, parts=parts_for(ctx))
    if as_json:
        print_json(record)
        return
    if record["new"]:
        console().print(f"incident {record['key']}: {record['part']} ({record['kind']}) at {record['occurred_at']}")
    else:
        console().print(f"{record['part']} ({record['kind']}) already has an open incident, {record['key']} since "
                        f"{record['occurred_at']}: the same fault, not counted again", soft_wrap=True)


@command.command("stats")
@click.option("--since", type=TIME, help="Count from this time (default: the first handover).")
@click.option("--until", type=TIME, help="Count up to this time (default: now).")
@click.option("--rack", "racks", multiple=True, help="Only this rack (repeat for more).")
@click.option("--infant-weeks", type=click.IntRange(min=1, max=520), default=4, show_default=True,
              help="Failures this soon after handover count as infant mortality.")
@click.option("--confidence", type=FiniteFloat(0.5, 0.999), default=0.95, show_default=True)
@click.option("--plot", type=OutputFile(), help="Write a PNG of failures per month by part kind (with --by: each cohort's rate).")
@click.option("--by", "by", metavar="COHORT",
              help="Compare cohorts: vendor, batch, firmware (recorded at handover), or any inventory variable by name.")
@db_option
@json_option
@click.pass_context
def stats_command(ctx: click.Context, since: datetime | None, until: datetime | None, racks: tuple[str, ...],
                  infant_weeks: int, confidence: float, plot: str | None, by: str | None, db: str | None,
                  as_json: bool) -> None:
    """Failures per part kind, MTBI (GPU-days), time to restore per action (typed, and as Slurm saw
    it: drain to resume), burn-in failure rate, infant mortality — each with its confidence interval."""
    if by is not None:
        _cohort_stats(ctx, by, since, until, racks, infant_weeks, confidence, plot, db, as_json)
        return
    with open_ledger(db, read_only=True) as ledger:
        stats = fleet_statistics(ledger, since=since, until=until, racks=racks, confidence=confidence,
                                 infant_weeks=infant_weeks)
    if plot:
        from opsctl.ledger.plot import plot_failures

        stats["plot"] = str(plot_failures(stats, plot))
    if as_json:
        print_json(stats)
        return
    _print_stats(stats)


def _inventory_or_none(ctx: click.Context) -> Any:
    from opsctl.cli.context import inventory_from

    return inventory_from(ctx) if ctx.find_root().obj.get("inventory") else None


def _cohort_stats(ctx: click.Context, by: str, since: datetime | None, until: datetime | None, racks: tuple[str, ...],
                  infant_weeks: int, confidence: float, plot: str | None, db: str | None, as_json: bool) -> None:
    from opsctl.ledger.cohorts import cohort_statistics

    with open_ledger(db, read_only=True) as ledger:
        stats = cohort_statistics(ledger, by, since=since, until=until, racks=racks, confidence=confidence,
                                  infant_weeks=infant_weeks, inventory=_inventory_or_none(ctx))
    if plot:
        from opsctl.ledger.plot import plot_cohorts

        stats["plot"] = str(plot_cohorts(stats, plot))
    if as_json:
        print_json(stats)
        return
    out = console()
    level = f"{confidence:.0%}"
    field = stats["by"]
    out.print(f"[bold]ledger[/bold] {stats['ledger']}  by {field}  window {stats['window']['since'] or 'start'} → "
              f"{stats['window']['until']}")
    table = Table(title=f"by {field}: failures, MTBI (GPU-days) and time to restore (hours), {level} intervals")
    for column in ("cohort", "racks", "GPU-days", "failures", "MTBI", "interval", "vs the rest", "adj. p",
                   "restore median", "interval ", "accepted first", "RMAs"):
        table.add_column(column, justify="left" if column == "cohort" else "right")
    tests = stats["comparison"].get("cohorts", {})
    for name, cohort in stats["cohorts"].items():
        rate = cohort["mtbi"]
        restore = cohort["time_to_restore"]
        test = tests.get(name)
        ratio = "-"
        if test:
            low, high = test["interval"]
            point = "∞" if test["rate_ratio"] is None else f"{test['rate_ratio']:.2f}"
            ratio = f"×{point} [{'-' if low is None else f'{low:.2f}'}–{'∞' if high is None else f'{high:.2f}'}]"
        accept = cohort["acceptance"]
        table.add_row(name, str(cohort["racks_in_service"]), f"{cohort['gpu_days']:,.0f}", str(rate["failures"]),
                      f"{rate['mtbi_gpu_days']:,.0f}" if rate["mtbi_gpu_days"] else "-", _interval(rate["interval"]),
                      ratio, f"{test['p_adjusted']:.2g}" if test else "-",
                      f"{restore['median_hours']:.1f}" if restore["median_hours"] is not None else "-",
                      _interval(restore["interval"]) if restore["interval"] else "-",
                      f"{accept['racks_passed_first']}/{accept['racks_judged']}" if accept["racks_judged"] else "-",
                      str(len(cohort["rma_ids"])))
    out.print(table)
    fleet = stats["fleet"]["mtbi"]
    out.print(f"fleet: {fleet['failures']} failures over {fleet['gpu_days']:,.0f} GPU-days, MTBI "
              f"{fleet['mtbi_gpu_days'] or 0:,.0f} ({_interval(fleet['interval'])})", markup=False)
    if stats["comparison"].get("method"):
        out.print(f"test: {stats['comparison']['method']}", soft_wrap=True, markup=False)
    out.print(f"verdict: {stats['verdict']}", soft_wrap=True, markup=False)
    for name, cohort in stats["cohorts"].items():
        if cohort["rma_ids"]:
            shown = ", ".join(cohort["rma_ids"][:8]) + (f", … ({len(cohort['rma_ids'])} in all)" if len(cohort["rma_ids"]) > 8 else "")
            out.print(f"RMA ids, {field} {name}: {shown}", soft_wrap=True, markup=False)
    if stats.get("plot"):
        out.print(f"plot: {stats['plot']}")


@command.command("age")
@click.option("--until", type=TIME, help="Follow racks up to this time (default: now).")
@click.option("--rack", "racks", multiple=True, help="Only this rack (repeat for more).")
@click.option("--by", "by", metavar="COHORT", help="One curve per cohort: vendor, batch, firmware, or an inventory variable.")
@click.option("--kind", "kinds", multiple=True, metavar="KIND",
              help="Only this group: all, backplane (connectors, cartridges, cables, switch trays) or a part kind "
                   "(repeat for more; default: all, backplane and each kind that failed).")
@click.option("--confidence", type=FiniteFloat(0.5, 0.999), default=0.95, show_default=True)
@click.option("--plot", type=OutputFile(), help="Write a PNG of each group's Kaplan–Meier curve and Weibull fit.")
@db_option
@json_option
@click.pass_context
def age_command(ctx: click.Context, until: datetime | None, racks: tuple[str, ...], by: str | None, kinds: tuple[str, ...],
                confidence: float, plot: str | None, db: str | None, as_json: bool) -> None:
    """Failures by age since handover, racks still running right-censored: the Kaplan–Meier curve
    and a Weibull fit per part kind (the backplane on its own), whose shape below 1 says infant mortality."""
    from opsctl.ledger.ages import age_statistics

    with open_ledger(db, read_only=True) as ledger:
        stats = age_statistics(ledger, until=until, racks=racks, by=by, groups=list(kinds) or None,
                               confidence=confidence, inventory=_inventory_or_none(ctx))
    if plot:
        from opsctl.ledger.plot import plot_ages

        stats["plot"] = str(plot_ages(stats, plot))
    if as_json:
        print_json(stats)
        return
    out = console()
    level = f"{confidence:.0%}"
    out.print(f"[bold]ledger[/bold] {stats['ledger']}  ages up to {stats['until']}; unit: {stats['unit']}", soft_wrap=True)
    table = Table(title=f"first failure by age since handover: Weibull fit ({level} interval) and Kaplan–Meier")
    for column in ("group", "cohort", "racks", "failed", "shape", "interval", "scale (days)", "says",
                   "no failure by 28 d", "by 91 d", "by 365 d"):
        table.add_column(column, justify="left" if column in ("group", "cohort", "says") else "right")
    for curve in stats["curves"]:
        fit = curve["weibull"]
        milestones = {m["age_days"]: m for m in curve["kaplan_meier"]["milestones"]}

        def share(day: int) -> str:
            found = milestones.get(day)
            if found is None:
                return "-"
            low, high = found["interval"] or (None, None)
            return f"{found['survival']:.0%}" + (f" [{low:.0%}–{high:.0%}]" if low is not None and high is not None else "")
        if fit["fitted"]:
            low, high = fit["shape_interval"]
            cells = [f"{fit['shape']:.2f}", f"{'-' if low is None else f'{low:.2f}'}–{'∞' if high is None else f'{high:.2f}'}",
                     f"{fit['scale_days']:,.0f}", fit["verdict"].replace("_", " ")]
        else:
            cells = ["-", "-", "-", fit["why"]]
        table.add_row(curve["group"], curve["cohort"] or "all", str(curve["racks"]), str(curve["failures"]), *cells,
                      share(28), share(91), share(365))
    out.print(table)
    out.print(f"Kaplan–Meier: {stats['kaplan_meier_method']}", soft_wrap=True, markup=False)
    out.print(f"Weibull: {stats['weibull_method']}; shape < 1: infant mortality, 1: a constant rate, > 1: wear-out",
              soft_wrap=True, markup=False)
    if stats.get("plot"):
        out.print(f"plot: {stats['plot']}")


@command.command("table")
@click.argument("table", type=click.Choice(["racks", "runs", "triages", "incidents", "repairs", "drains"]))
@click.option("--var", "variables", multiple=True, metavar="NAME",
              help="Add the rack's inventory variable NAME as a column (repeat for more).")
@click.option("-o", "--output", type=OutputFile(), help="Write FILE.csv or FILE.parquet instead of printing.")
@click.option("--rows", type=click.IntRange(min=1), help="Print at most this many rows.")
@db_option
@json_option
@click.pass_context
def table_command(ctx: click.Context, table: str, variables: tuple[str, ...], output: str | None, rows: int | None,
                  db: str | None, as_json: bool) -> None:
    """One ledger table as a pandas DataFrame — with each row's rack cohort (vendor, batch, firmware)
    and age since handover — printed, or written as CSV or Parquet."""
    from opsctl.ledger.frames import frame_text, ledger_frames, require_pyarrow, write_frame

    if output and output.lower().endswith(".parquet"):
        require_pyarrow()  # before the ledger is read
    with open_ledger(db, read_only=True) as ledger:
        frames = ledger_frames(ledger, variables=variables, inventory=_inventory_or_none(ctx) if variables else None)
    frame = frames[table]
    if output:
        click.echo(str(write_frame(frame, output)))
        return
    if as_json:  # one object per row, times as ISO-8601 UTC
        click.echo(frame.head(rows).to_json(orient="records", date_format="iso", date_unit="s") if rows else
                   frame.to_json(orient="records", date_format="iso", date_unit="s"))
        return
    click.echo(frame_text(frame, rows=rows))


def _interval(pair: Sequence[float | None], unit: str = "") -> str:
    low, high = pair
    return f"{'–' if low is None else f'{low:,.1f}'} … {'∞' if high is None else f'{high:,.1f}'}{unit}"


def _print_stats(stats: dict[str, Any]) -> None:
    out = console()
    exposure, mtbi = stats["exposure"], stats["mtbi"]
    level = f"{stats['confidence']:.0%}"
    out.print(f"[bold]ledger[/bold] {stats['ledger']}  window {stats['window']['since'] or 'start'} → {stats['window']['until']}")
    out.print(f"{exposure['racks_in_service']} rack(s) in service ({', '.join(exposure['models']) or '-'}): "
              f"{exposure['gpu_days']:,.0f} GPU-days, {exposure['downtime_gpu_days']:,.1f} GPU-days idled by repairs")
    for waiting in exposure.get("not_handed_over") or []:
        out.print(f"not counted: {waiting['rack']} has no handover date yet ({waiting['incidents']} incident(s) "
                  f"recorded): record its acceptance, or opsctl ledger rack {waiting['rack']} --handover DATE",
                  soft_wrap=True, markup=False)
    table = Table(title=f"failures and MTBI (GPU-days, {level} interval)")
    for column in ("part kind", "failures", "MTBI", "interval"):
        table.add_column(column, justify="left" if column == "part kind" else "right")
    for kind, rate in [*mtbi["by_kind"].items(), ("all", mtbi["overall"])]:
        value = f"{rate['mtbi_gpu_days']:,.0f}" if rate["mtbi_gpu_days"] else "-"
        table.add_row(kind, str(rate["failures"]), value, _interval(rate["interval"]))
    out.print(table)
    for model, figure in mtbi["published"].items():
        out.print(f"published {model}: {figure['gpu_days'][0]:,}–{figure['gpu_days'][1]:,} GPU-days ({figure['source']})")
    table = Table(title=f"time to restore per repair action (hours; median with its {level} interval)")
    for column in ("action", "repairs", "median", "interval", "p25–p75", "mean", "GPUs idled", "published"):
        table.add_column(column, justify="left" if column == "action" else "right")
    for action, row in stats["mttr"]["by_action"].items():
        median = f"{row['median_hours']:.1f}" if row["median_hours"] is not None else "-"
        spread = f"{row['p25_hours']:.1f}–{row['p75_hours']:.1f}" if row["p25_hours"] is not None else "-"
        interval = _interval(row["interval"]) if row["interval"] else "-"
        if row["interval"] and row["interval_coverage"] < stats["confidence"]:
            interval += f" ({row['interval_coverage']:.0%})"
        mean = f"{row['mean_hours']:.1f}" if row["mean_hours"] is not None else "-"
        table.add_row(action, f"{row['closed']}/{row['repairs']}", median, interval, spread, mean,
                      f"{row['gpus_idled_mean']:g}", f"{row['published_hours']:.1f}" if row["published_hours"] else "-")
    out.print(table)
    _print_drains(out, stats["slurm_drains"], stats["confidence"])
    burnin = stats["burnin"]
    if burnin["racks"]:
        parts = ", ".join(f"{k} {v}" for k, v in burnin["failing_parts_by_kind"].items()) or "none named"
        out.print(f"burn-in at handover: {burnin['racks_failed_first_run']} of {burnin['racks']} racks failed their first "
                  f"run ({burnin['failure_rate']:.0%}, {level} {burnin['interval'][0]:.0%}–{burnin['interval'][1]:.0%}); "
                  f"{burnin['runs_failed']} of {burnin['runs']} runs failed; failing parts: {parts}")
    infant = stats["infant_mortality"]
    early, later = infant["early"], infant["later"]
    out.print(f"infant mortality: first {infant['weeks']} weeks {early['failures']} failures / {early['gpu_days']:,.0f} "
              f"GPU-days ({early['per_1000_gpu_days'] or 0:.2f} per 1,000), later {later['failures']} / "
              f"{later['gpu_days']:,.0f} ({later['per_1000_gpu_days'] or 0:.2f} per 1,000)"
              + (f", ratio {infant['ratio']:.1f}" if infant["ratio"] else ""))
    if stats.get("plot"):
        out.print(f"plot: {stats['plot']}")


def _hours(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


def _print_drains(out: Console, drains: dict[str, Any], confidence: float) -> None:
    """Time out of service as Slurm saw it (drain → resume), beside the typed repair times."""
    if not drains["by_action"]:
        return
    title = f"time out of service in Slurm, drain → resume (hours; median with its {confidence:.0%} interval)"
    for group, label in (("by_action", "action"), ("by_kind", "part kind")):
        table = Table(title=title if group == "by_action" else None)
        columns = [label, "resumed", "median", "interval", "p25–p75", "open", "≥ with open"]
        columns += ["typed median"] if group == "by_action" else []
        for column in columns:
            table.add_column(column, justify="left" if column == label else "right")
        for name, row in drains[group].items():
            interval = _interval(row["interval"]) if row["interval"] else "-"
            if row["interval"] and row["interval_coverage"] < confidence:
                interval += f" ({row['interval_coverage']:.0%})"
            spread = f"{row['p25_hours']:.2f}–{row['p75_hours']:.2f}" if row["p25_hours"] is not None else "-"
            cells = [name, f"{row['resumed']}/{row['drains']}", _hours(row["median_hours"]), interval, spread,
                     str(row["open"]), _hours(row["median_hours_at_least"])]
            cells += [_hours(row["typed_repair_median_hours"])] if group == "by_action" else []
            table.add_row(*cells)
        out.print(table)
    for episode in drains["open"]:
        nodes = ", ".join(episode["nodes"]) if len(episode["nodes"]) <= 3 else f"{len(episode['nodes'])} nodes"
        out.print(f"still drained: {episode['part']} ({episode['action']}) on {nodes} since "
                  f"{episode['drained_at']}, {episode['hours_so_far']:.2f} h so far", soft_wrap=True, markup=False)


@command.command("export")
@click.option("--format", "fmt", type=click.Choice(["json", "csv", "parquet"]), default="json", show_default=True)
@click.option("-o", "--output", type=click.Path(),
              help="JSON: a file (default stdout). CSV, Parquet: a directory, one file per table.")
@db_option
def export_command(fmt: str, output: str | None, db: str | None) -> None:
    """Export the whole ledger, to back it up or to bring it into another ledger (JSON, CSV), or as
    typed tables for analysis (Parquet: the DataFrames of `opsctl ledger table`; needs pyarrow)."""
    if fmt in ("csv", "parquet") and not output:
        raise click.UsageError(f"--format {fmt} needs -o DIRECTORY (one file per table)")
    if output:  # a device, a FIFO or a folder where a file goes: refused before the ledger is read
        check_folder(output) if fmt in ("csv", "parquet") else check_replaceable(output)
    if fmt == "parquet":
        from opsctl.ledger.frames import ledger_frames, require_pyarrow

        require_pyarrow()
        assert output
        with open_ledger(db, read_only=True) as ledger:
            frames = ledger_frames(ledger)
        for path in frames.to_parquet(output):
            click.echo(str(path))
        return
    with open_ledger(db, read_only=True) as ledger:
        document = export_document(ledger)
    if fmt == "csv":
        assert output  # refused above without one
        for path in write_csv(document, output):
            click.echo(str(path))
        return
    text = json_text(document)
    if output:
        write_text(output, text)
    else:
        sys.stdout.write(text)


@command.command("import")
@click.argument("paths", nargs=-1, required=True, type=InputFile(dir_okay=True))
@click.option("--table", type=click.Choice(["racks", "runs", "triages", "incidents", "repairs"]),
              help="The table of CSV files not named after one.")
@db_option
@json_option
@click.pass_context
def import_command(ctx: click.Context, paths: tuple[str, ...], table: str | None, db: str | None, as_json: bool) -> None:
    """Import history from JSON or CSV (as export writes it). All or nothing: a bad record
    names its file, line and field, and nothing is imported."""
    records = list(read_files(paths, table))  # a file that is not an export fails before any ledger is opened
    with open_ledger(db) as ledger:
        counts = import_files(ledger, records=records, parts=parts_for(ctx))
        url = ledger.url
    if as_json:
        print_json({"ledger": url, "imported": counts})
        return
    out = console()
    added = sum(c["added"] for c in counts.values())
    present = sum(c["present"] for c in counts.values())
    out.print(f"imported {added} record(s), {present} already in the ledger: " + "; ".join(
        f"{name} {c['added']} added" + (f" ({c['present']} already there)" if c["present"] else "")
        for name, c in counts.items()))
    out.print(f"ledger: {url}")
