"""Tokens per second per GPU and model FLOPs utilization (MFU), by Megatron's count of the FLOPs
a token costs to train: 6·N for the weights (forward and backward) plus 12·L·d·s for attention.

With that count, GPT-3 175B on H100 at 313 → 493 tokens/s/GPU (BF16, 989 TFLOPS) is the
published 34% → 54% MFU (SemiAnalysis 2025; docs/sources.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opsctl.tco.derivation import Figure

if TYPE_CHECKING:
    from opsctl.tco.scenario import ModelShape, Scenario

MEGATRON = "docs/sources.md, Training benchmarks: MFU = tokens/s/GPU × (6·N + 12·L·d·s) / peak FLOPS (Megatron's count, attention included)"


def flops_per_token(model: ModelShape) -> float:
    return 6 * model.params + 12 * model.layers * model.hidden * model.seq_len


def peak_flops(scenario: Scenario) -> float:
    return scenario.sku.peak_tflops[scenario.precision] * 1e12


def throughput(scenario: Scenario) -> tuple[Figure, Figure | None]:
    """(tokens/s/GPU Figure, MFU Figure or None when the model's shape is not given)."""
    peak = peak_flops(scenario)
    shape: dict[str, Any] = {}
    if scenario.model:
        m = scenario.model
        shape = {"params": m.params, "layers": m.layers, "hidden": m.hidden, "seq_len": m.seq_len,
                 "flops_per_token": flops_per_token(m), "peak_flops": peak}
    if scenario.tokens_per_second_per_gpu is not None:
        given = scenario.tokens_per_second_per_gpu
        tps = Figure(given.value, "tokens/s/GPU", "given", given.source, {"tokens_per_second_per_gpu": given.value})
        if not scenario.model:
            return tps, None
        value = given.value * flops_per_token(scenario.model) / peak
        return tps, Figure(value, "fraction", "tokens_per_second_per_gpu · (6·N + 12·L·d·s) / peak_flops",
                           f"{MEGATRON}; peak: {scenario.sku.peak_source} ({scenario.precision})",
                           {"tokens_per_second_per_gpu": given.value, **shape})
    mfu, model = scenario.mfu, scenario.model
    assert mfu is not None and model is not None  # the scenario reader: no tokens/s given means mfu with a model
    value = mfu.value * peak / flops_per_token(model)
    tps = Figure(value, "tokens/s/GPU", "mfu · peak_flops / (6·N + 12·L·d·s)",
                 f"{MEGATRON}; mfu: {mfu.source}; peak: {scenario.sku.peak_source} ({scenario.precision})",
                 {"mfu": mfu.value, **shape})
    return tps, Figure(mfu.value, "fraction", "given", mfu.source, {"mfu": mfu.value})
