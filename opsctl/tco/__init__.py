"""Goodput-aware TCO: what a training run costs per token, with failures, repairs and spares.

scenario (the file) → pricing.price (gpu_hour_cost, throughput, energy, goodput, spares) →
the `opsctl tco run` document (docs/tco.md, The output); sweep and compare build on it.
docs/tco.md has the model and its formulas, docs/sources.md the published figures' sources.
"""
