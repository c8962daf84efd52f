"""Spares and what an interruption takes out of service.

A job trains on some GPUs of each NVLink domain (64 of a GB200 NVL72 rack's 72; all 8 of an HGX
server) and keeps the rest as hot spares. An interruption whose blast radius fits in the domain's
hot spares costs only a restart. One that takes out more — a switch tray or cable cartridge
drains a whole NVL72 rack, an HGX baseboard a whole server — needs a spare rack or server; if all
spare units are already standing in for units under repair, the job waits for the repair.

Which repair a failure needs, how long it takes and what it idles come from the MTTR model
(opsctl/data/mttr.yaml, or the user's --mttr-config), so a change in repair time shows in the
price per token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.tco.elementwise import Value, ceil, exp, greatest, is_draws, isinf, lgamma, log, maximum, minimum, shown, sqrt, where

if TYPE_CHECKING:
    from opsctl.mttr import MttrModel, RepairAction
    from opsctl.tco.scenario import FailureClass, Scenario

MINUTES_PER_DAY = 1440.0


@dataclass(frozen=True)
class Layout:
    """How the job's GPUs sit in NVLink domains; each count a number, or draws where an input is a range."""

    training_gpus: Value
    train_gpus_per_domain: Value
    spare_gpus_per_domain: Value
    domains: Value
    spare_units: Value
    installed_gpus: Value
    charged: bool
    spare_source: str

    @property
    def charge_factor(self) -> Value:
        """GPUs paid for per GPU training: spares charged to the run, or carried by other work."""
        return self.installed_gpus / self.training_gpus if self.charged else 1.0


@dataclass(frozen=True)
class Failure:
    """A class of interruptions, resolved: what it idles, for how long, and what covers it (each
    figure a number, or draws where an input is a range)."""

    name: str
    share: Value
    blast_radius_gpus: Value
    repair_hours: Value
    source: str
    covered_by: str = ""  # "restart" | "hot spares" | "spare unit" | "repair"; for draws, the point's is not known: ""
    wait_minutes: Value = 0.0  # expected wait for a repair per interruption of this class

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "share": self.share, "blast_radius_gpus": self.blast_radius_gpus,
                "repair_hours": self.repair_hours, "covered_by": self.covered_by,
                "expected_wait_minutes": self.wait_minutes, "source": self.source}


def layout(scenario: Scenario, mttr_model: MttrModel) -> Layout:
    domain = scenario.sku.domain
    reliability = scenario.reliability
    assert reliability is not None  # spares are laid out only for a scenario with a reliability block
    if reliability.spare_gpus is not None:
        spare, source = reliability.spare_gpus.value, reliability.spare_gpus.source
    else:
        spare = mttr_model.spares.get(domain.model, {}).get("spare_gpus", 0)
        source = f"{mttr_model.source}: spares.{domain.model}" if domain.model in mttr_model.spares else "no hot spares"
    per_domain = domain.gpus - spare
    domains = ceil(scenario.gpus / per_domain)
    units = reliability.spare_units.value
    return Layout(scenario.gpus, per_domain, spare, domains, units, (domains + units) * domain.gpus,
                  reliability.charge_spares, source)


def resolve(failure_class: FailureClass, scenario: Scenario, mttr_model: MttrModel) -> Failure:
    """The blast radius and repair time of a failure class, from the scenario or the MTTR model."""
    if failure_class.blast_radius_gpus is not None:
        assert failure_class.repair_hours is not None  # the scenario reader: a blast radius goes with its repair hours
        return Failure(failure_class.name, failure_class.share, failure_class.blast_radius_gpus,
                       failure_class.repair_hours, f"{scenario.source}: reliability")
    domain = scenario.sku.domain
    action = action_of(failure_class, scenario, mttr_model)
    blast = {"gpu": 1, "compute_tray": domain.gpus_per_tray}.get(action.out_of_service, domain.gpus)
    source = (f"{mttr_model.source}: actions.{action.name} ({action.action}; out of service: "
              f"{action.out_of_service}; {action.source})")
    hours = action.mttr_hours
    if failure_class.repair_hours is not None:  # a measured time to restore (the ledger's), the action's blast radius
        hours = failure_class.repair_hours
        source += f"; time to restore {shown(hours)} h: {scenario.source}: reliability.failure_mix"
    elif failure_class.repair_step_hours is not None:  # the scenario's repair step, the action's other steps
        hours = sum({**action.hours, "repair_h": failure_class.repair_step_hours}.values())
        source += f"; repair step {shown(failure_class.repair_step_hours)} h: {scenario.source}: reliability.failure_mix"
    return Failure(failure_class.name, failure_class.share, blast, hours, source)


def action_of(failure_class: FailureClass, scenario: Scenario, mttr_model: MttrModel) -> RepairAction:
    """The MTTR model's repair action for a class that names an action or a part kind."""
    if failure_class.action is not None:
        if failure_class.action not in mttr_model.actions:
            raise InputError(f"{scenario.source}: reliability: unknown MTTR action {failure_class.action!r} "
                             f"(known in {mttr_model.source}: {', '.join(sorted(mttr_model.actions))})")
        return mttr_model.actions[failure_class.action]
    assert failure_class.part is not None  # the scenario reader: a class names a part or an action
    kind, _, context = failure_class.part.partition("@")
    try:
        return mttr_model.action_for(kind, scenario.sku.domain.model, context or None)
    except InputError as error:
        raise InputError(f"{scenario.source}: reliability.failure_mix: part {failure_class.part!r}: {error}") from None


def cover(failures: Sequence[Failure], layout_: Layout, interruptions_per_hour: Value) -> tuple[list[Failure], Value]:
    """Say what covers each failure class and the expected repair wait per interruption.

    Drains beyond the hot spares fall on the spare units; the number of units under repair at once
    is Poisson with mean (drains per hour × repair hours) (an infinite-server queue), so a drain
    finds every spare unit busy with probability P(N ≥ spare units), and then waits the repair.
    """
    spares = layout_.spare_gpus_per_domain
    load = sum(where((f.blast_radius_gpus > spares) & (f.share != 0) & (f.repair_hours != 0), _load, 0.0,
                     f.share, interruptions_per_hour, f.repair_hours) for f in failures)
    all_busy = poisson_at_least(load, layout_.spare_units)
    covered = []
    for f in failures:
        wait = where((f.blast_radius_gpus > spares) & (all_busy != 0), _wait, 0.0, all_busy, f.repair_hours)  # not 0 · inf
        covered.append(Failure(f.name, f.share, f.blast_radius_gpus, f.repair_hours, f.source, _covered_by(f, layout_), wait))
    return covered, all_busy


def _load(share: Value, interruptions_per_hour: Value, repair_hours: Value) -> Value:
    return share * interruptions_per_hour * repair_hours


def _wait(all_busy: Value, repair_hours: Value) -> Value:
    return all_busy * repair_hours * 60


def _covered_by(failure: Failure, layout_: Layout) -> str:
    blast, spares, units = failure.blast_radius_gpus, layout_.spare_gpus_per_domain, layout_.spare_units
    if any(is_draws(value) for value in (blast, spares, units)):
        return ""  # over draws each may differ; only the point's document says it
    if blast == 0:
        return "restart"
    if blast <= spares:
        return "hot spares"
    return "spare unit" if units else "repair"


def poisson_at_least(mean: Value, k: Value) -> Value:
    """P(N ≥ k) for N ~ Poisson(mean); terms in log space, as mean**j overflows for a large mean."""
    return where((k == 0) | isinf(mean), 1.0, _poisson_tail, mean, k)


def _poisson_tail(mean: Value, k: Value) -> Value:
    # beyond mean + 40·√mean + 40 the tail is below 1e-300: no term to sum
    return where((mean == 0) | (k > mean + 40 * sqrt(mean) + 40), 0.0, _poisson_sum, mean, k)


def _poisson_sum(mean: Value, k: Value) -> Value:
    log_mean = log(mean)
    below: Value = 0
    for j in range(int(greatest(k))):  # in order, as sum() adds them; on draws, each draw's first k terms
        below = below + where(j < k, lambda m, lm: exp(-m + j * lm - lgamma(j + 1)), 0.0, mean, log_mean)
    return minimum(maximum(1.0 - below, 0.0), 1.0)
