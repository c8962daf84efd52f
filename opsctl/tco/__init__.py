"""Goodput-aware TCO: what a training run costs per token, with failures, repairs and spares.

scenario (the file) → pricing.price (gpu_hour_cost, throughput, energy, goodput, spares) →
CONTRACT.md's `opsctl tco run` document; sweep and compare build on it. docs/tco.md has the
model, its formulas and their sources.
"""
