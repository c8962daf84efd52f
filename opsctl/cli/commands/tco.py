"""`opsctl tco run|compare|sweep|sensitivity`: price a training run per token, failures, repairs and
spares included, with intervals where the scenario's inputs are ranges (the model: docs/tco.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from opsctl.cli.ledger_options import TIME, db_option
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import InputError
from opsctl.input_checks import FiniteFloat
from opsctl.ledger.fleet_stats import reliability_inputs
from opsctl.ledger.store import open_ledger
from opsctl.mttr import load_mttr_model
from opsctl.regular_files import InputFile, OutputFolder, check_replaceable
from opsctl.tco import monte_carlo
from opsctl.tco.compare import ROWS, cell, compare, with_paired_edges
from opsctl.tco.from_ledger import ledger_repairs, with_measured_reliability
from opsctl.tco.sensitivity import output_paths, sensitivity, write_files
from opsctl.tco.sweep import parse_vary, sweep, write_csv, write_png
from opsctl.tco.uncertain import load_uncertain

if TYPE_CHECKING:
    from click.decorators import FC

scenario_argument = click.argument("scenario", type=InputFile())
mttr_option = click.option(
    "--mttr-config", type=InputFile(),
    help="Repair-model overrides (default: $OPSCTL_MTTR_CONFIG, else the built-in model); repair times and "
         "blast radii of the failure classes come from it.")


ledger_options = (
    click.option("--from-ledger", is_flag=True,
                 help="Rebuild the failure mix from the fleet's ledger: each part kind's MTBI and each repair "
                      "action's time to restore, with their uncertainty, instead of the scenario's published figures "
                      "(see opsctl ledger stats)."),
    click.option("--since", type=TIME, help="With --from-ledger: measure from this time."),
    click.option("--until", type=TIME, help="With --from-ledger: measure up to this time (default: now)."),
    click.option("--rack", "racks", multiple=True, help="With --from-ledger: only this rack (repeat for more)."),
    click.option("--cohort", metavar="FIELD=VALUE",
                 help="With --from-ledger: only the racks of one cohort (batch=2026-03, vendor=…, firmware=…, or an "
                      "inventory variable), priced with that cohort's measured reliability (opsctl ledger stats --by)."),
    db_option,
)


level_option = click.option(
    "--level", type=FiniteFloat(0, 1, min_open=True, max_open=True), default=monte_carlo.DEFAULT_LEVEL,
    show_default=True, help="Confidence level of the intervals (where the scenario's inputs are ranges).")
uncertainty_options = (
    click.option("--draws", type=click.IntRange(1, monte_carlo.MAX_DRAWS), default=monte_carlo.DEFAULT_DRAWS,
                 show_default=True, help="Monte Carlo draws over the scenario's ranges."),
    click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=0, show_default=True,
                 help="Seed of the draws (the same seed, the same figures)."),
    level_option,
)


def _priced(path: str, mttr_config: str | None, draws: int, seed: int, level: float, from_ledger: bool = False,
            db: str | None = None, since: datetime | None = None, racks: Sequence[str] = (),
            until: datetime | None = None, cohort: str | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(document, the figures over the draws or None when no input is a range)."""
    monte_carlo.check_options(draws, level, seed)
    uncertain = load_uncertain(path)
    mttr_model = load_mttr_model(mttr_config)
    measured = None
    said_cohort = None
    if from_ledger:
        with open_ledger(db, read_only=True) as ledger:
            racks, said_cohort = _cohort_racks(ledger, cohort, racks)
            measured = reliability_inputs(ledger, since=since, until=until, racks=racks)
            repairs = ledger_repairs(ledger, since=since, until=until, racks=racks)
        uncertain, classes = with_measured_reliability(uncertain, measured, repairs, mttr_model, level)
    document, table = monte_carlo.price_with_uncertainty(uncertain, mttr_model, draws, seed, level)
    if measured is not None:
        document["reliability_from"] = {"source": measured.source, "measured": measured.scenario,
                                        "mtbi_exact_interval": measured.detail["mtbi"]["interval"],
                                        "failure_classes": classes}
        if said_cohort is not None:
            document["reliability_from"]["cohort"] = said_cohort
    return document, table


def _cohort_racks(ledger: Any, cohort: str | None, racks: Sequence[str]) -> tuple[Sequence[str], dict[str, Any] | None]:
    """--cohort FIELD=VALUE: the racks of that cohort (within --rack, if given) for --from-ledger to measure."""
    if cohort is None:
        return racks, None
    from opsctl.ledger.cohorts import cohort_racks

    field, value, members = cohort_racks(ledger, cohort)
    chosen = [rack for rack in members if not racks or rack in racks]
    if not chosen:
        raise InputError(f"--cohort {field}={value}: none of its racks ({', '.join(members)}) is among --rack")
    return chosen, {"field": field, "value": value, "racks": chosen}


@contextmanager
def _writing(out: str | Path) -> Iterator[None]:
    """A file that cannot be written (a read-only or full disk, /proc) is one line, exit 2: the
    atomic writer has left any old file as it was."""
    try:
        yield
    except OSError as error:
        raise InputError(f"--out {out}: cannot write there: {error.strerror or error}") from None


def _spread(document: dict[str, Any], key: str, fmt: str = "{:,.4g}") -> str:
    """'median [low–high]' of a figure, or '' when its inputs are all points."""
    interval = document.get(f"{key}_interval")
    if interval is None or interval[0] == interval[1]:  # no range moves it
        return ""
    low, high = (("∞" if v is None else fmt.format(v)) for v in interval)
    median = document.get(f"{key}_median")
    return f"{'∞' if median is None else fmt.format(median)} [{low}–{high}]"


@click.group("tco")
def command() -> None:
    """Goodput-aware TCO: $/GPU-hour, $/M tokens, J/token, and what failures, repairs and spares cost."""


def _with(options: Sequence[Callable[[Any], Any]]) -> Callable[[FC], FC]:
    def decorate(function: FC) -> FC:
        for option in reversed(options):
            function = option(function)
        return function
    return decorate


@command.command("run")
@scenario_argument
@mttr_option
@_with(ledger_options)
@_with(uncertainty_options)
@json_option
def run(scenario: str, mttr_config: str | None, from_ledger: bool, since: datetime | None, until: datetime | None,
        racks: tuple[str, ...], cohort: str | None, db: str | None, draws: int, seed: int, level: float,
        as_json: bool) -> None:
    """Price one scenario file (YAML or JSON); inputs written as ranges give each figure a median and an interval."""
    if not from_ledger and (since or until or racks or cohort):
        raise InputError("--since, --until, --rack and --cohort go with --from-ledger")
    document, table_ = _priced(scenario, mttr_config, draws, seed, level, from_ledger, db, since, racks, until, cohort)
    if as_json:
        print_json(document)
        return
    out = console()
    out.print(f"[bold]{document['name']}[/bold]: {document['gpus']:,} × {document['gpu']} {document['precision']}")
    table = Table()
    columns = ("figure", "value", f"median [{level:.0%} interval]", "unit", "how") if table_ is not None else \
        ("figure", "value", "unit", "how")
    for column in columns:
        table.add_column(column, overflow="fold")
    for key, figure in document["derivations"].items():
        value = figure["value"]
        spread = (_spread(document, key),) if table_ is not None else ()
        table.add_row(key, "-" if value is None else f"{value:,.4g}", *spread, figure["unit"], figure["formula"])
    out.print(table)
    if table_ is not None:
        said = document["uncertainty"]
        out.print(f"{said['draws']:,} draws (seed {said['seed']}) over {', '.join(said['inputs'])}"
                  + (f"; {said['draws_without_progress']} draws leave no time to train" if said["draws_without_progress"] else ""))
    if document.get("reliability_from"):
        out.print(f"reliability {document['reliability_from']['source']}")
        if document["reliability_from"].get("cohort"):
            said = document["reliability_from"]["cohort"]
            out.print(f"  cohort {said['field']}={said['value']}: racks {', '.join(said['racks'])}", markup=False)
        for line in document["reliability_from"]["failure_classes"]:
            out.print(f"  {_said(line, level)}")
    for warning in document["warnings"]:
        out.print(f"[yellow]warning: {warning}[/yellow]")


@command.command("compare")
@click.argument("scenarios", nargs=-1, required=True, type=InputFile())
@mttr_option
@_with(uncertainty_options)
@json_option
def compare_command(scenarios: tuple[str, ...], mttr_config: str | None, draws: int, seed: int, level: float,
                    as_json: bool) -> None:
    """Price scenarios side by side; the edge is each one's saving over the first. Where inputs are ranges: the edge's
    interval, and the share of paired draws in which each is cheaper than the first."""
    priced = [_priced(path, mttr_config, draws, seed, level) for path in scenarios]
    result = compare([document for document, _ in priced])
    if any(table is not None for _, table in priced):
        result = with_paired_edges(result, [table for _, table in priced], draws, level)
    if as_json:
        print_json(result)
        return
    table = Table(title=f"effective cost per token, edge over {result['baseline']}")
    table.add_column("")
    for document in result["scenarios"]:
        table.add_column(document["name"], justify="right", overflow="fold")
    for label, key, fmt in ROWS:
        table.add_row(label, *(cell(document, key, fmt) for document in result["scenarios"]))
    table.add_row("edge over the first", *("-" if e["edge_vs_baseline"] is None else f"{e['edge_vs_baseline']:+.1%}"
                                           for e in result["edges"]))
    if "paired" in result:
        table.add_row(f"edge, median [{level:.0%} interval]", *(_edge_spread(e) for e in result["edges"]))
        table.add_row("cheaper than the first in", *("" if e is result["edges"][0] else f"{e['cheaper_share']:.0%} of draws"
                                                     for e in result["edges"]))
    out = console()
    out.print(table)
    for sentence in result.get("paired", {}).get("sentences", ()):
        out.print(sentence)


def _said(line: dict[str, Any], level: float) -> str:
    """One failure class of a --from-ledger run: what the ledger measured, or why the scenario's figure stands."""
    if line["from"] == "scenario":
        return f"{line['name']}: the scenario's figure — {line['why']}"
    low, high = line["mtbi_interval"]
    if not line["failures"]:  # none in the exposure: a lower bound, and the posterior prices it
        text = f"{line['name']}: MTBI at least {low:,.0f} GPU-days [{level:.0%}] — {line['why']}"
    else:
        text = (f"{line['name']}: MTBI {line['mtbi_gpu_days']:,.0f} GPU-days [{level:.0%}: {low:,.0f}–{high:,.0f}] "
                f"from {line['failures']} failure(s)")
    if line["repair_hours"] is None:
        return f"{text}; repair: {line['repair_from']}"
    low, high = line["repair_hours_interval"]
    return (f"{text}; restore {line['repair_hours']:.2f} h [{low:.2f}–{high:.2f}] over {line['repairs_closed']} "
            f"{line.get('action', '')} repair(s)")


def _edge_spread(edge: dict[str, Any]) -> str:
    if edge.get("edge_interval") is None:
        return ""
    shown = ["-" if v is None else f"{v:+.1%}" for v in (edge["edge_median"], *edge["edge_interval"])]
    return f"{shown[0]} [{shown[1]}–{shown[2]}]"


@command.command("sweep")
@scenario_argument
@click.option("--vary", "vary", required=True, metavar="KEY=FROM:TO:STEPS",
              help="The scenario key to vary (dotted, e.g. reliability.mtbi_gpu_days=1000:5000:9).")
@click.option("--out", "out", type=click.Path(dir_okay=False),
              help="Path prefix of the CSV and PNG written (default: SCENARIO-KEY in this folder).")
@mttr_option
@json_option
def sweep_command(scenario: str, vary: str, out: str | None, mttr_config: str | None, as_json: bool) -> None:
    """Price a scenario across a range of one key: writes PREFIX.csv and a PNG plot PREFIX.png."""
    key, values = parse_vary(vary)
    prefix = Path(out) if out else Path(f"{Path(scenario).stem}-{key.replace('.', '-')}")
    if not prefix.parent.is_dir():
        raise InputError(f"--out {out}: no folder {prefix.parent}")
    csv_path, png_path = prefix.with_name(prefix.name + ".csv"), prefix.with_name(prefix.name + ".png")
    for path in (csv_path, png_path):  # a device or a FIFO there: refused before any pricing
        check_replaceable(path)
    loaded = load_uncertain(scenario).point  # a range sweeps at its point figure
    rows = sweep(loaded, key, values, load_mttr_model(mttr_config))
    with _writing(out or prefix):
        write_csv(rows, csv_path)
        write_png(rows, key, png_path, f"{loaded.name}: effective $/M tokens against {key}")
    if as_json:
        print_json({"scenario": scenario, "key": key, "csv": str(csv_path), "png": str(png_path), "rows": rows})
        return
    out_ = console()
    table = Table(title=f"{loaded.name}: {key}")
    for column in (key, "$/M tokens", "goodput", "effective $/M tokens"):
        table.add_column(column, justify="right")
    for row in rows:
        effective = row["effective_cost_per_million_tokens"]
        table.add_row(f"{row[key]:,.4g}", f"{row['cost_per_million_tokens']:.4f}", f"{row['goodput']:.3f}",
                      "-" if effective is None else f"{effective:.4f}")
    out_.print(table)
    out_.print(f"wrote {csv_path} and {png_path}")


@command.command("sensitivity")
@scenario_argument
@click.option("--out", "out", required=True, type=OutputFolder(),
              help="Folder for SCENARIO-tornado.png, SCENARIO-sensitivity.csv and .json (made if missing).")
@mttr_option
@level_option
@json_option
def sensitivity_command(scenario: str, out: str, mttr_config: str | None, level: float, as_json: bool) -> None:
    """Which input moves the effective price: each range at its low and high end, the others at their medians."""
    folder = Path(out)
    if not folder.parent.is_dir():
        raise InputError(f"--out {out}: no folder {folder.parent}")
    for path in output_paths(folder, Path(scenario).stem).values():  # a device or a FIFO there: refused first
        check_replaceable(path)
    result = sensitivity(load_uncertain(scenario), load_mttr_model(mttr_config), level)
    try:
        folder.mkdir(exist_ok=True)
    except OSError as error:
        raise InputError(f"--out {out}: cannot make the folder: {error.strerror or error}") from None
    with _writing(out):
        paths = write_files(result, folder, Path(scenario).stem)
    if as_json:
        print_json({**result, "files": {kind: str(path) for kind, path in paths.items()}})
        return
    out_ = console()
    table = Table(title=f"{result['name']}: effective $/M tokens, each input at its ends, the others at their medians "
                        f"({result['price_at_medians']:.4f})" if result["price_at_medians"] is not None else result["name"])
    for column in ("input", "low", "high", "$/M at low", "$/M at high", "swing"):
        table.add_column(column, justify="right")
    for row in result["inputs"]:
        table.add_row(row["input"], f"{row['low']:,.4g}", f"{row['high']:,.4g}",
                      *("unbounded" if row[k] is None else f"{row[k]:.4g}" for k in ("price_at_low", "price_at_high", "swing")))
    out_.print(table)
    out_.print(f"wrote {paths['png']}, {paths['csv']} and {paths['json']}")
