"""Several priced scenarios side by side, and each one's cost edge over the first:
edge = 1 − effective $/M tokens / the first scenario's effective $/M tokens.
"""

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


def compare(documents):
    baseline = documents[0]
    base = baseline["effective_cost_per_million_tokens"]
    edges = []
    for document in documents:
        cost = document["effective_cost_per_million_tokens"]
        edges.append({"name": document["name"], "scenario": document["scenario"],
                      "edge_vs_baseline": None if cost is None or base is None else 1 - cost / base})
    return {"baseline": baseline["name"], "edges": edges, "scenarios": documents,
            "formula": "edge = 1 − effective_cost_per_million_tokens / baseline's"}


def cell(document, key, fmt):
    value = document.get(key)
    return "-" if value is None else fmt.format(value)
