"""Vary one key of a scenario over a range and price each point: a CSV of the figures and a PNG
plot of effective $ per million tokens (and the failure-free price) against the key.
"""

import csv
import re

from opsctl.errors import InputError
from opsctl.tco.pricing import price
from opsctl.tco.scenario import scenario_from_data, set_key

VARY = re.compile(r"(?P<key>[A-Za-z_][\w.]*)=(?P<start>[^:]+):(?P<stop>[^:]+):(?P<steps>\d+)")
COLUMNS = ("gpu_hour_cost", "tokens_per_second_per_gpu", "mfu", "cost_per_million_tokens", "goodput",
           "checkpoint_interval_minutes", "effective_cost_per_million_tokens", "joules_per_token",
           "total_cost", "effective_total_cost", "training_days")
PLOT_SIZE_INCHES = (8, 5)
PLOT_DPI = 100  # 800 × 500 pixels


def parse_vary(text):
    """KEY=FROM:TO:STEPS → (key, [STEPS evenly spaced values from FROM to TO])."""
    match = VARY.fullmatch(text.strip())
    if not match:
        raise InputError(f"--vary {text!r}: expected KEY=FROM:TO:STEPS, e.g. reliability.mtbi_gpu_days=1000:5000:9")
    key, steps = match["key"], int(match["steps"])
    try:
        start, stop = float(match["start"]), float(match["stop"])
    except ValueError:
        raise InputError(f"--vary {text!r}: FROM and TO must be numbers") from None
    if steps < 2:
        raise InputError(f"--vary {text!r}: STEPS must be 2 or more")
    return key, [start + (stop - start) * i / (steps - 1) for i in range(steps)]


def sweep(scenario, key, values, mttr_model=None):
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


def write_csv(rows, path):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def write_png(rows, key, path, title):
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
    figure.savefig(path, dpi=PLOT_DPI)  # fixed size: no tight bbox, so the PNG is 800 × 500
    pyplot.close(figure)


def _value_at(data, path):
    for part in path.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data
