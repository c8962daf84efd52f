"""Vary one key of a scenario over a range and price each point: a CSV of the figures and a PNG
plot of effective $ per million tokens (and the failure-free price) against the key.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.runs.atomic_file import write_bytes_atomic
from opsctl.tco.pricing import price
from opsctl.tco.scenario import scenario_from_data, set_key

if TYPE_CHECKING:
    from opsctl.mttr import MttrModel
    from opsctl.tco.scenario import Scenario

VARY = re.compile(r"(?P<key>[A-Za-z_][\w.]*)=(?P<start>[^:]+):(?P<stop>[^:]+):(?P<steps>\d+)")
COLUMNS = ("gpu_hour_cost", "tokens_per_second_per_gpu", "mfu", "cost_per_million_tokens", "goodput",
           "checkpoint_interval_minutes", "effective_cost_per_million_tokens", "joules_per_token",
           "total_cost", "effective_total_cost", "training_days")
PLOT_SIZE_INCHES = (8, 5)
PLOT_DPI = 100  # 800 × 500 pixels
MAX_STEPS = 1000  # 0.4 ms a point: a sweep of the most takes about half a second, and its plot stays legible


def parse_vary(text: str) -> tuple[str, list[float]]:
    """KEY=FROM:TO:STEPS → (key, [STEPS evenly spaced values from FROM to TO])."""
    match = VARY.fullmatch(text.strip())
    if not match:
        raise InputError(f"--vary {text[:80]!r}: expected KEY=FROM:TO:STEPS, e.g. reliability.mtbi_gpu_days=1000:5000:9")
    key, steps = match["key"], int(match["steps"]) if len(match["steps"]) <= 9 else MAX_STEPS + 1
    try:
        start, stop = float(match["start"]), float(match["stop"])
    except ValueError:
        raise InputError(f"--vary {text!r}: FROM and TO must be numbers") from None
    if not (math.isfinite(start) and math.isfinite(stop)):
        raise InputError(f"--vary {text!r}: FROM and TO must be finite numbers")
    if steps < 2:
        raise InputError(f"--vary {text!r}: STEPS must be 2 or more")
    if steps > MAX_STEPS:
        raise InputError(f"--vary {text[:80]!r}: STEPS must be at most {MAX_STEPS:,}")
    return key, [start + (stop - start) * i / (steps - 1) for i in range(steps)]


def sweep(scenario: Scenario, key: str, values: Sequence[float],
          mttr_model: MttrModel | None = None) -> list[dict[str, Any]]:
    """One row per value: the key's value and the priced figures. A key that holds a whole number
    in the scenario (gpus, spare racks) is varied in whole numbers."""
    if key.startswith("reliability.") and scenario.reliability is None:
        raise InputError(f"{scenario.source}: --vary {key}: the scenario has no reliability block to vary; add one "
                         f"(mtbi_gpu_days, restart_minutes, checkpoint_write_minutes: docs/tco.md) or sweep a preset "
                         f"that has one, e.g. scenarios/llama4-16k-gb200-mtbi2000-spares-charged.yaml")
    whole = type(_value_at(scenario.raw, key)) is int
    rows = []
    for value in values:
        value = round(value) if whole else value
        data = set_key(scenario.raw, key, value)
        point = price(scenario_from_data(data, f"{scenario.source} ({key}={value})"), mttr_model)
        rows.append({key: value, **{column: point[column] for column in COLUMNS}})
    return rows


def write_csv(rows: Sequence[dict[str, Any]], path: str | Path) -> None:
    """Written whole or not at all (the atomic writer): a full disk leaves the old file as it was."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    write_bytes_atomic(path, text.getvalue().encode("utf-8"), make_folders=False)


def write_png(rows: Sequence[dict[str, Any]], key: str, path: str | Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    from matplotlib import pyplot

    xs = [row[key] for row in rows]
    figure, axes = pyplot.subplots(figsize=PLOT_SIZE_INCHES, dpi=PLOT_DPI)
    effective = [(x, row["effective_cost_per_million_tokens"]) for x, row in zip(xs, rows)
                 if row["effective_cost_per_million_tokens"] is not None]
    axes.plot([x for x, _ in effective], [y for _, y in effective], marker="o",
              label="effective $/M tokens (failures, repairs, spares)")
    axes.plot(xs, [row["cost_per_million_tokens"] for row in rows], linestyle="--", label="$/M tokens, failure-free")
    axes.set_xlabel(key)
    axes.set_ylabel("$ per million tokens")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=PLOT_DPI)  # fixed size: no tight bbox, so the PNG is 800 × 500
    pyplot.close(figure)
    write_bytes_atomic(path, image.getvalue(), make_folders=False)


def _value_at(data: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data
