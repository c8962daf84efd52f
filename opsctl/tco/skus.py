"""The GPU SKUs a scenario may name: peak dense FLOPS per precision, default power per GPU, and
the NVLink domain the GPU lives in (an HGX server of 8, or a GB200 NVL72 rack of 72).

Every figure carries its source so the TCO output can say where a number came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from opsctl.rack_models import MODELS

SOURCES = "docs/sources.md"


@dataclass(frozen=True)
class Domain:
    """The unit a failure can take out and a spare can replace: a server or a rack."""

    model: str  # rack model name, as the MTTR model knows it
    unit: str  # "server" | "rack"
    gpus: int
    gpus_per_tray: int


@dataclass(frozen=True)
class Sku:
    name: str
    peak_tflops: dict[str, float]  # precision -> dense TFLOPS
    peak_source: str
    watts_per_gpu: float | None  # all-in IT watts per GPU (GPU, CPU, network, storage)
    pue: float | None
    power_source: str
    domain: Domain


def _domain(model_name: str, unit: str) -> Domain:
    model = MODELS[model_name]
    return Domain(model_name, unit, model.gpus, model.gpus_per_tray)


_PEAKS = f"NVIDIA H100, H200, HGX B200 and GB200 NVL72 datasheets, dense (no sparsity); {SOURCES}"
_H100_POWER = f"SemiAnalysis 2025 ({SOURCES}, Power): H100 ≈ 1,790 W at PUE 1.3 (≈ 1,377 W IT), implied by the published J/token"

SKUS = {
    sku.name: sku
    for sku in (
        Sku("h100", {"bf16": 989, "fp8": 1979}, _PEAKS, 1377, 1.3, _H100_POWER, _domain("hgx-h100", "server")),
        # H200 has H100's compute and TDP (700 W); no all-in figure is published, so H100's is used.
        Sku("h200", {"bf16": 989, "fp8": 1979}, _PEAKS, 1377, 1.3,
            f"{_H100_POWER} (H200 shares H100's 700 W TDP; no H200 figure published)", _domain("hgx-h200", "server")),
        # No all-in power figure is published for HGX B200: the scenario must give watts_per_gpu and pue.
        Sku("b200", {"bf16": 2250, "fp8": 4500}, _PEAKS, None, None, "", Domain("hgx-b200", "server", 8, 8)),
        Sku("gb200", {"bf16": 2500, "fp8": 5000}, _PEAKS, 1885, 1.1,
            f"SemiAnalysis 2025 ({SOURCES}, Power): GB200 ≈ 2,074 W at PUE 1.1 (≈ 1,885 W IT), implied by the published J/token",
            _domain("gb200-nvl72", "rack")),
    )
}
PRECISIONS = ("bf16", "fp8")
