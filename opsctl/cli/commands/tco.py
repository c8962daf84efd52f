"""`opsctl tco run|compare|sweep`: price a training run per token, failures, repairs and spares
included (the model: docs/tco.md)."""

from pathlib import Path

import click
from rich.table import Table

from opsctl.cli.ledger_options import TIME, db_option
from opsctl.cli.output import console, json_option, print_json
from opsctl.errors import InputError
from opsctl.ledger.fleet_stats import reliability_inputs
from opsctl.ledger.store import open_ledger
from opsctl.mttr import load_mttr_model
from opsctl.tco.compare import ROWS, cell, compare
from opsctl.tco.from_ledger import with_measured_reliability
from opsctl.tco.pricing import price
from opsctl.tco.scenario import load_scenario
from opsctl.tco.sweep import parse_vary, sweep, write_csv, write_png

scenario_argument = click.argument("scenario", type=click.Path(dir_okay=False))
mttr_option = click.option(
    "--mttr-config", type=click.Path(dir_okay=False),
    help="Repair-model overrides (default: $OPSCTL_MTTR_CONFIG, else the built-in model); repair times and "
         "blast radii of the failure classes come from it.")


ledger_options = (
    click.option("--from-ledger", is_flag=True,
                 help="Take MTBI, repair time and GPUs idled from the fleet's ledger instead of the scenario's "
                      "published figures (see opsctl ledger stats)."),
    click.option("--since", type=TIME, help="With --from-ledger: measure from this time."),
    click.option("--rack", "racks", multiple=True, help="With --from-ledger: only this rack (repeat for more)."),
    db_option,
)


def _priced(path, mttr_config, from_ledger=False, db=None, since=None, racks=()):
    scenario = load_scenario(path)
    measured = None
    if from_ledger:
        with open_ledger(db, read_only=True) as ledger:
            measured = reliability_inputs(ledger, since=since, racks=racks)
        scenario = with_measured_reliability(scenario, measured)
    document = price(scenario, load_mttr_model(mttr_config))
    if measured is not None:
        document["reliability_from"] = {"source": measured.source, "measured": measured.scenario}
    return document


@click.group("tco")
def command():
    """Goodput-aware TCO: $/GPU-hour, $/M tokens, J/token, and what failures, repairs and spares cost."""


def _with(options):
    def decorate(function):
        for option in reversed(options):
            function = option(function)
        return function
    return decorate


@command.command("run")
@scenario_argument
@mttr_option
@_with(ledger_options)
@json_option
def run(scenario, mttr_config, from_ledger, since, racks, db, as_json):
    """Price one scenario file (YAML or JSON)."""
    if not from_ledger and (since or racks):
        raise InputError("--since and --rack go with --from-ledger")
    document = _priced(scenario, mttr_config, from_ledger, db, since, racks)
    if as_json:
        print_json(document)
        return
    out = console()
    out.print(f"[bold]{document['name']}[/bold]: {document['gpus']:,} × {document['gpu']} {document['precision']}")
    table = Table()
    for column in ("figure", "value", "unit", "how"):
        table.add_column(column, overflow="fold")
    for key, figure in document["derivations"].items():
        value = figure["value"]
        table.add_row(key, "-" if value is None else f"{value:,.4g}", figure["unit"], figure["formula"])
    out.print(table)
    if document.get("reliability_from"):
        out.print(f"reliability {document['reliability_from']['source']}")
    for warning in document["warnings"]:
        out.print(f"[yellow]warning: {warning}[/yellow]")


@command.command("compare")
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False))
@mttr_option
@json_option
def compare_command(scenarios, mttr_config, as_json):
    """Price scenarios side by side; the edge is each one's saving over the first."""
    mttr_model = load_mttr_model(mttr_config)
    result = compare([price(load_scenario(path), mttr_model) for path in scenarios])
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
    console().print(table)


@command.command("sweep")
@scenario_argument
@click.option("--vary", "vary", required=True, metavar="KEY=FROM:TO:STEPS",
              help="The scenario key to vary (dotted, e.g. reliability.mtbi_gpu_days=1000:5000:9).")
@click.option("--out", "out", type=click.Path(dir_okay=False),
              help="Path prefix of the CSV and PNG written (default: SCENARIO-KEY in this folder).")
@mttr_option
@json_option
def sweep_command(scenario, vary, out, mttr_config, as_json):
    """Price a scenario across a range of one key: writes PREFIX.csv and a PNG plot PREFIX.png."""
    key, values = parse_vary(vary)
    loaded = load_scenario(scenario)
    rows = sweep(loaded, key, values, load_mttr_model(mttr_config))
    prefix = Path(out) if out else Path(f"{Path(scenario).stem}-{key.replace('.', '-')}")
    if not prefix.parent.is_dir():
        raise InputError(f"--out {out}: no folder {prefix.parent}")
    csv_path, png_path = prefix.with_name(prefix.name + ".csv"), prefix.with_name(prefix.name + ".png")
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
