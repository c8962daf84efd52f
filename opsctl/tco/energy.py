"""Energy per token at the utility meter (the facility's PUE included), and what a training run
uses in US-household-years.
"""

from __future__ import annotations

from opsctl.tco.derivation import Figure, Given

HOUSEHOLD_KWH_PER_YEAR = 10_791
HOUSEHOLD_SOURCE = "US EIA, average annual electricity use of a US residential customer (2022): a US household uses 10,791 kWh a year"
JOULES_SOURCE = "docs/sources.md, Power (as SemiAnalysis 2025 uses it): utility J/token = watts_per_gpu × pue / tokens_per_second_per_gpu"


def joules_per_token(watts: Given[float], pue: Given[float], tokens_per_second: float) -> Figure:
    return Figure(watts.value * pue.value / tokens_per_second, "J/token", "watts_per_gpu · pue / tokens_per_second_per_gpu",
                  f"{JOULES_SOURCE}; watts_per_gpu: {watts.source}; pue: {pue.source}",
                  {"watts_per_gpu": watts.value, "pue": pue.value, "tokens_per_second_per_gpu": tokens_per_second})


def household_years(tokens: float, joules: float) -> Figure:
    kwh = tokens * joules / 3.6e6
    return Figure(kwh / HOUSEHOLD_KWH_PER_YEAR, "household-years", "tokens · J/token / 3.6e6 J/kWh / 10,791 kWh",
                  HOUSEHOLD_SOURCE, {"tokens": tokens, "joules_per_token": joules, "kwh": kwh})
