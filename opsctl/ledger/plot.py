"""The picture of `opsctl ledger stats --plot FILE.png`: failures per month, stacked by part kind."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from opsctl.errors import InputError
from opsctl.runs.atomic_file import write_bytes_atomic


def plot_failures(stats: dict[str, Any], path: str | Path) -> Path:
    """Write a PNG of the stats' failures over time; returns the path."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a rack's jump host
    import matplotlib.pyplot as plt

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
