"""The pictures of the ledger's statistics, as PNG files (matplotlib's Agg backend, written whole
or not at all):
- `opsctl ledger stats --plot FILE.png`: failures per month, stacked by part kind;
- `opsctl ledger stats --by COHORT --plot FILE.png`: each cohort's failure rate with its interval;
- `opsctl ledger age --plot FILE.png`: each group's Kaplan–Meier curve, its interval and its Weibull fit."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from opsctl.errors import InputError
from opsctl.runs.atomic_file import write_bytes_atomic


def plot_failures(stats: dict[str, Any], path: str | Path) -> Path:
    """Write a PNG of the stats' failures over time; returns the path."""
    plt = _pyplot()

    months: dict[str, dict[str, int]] = {}
    kinds = sorted({f["kind"] for f in stats["failures_over_time"]})
    for failure in stats["failures_over_time"]:
        month = failure["at"][:7]
        months.setdefault(month, {}).setdefault(failure["kind"], 0)
        months[month][failure["kind"]] += 1
    labels = _months_between(min(months), max(months)) if months else []
    figure, axes = plt.subplots(figsize=(max(6.0, 0.6 * len(labels) + 2), 4.0), dpi=100)
    bottom = [0] * len(labels)
    for kind in kinds:
        heights = [months.get(m, {}).get(kind, 0) for m in labels]
        axes.bar(labels, heights, bottom=bottom, label=kind)
        bottom = [b + h for b, h in zip(bottom, heights)]
    overall = stats["mtbi"]["overall"]
    mtbi = f"MTBI {overall['mtbi_gpu_days']:,.0f} GPU-days" if overall["mtbi_gpu_days"] else "no failure"
    axes.set_title(f"Failures per month by part kind — {overall['failures']} over {overall['gpu_days']:,.0f} GPU-days, {mtbi}",
                   fontsize=9)
    axes.set_xlabel("month")
    axes.set_ylabel("failures")
    if kinds:
        axes.legend(fontsize=8)
    else:
        axes.text(0.5, 0.5, "no failures recorded in this window", ha="center", va="center", transform=axes.transAxes)
    axes.tick_params(axis="x", labelrotation=45, labelsize=8)
    return save_png(figure, path)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a rack's jump host
    import matplotlib.pyplot as plt

    return plt


def save_png(figure: Any, path: str | Path) -> Path:
    """Write the figure as a PNG, whole or not at all; returns the path."""
    plt = _pyplot()
    figure.tight_layout()
    path = Path(path)
    image = io.BytesIO()
    try:
        figure.savefig(image, format="png")
    finally:
        plt.close(figure)
    try:  # replaced whole or not at all: a full disk leaves the last plot as it was
        write_bytes_atomic(path, image.getvalue(), make_folders=False)
    except OSError as exc:
        raise InputError(f"--plot {path}: cannot write: {exc.strerror or exc}") from None
    return path


def _months_between(first: str, last: str) -> list[str]:
    """Every 'YYYY-MM' from first to last, so quiet months show as gaps."""
    year, month = map(int, first.split("-"))
    labels = []
    while f"{year:04d}-{month:02d}" <= last:
        labels.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return labels


def plot_cohorts(stats: dict[str, Any], path: str | Path) -> Path:
    """Each cohort's failures per 1,000 GPU-days with its exact interval, the fleet's as a line."""
    plt = _pyplot()
    names = [name for name, c in stats["cohorts"].items() if c["gpu_days"]]
    figure, axes = plt.subplots(figsize=(7.0, max(2.5, 0.5 * len(names) + 1.5)), dpi=100)
    worse, better = set(stats["comparison"]["worse"]), set(stats["comparison"]["better"])
    for row, name in enumerate(names):
        cohort = stats["cohorts"][name]
        rate = cohort["mtbi"]
        gpu_days = cohort["gpu_days"]
        low, high = rate["interval"]  # MTBI ends: the rate's are their inverses
        rate_low = 1000 / high if high else 0.0
        rate_high = 1000 / low if low else None
        point = rate["per_1000_gpu_days"] or 0.0
        colour = "#e03131" if name in worse else "#2f9e44" if name in better else "#495057"
        axes.errorbar([point], [row], xerr=[[point - rate_low], [(rate_high or point) - point]], fmt="o", color=colour,
                      capsize=4)
        axes.annotate(f"{rate['failures']} / {gpu_days:,.0f} GPU-days", (point, row), textcoords="offset points",
                      xytext=(6, 6), fontsize=7)
    fleet = stats["fleet"]["mtbi"]["per_1000_gpu_days"]
    if fleet:
        axes.axvline(fleet, color="#868e96", linestyle="--", linewidth=1, label="fleet")
        axes.legend(fontsize=8)
    axes.set_yticks(range(len(names)), names)
    axes.set_xlabel(f"failures per 1,000 GPU-days ({stats['confidence']:.0%} exact interval)")
    axes.set_title(f"by {stats['by']}: {stats['verdict']}", fontsize=8, wrap=True)
    return save_png(figure, path)


def plot_ages(stats: dict[str, Any], path: str | Path) -> Path:
    """One panel per group of part kinds: the share of racks without a failure by age (Kaplan–Meier,
    with its interval), one line per cohort, and the fitted Weibull's curve beside it."""
    import numpy as np

    plt = _pyplot()
    groups = list(dict.fromkeys(c["group"] for c in stats["curves"]))
    columns = min(3, len(groups))
    rows = -(-len(groups) // columns)
    figure, grid = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), dpi=100, squeeze=False)
    for index, group in enumerate(groups):
        axes = grid[index // columns][index % columns]
        for number, curve in enumerate(c for c in stats["curves"] if c["group"] == group):
            colour = f"C{number % 10}"
            km = curve["kaplan_meier"]
            ages = [0.0] + [p["age_days"] for p in km["points"]] + [km["followed_days"]]
            survival = [1.0] + [p["survival"] for p in km["points"]]
            survival.append(survival[-1])
            label = curve["cohort"] if curve["cohort"] is not None else "all racks"
            axes.step(ages, survival, where="post", color=colour, label=f"{label} ({curve['failures']}/{curve['racks']})")
            lows = [1.0] + [p["interval"][0] if p["interval"][0] is not None else 0.0 for p in km["points"]]
            highs = [1.0] + [p["interval"][1] if p["interval"][1] is not None else 1.0 for p in km["points"]]
            lows.append(lows[-1])
            highs.append(highs[-1])
            axes.fill_between(ages, lows, highs, step="post", color=colour, alpha=0.15, linewidth=0)
            fit = curve["weibull"]
            if fit["fitted"]:
                t = np.linspace(0, km["followed_days"], 200)
                axes.plot(t, np.exp(-(t / fit["scale_days"]) ** fit["shape"]), color=colour, linestyle="--", linewidth=1,
                          label=f"Weibull shape {fit['shape']:.2f}")
        kinds = "connectors, cartridges, cables, switch trays" if group == "backplane" else group
        axes.set_title(f"first failure: {kinds}", fontsize=9)
        axes.set_xlabel("days since handover")
        axes.set_ylabel("racks without a failure")
        axes.set_ylim(0, 1.02)
        axes.legend(fontsize=7)
    for index in range(len(groups), rows * columns):
        grid[index // columns][index % columns].axis("off")
    return save_png(figure, path)
