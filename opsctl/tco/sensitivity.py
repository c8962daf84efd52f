"""Which input moves the price: the effective $/M tokens with each uncertain input at its low and
its high end and every other input at its median (one at a time), sorted by the swing between
the two — a tornado chart (PNG) and its table (CSV and JSON).

An input's ends are the stated low and high of a uniform or triangular range, and the central
interval at `--level` of the others (distributions.Distribution.ends).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.runs.atomic_file import write_bytes_atomic, write_json_atomic
from opsctl.tco.pricing import price

if TYPE_CHECKING:
    from collections.abc import Mapping

    from opsctl.mttr import MttrModel
    from opsctl.tco.uncertain import UncertainScenario

FIGURE = "effective_cost_per_million_tokens"
COLUMNS = ("input", "low", "high", "price_at_low", "price_at_high", "swing")
PLOT_DPI = 100


def sensitivity(uncertain: UncertainScenario, mttr_model: MttrModel | None, level: float) -> dict[str, Any]:
    """The tornado's table: one row per uncertain input, the largest swing first."""
    if not uncertain.inputs:
        raise InputError(f"{uncertain.source}: no input is a range, so nothing to move; write one as {{low, high}} "
                         f"(docs/tco.md), e.g. scenarios/llama4-16k-gb200-ranges-spares-charged.yaml")
    medians = {item.name: item.fit(item.distribution.median()) for item in uncertain.inputs}
    at_medians = _price(uncertain, mttr_model, medians)
    rows: list[dict[str, Any]] = []
    for item in uncertain.inputs:
        low, high = (item.fit(end) for end in item.distribution.ends(level))
        at_low = _price(uncertain, mttr_model, {**medians, item.name: low})
        at_high = _price(uncertain, mttr_model, {**medians, item.name: high})
        swing = abs(at_high - at_low) if math.isfinite(at_low) and math.isfinite(at_high) else math.inf
        rows.append({"input": item.name, "low": low, "high": high, "price_at_low": at_low, "price_at_high": at_high,
                     "swing": swing})
    rows.sort(key=lambda row: -row["swing"])
    return {"scenario": uncertain.source, "name": uncertain.name, "figure": FIGURE, "level": level,
            "price_at_medians": at_medians, "medians": medians,
            "method": "one input at a time at its low and high end, the others at their medians; sorted by swing",
            "inputs": [_nulls(row) for row in rows]}


def _price(uncertain: UncertainScenario, mttr_model: MttrModel | None, values: Mapping[str, float]) -> float:
    value = price(uncertain.scenario_at(values), mttr_model)[FIGURE]
    return math.inf if value is None else value  # no progress: an unbounded price


def _nulls(row: dict[str, Any]) -> dict[str, Any]:
    return {key: (None if isinstance(value, float) and not math.isfinite(value) else value) for key, value in row.items()}


def output_paths(folder: Path, stem: str) -> dict[str, Path]:
    """The files write_files writes, by kind."""
    return {"csv": folder / f"{stem}-sensitivity.csv", "json": folder / f"{stem}-sensitivity.json",
            "png": folder / f"{stem}-tornado.png"}


def write_files(result: dict[str, Any], folder: Path, stem: str) -> dict[str, Path]:
    """stem-sensitivity.csv, .json and stem-tornado.png in `folder`, each written atomically."""
    csv_text = io.StringIO()
    writer = csv.DictWriter(csv_text, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(result["inputs"])
    paths = output_paths(folder, stem)
    write_bytes_atomic(paths["csv"], csv_text.getvalue().encode(), make_folders=False)
    write_json_atomic(paths["json"], result, make_folders=False)
    write_bytes_atomic(paths["png"], tornado_png(result), make_folders=False)
    return paths


def tornado_png(result: dict[str, Any]) -> bytes:
    """The tornado chart as PNG bytes: a bar per input from its price at one end to the other,
    around the price with every input at its median; the largest swing on top."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    from matplotlib import pyplot

    rows = result["inputs"]
    base = result["price_at_medians"]
    finite = [v for row in rows for v in (row["price_at_low"], row["price_at_high"]) if v is not None]
    cap = max(finite + [base or 0]) * 1.15 if finite else 1.0  # an unbounded end is drawn to the edge
    figure, axes = pyplot.subplots(figsize=(9, 1.2 + 0.55 * len(rows)), dpi=PLOT_DPI)
    for position, row in enumerate(reversed(rows)):
        for end, colour in (("low", "tab:blue"), ("high", "tab:orange")):
            value = row[f"price_at_{end}"]
            shown = cap if value is None else value
            start = base if base is not None else 0
            axes.barh(position, shown - start, left=start, color=colour, alpha=0.8,
                      label=f"input at its {end} end" if position == 0 else None)
            if value is None or abs(value - start) > 0.002 * abs(start or 1):  # a label where a bar shows
                axes.text(shown, position, "unbounded" if value is None else f"{value:.4g}", va="center", fontsize=8,
                          ha="left" if shown >= start else "right")
    axes.set_yticks(range(len(rows)))
    axes.set_yticklabels([f"{row['input']} ({row['low']:.4g}–{row['high']:.4g})" for row in reversed(rows)], fontsize=8)
    if base is not None:
        axes.axvline(base, color="black", linewidth=1)
    axes.set_xlabel(f"effective $ per million tokens (every other input at its median: {base:.4g})" if base is not None
                    else "effective $ per million tokens")
    axes.set_title(f"{result['name']}: what moves the effective price", fontsize=10)
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=PLOT_DPI)
    pyplot.close(figure)
    return buffer.getvalue()
