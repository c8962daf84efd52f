"""$ per GPU-hour: given directly, or built from what owning the hardware costs each month —
capital (a loan repaid over the depreciation years at the cost of capital) plus hosting (power
at the facility's PUE, colocation per kW, software) — spread over the unit's GPUs and hours.

The published December 2023 HGX H100 build-up (docs/sources.md: $7,025/month capital +
$1,871/month hosting at 13% cost of debt) comes to about $1.52 per GPU-hour this way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opsctl.tco.derivation import Figure
from opsctl.tco.elementwise import Value, power, rounded, where

if TYPE_CHECKING:
    from opsctl.tco.scenario import Scenario

HOURS_PER_MONTH = 730.0  # 8,760 hours a year / 12
ANNUITY = ("capital per month = unit_price · r / (1 − (1 + r)^−n), r = cost_of_capital / 12, "
           "n = 12 · depreciation_years (a loan repaid in equal monthly payments)")
HOSTING = ("hosting per month = it_kw_per_unit · pue · 730 h · power_price_per_kwh + "
           "it_kw_per_unit · colocation_per_kw_month + software_per_month")


def monthly_capital(unit_price: Value, depreciation_years: Value, cost_of_capital: Value) -> Value:
    """The equal monthly payment that repays unit_price with interest over the depreciation years."""
    months = 12 * depreciation_years
    rate = cost_of_capital / 12
    return where(rate == 0, _interest_free, _annuity, unit_price, months, rate)


def _interest_free(unit_price: Value, months: Value, rate: Value) -> Value:
    return unit_price / months


def _annuity(unit_price: Value, months: Value, rate: Value) -> Value:
    return unit_price * rate / (1 - power(1 + rate, -months))


def monthly_hosting(it_kw: Value, pue: Value, power_price_per_kwh: Value, colocation_per_kw_month: Value,
                    software_per_month: Value = 0.0) -> Value:
    return it_kw * pue * HOURS_PER_MONTH * power_price_per_kwh + it_kw * colocation_per_kw_month + software_per_month


def gpu_hour_cost(scenario: Scenario) -> Figure:
    """A Figure: $ per GPU-hour, with the inputs and formula that produced it."""
    if scenario.gpu_hour_cost is not None:
        given = scenario.gpu_hour_cost
        return Figure(given.value, "$/GPU-hour", "given", given.source, {"gpu_hour_cost": given.value})
    capex, opex = scenario.capex, scenario.opex
    assert capex is not None and opex is not None  # the scenario reader: no gpu_hour_cost means both blocks
    unit_gpus = capex["unit_gpus"].value if capex["unit_gpus"] else scenario.sku.domain.gpus
    inputs: dict[str, Any] = {"unit_gpus": unit_gpus}
    sources = [f"unit_gpus: {capex['unit_gpus'].source if capex['unit_gpus'] else f'a {scenario.sku.name} {scenario.sku.domain.unit}'}"]
    if capex["capital_per_month"] is not None:
        capital = capex["capital_per_month"].value
        sources.append(f"capital_per_month: {capex['capital_per_month'].source}")
        capital_formula = "capital per month given"
    else:
        args = {key: capex[key].value for key in ("unit_price", "depreciation_years", "cost_of_capital")}
        capital = monthly_capital(**args)
        inputs.update(args)
        sources += [f"{key}: {capex[key].source}" for key in args]
        capital_formula = ANNUITY
    if opex["hosting_per_month"] is not None:
        hosting = opex["hosting_per_month"].value
        sources.append(f"hosting_per_month: {opex['hosting_per_month'].source}")
        hosting_formula = "hosting per month given"
    else:
        pue = opex["pue"] or scenario.pue
        args = {"it_kw": opex["it_kw_per_unit"].value, "pue": pue.value,
                "power_price_per_kwh": opex["power_price_per_kwh"].value,
                "colocation_per_kw_month": opex["colocation_per_kw_month"].value,
                "software_per_month": opex["software_per_month"].value if opex["software_per_month"] else 0.0}
        hosting = monthly_hosting(**args)
        inputs.update(args)
        sources += [f"{key}: {opex[key].source}" for key in ("it_kw_per_unit", "power_price_per_kwh", "colocation_per_kw_month")]
        sources.append(f"pue: {pue.source}")
        hosting_formula = HOSTING
    inputs.update({"capital_per_month": rounded(capital, 2), "hosting_per_month": rounded(hosting, 2)})
    value = (capital + hosting) / unit_gpus / HOURS_PER_MONTH
    formula = f"(capital + hosting per month) / unit_gpus / 730 h; {capital_formula}; {hosting_formula}"
    return Figure(value, "$/GPU-hour", formula, "; ".join(sources), inputs)
