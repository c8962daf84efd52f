"""Several priced scenarios side by side, and each one's cost edge over the first:
edge = 1 − effective $/M tokens / the first scenario's effective $/M tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opsctl.tco.monte_carlo import Draws, Table

ROWS = (
    ("gpu", "gpu", "{}"),
    ("GPUs training", "gpus", "{:,}"),
    ("$/GPU-hour", "gpu_hour_cost", "{:.3f}"),
    ("tokens/s/GPU", "tokens_per_second_per_gpu", "{:,.0f}"),
    ("MFU", "mfu", "{:.1%}"),
    ("$/M tokens (failure-free)", "cost_per_million_tokens", "{:.4f}"),
    ("J/token (utility)", "joules_per_token", "{:.2f}"),
    ("goodput", "goodput", "{:.3f}"),
    ("checkpoint interval, min", "checkpoint_interval_minutes", "{:.1f}"),
    ("spare charge factor", "spare_charge_factor", "{:.3f}"),
    ("effective $/M tokens", "effective_cost_per_million_tokens", "{:.4f}"),
    ("effective total cost, $", "effective_total_cost", "{:,.0f}"),
)


def compare(documents: Sequence[dict[str, Any]]) -> dict[str, Any]:
    baseline = documents[0]
    base = baseline["effective_cost_per_million_tokens"]
    edges = []
    for document in documents:
        cost = document["effective_cost_per_million_tokens"]
        edges.append({"name": document["name"], "scenario": document["scenario"],
                      "edge_vs_baseline": None if cost is None or base is None else 1 - cost / base})
    return {"baseline": baseline["name"], "edges": edges, "scenarios": documents,
            "formula": "edge = 1 − effective_cost_per_million_tokens / baseline's"}


def cell(document: dict[str, Any], key: str, fmt: str) -> str:
    value = document.get(key)
    return "-" if value is None else fmt.format(value)


def with_paired_edges(result: dict[str, Any], tables: Sequence[Table | None], draws: int,
                      level: float) -> dict[str, Any]:
    """The comparison with each scenario's edge over the first across paired draws (the same seed
    puts a key both scenarios share at the same quantile in both: monte_carlo), and the share of
    draws in which it is the cheaper per effective token. A scenario without ranges is its point
    figure in every draw."""
    import numpy

    from opsctl.tco.monte_carlo import paired_edge

    def costs(document: dict[str, Any], table: Table | None) -> Draws:
        if table is not None:
            return table["effective_cost_per_million_tokens"]
        value = document["effective_cost_per_million_tokens"]
        return numpy.full(draws, numpy.inf if value is None else value)

    series = [costs(document, table) for document, table in zip(result["scenarios"], tables)]
    edges: list[dict[str, Any]] = []
    sentences: list[str] = []
    baseline = result["scenarios"][0]["name"]
    for edge, cost in zip(result["edges"], series):
        paired = paired_edge(series[0], cost, level)
        edges.append({**edge, **paired})
        if edge is not result["edges"][0]:
            interval = ", ".join("unbounded" if v is None else f"{v:+.1%}" for v in paired["edge_interval"] or ())
            sentences.append(f"{edge['name']} is cheaper per effective token than {baseline} in "
                             f"{paired['cheaper_share']:.0%} of {draws:,} paired draws; edge {level:.0%} interval [{interval}]")
    return {**result, "edges": edges,
            "paired": {"draws": draws, "level": level, "sentences": sentences,
                       "method": "paired draws (common random numbers): draw i of every scenario uses the same seed "
                                 "stream for a key they share; cheaper_share = share of draws with a lower effective "
                                 "$/M tokens than the first scenario's"}}
