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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError

if TYPE_CHECKING:
    from opsctl.mttr import MttrModel, RepairAction
    from opsctl.tco.scenario import FailureClass, Scenario

MINUTES_PER_DAY = 1440.0


@dataclass(frozen=True)
class Layout:
    training_gpus: int
    train_gpus_per_domain: int
    spare_gpus_per_domain: int
    domains: int
    spare_units: int
    installed_gpus: int
    charged: bool
    spare_source: str

    @property
    def charge_factor(self) -> float:
        """GPUs paid for per GPU training: spares charged to the run, or carried by other work."""
        return self.installed_gpus / self.training_gpus if self.charged else 1.0


@dataclass(frozen=True)
class Failure:
    """A class of interruptions, resolved: what it idles, for how long, and what covers it."""

    name: str
    share: float
    blast_radius_gpus: int
    repair_hours: float
    source: str
    covered_by: str = ""  # "restart" | "hot spares" | "spare unit"
    wait_minutes: float = 0.0  # expected wait for a repair per interruption of this class

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
    domains = math.ceil(scenario.gpus / per_domain)
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
        source += f"; time to restore {hours:g} h: {scenario.source}: reliability.failure_mix"
    elif failure_class.repair_step_hours is not None:  # the scenario's repair step, the action's other steps
        hours = sum({**action.hours, "repair_h": failure_class.repair_step_hours}.values())
        source += f"; repair step {failure_class.repair_step_hours:g} h: {scenario.source}: reliability.failure_mix"
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


def cover(failures: Sequence[Failure], layout_: Layout, interruptions_per_hour: float) -> tuple[list[Failure], float]:
    """Say what covers each failure class and the expected repair wait per interruption.

    Drains beyond the hot spares fall on the spare units; the number of units under repair at once
    is Poisson with mean (drains per hour × repair hours) (an infinite-server queue), so a drain
    finds every spare unit busy with probability P(N ≥ spare units), and then waits the repair.
    """
    drains = [f for f in failures if f.blast_radius_gpus > layout_.spare_gpus_per_domain]
    load = sum(f.share * interruptions_per_hour * f.repair_hours for f in drains if f.share and f.repair_hours)
    all_busy = _poisson_at_least(load, layout_.spare_units)
    covered = []
    for f in failures:
        if f.blast_radius_gpus == 0:
            covered.append(_with(f, "restart", 0.0))
        elif f.blast_radius_gpus <= layout_.spare_gpus_per_domain:
            covered.append(_with(f, "hot spares", 0.0))
        else:
            wait = all_busy * f.repair_hours * 60 if all_busy else 0.0  # not 0 · inf
            covered.append(_with(f, "spare unit" if layout_.spare_units else "repair", wait))
    return covered, all_busy


def _with(failure: Failure, covered_by: str, wait: float) -> Failure:
    return Failure(failure.name, failure.share, failure.blast_radius_gpus, failure.repair_hours, failure.source,
                   covered_by, wait)


def _poisson_at_least(mean: float, k: int) -> float:
    """P(N ≥ k) for N ~ Poisson(mean); terms in log space, as mean**j overflows for a large mean."""
    if k == 0 or math.isinf(mean):
        return 1.0
    if mean == 0 or k > mean + 40 * math.sqrt(mean) + 40:  # beyond, the tail is below 1e-300: no term to sum
        return 0.0
    below = sum(math.exp(-mean + j * math.log(mean) - math.lgamma(j + 1)) for j in range(k))
    return min(max(1.0 - below, 0.0), 1.0)
