"""`opsctl tco run --from-ledger`: the scenario's failure mix rebuilt from what the fleet's own
ledger measured, part kind by part kind, each measure with its uncertainty as a range the Monte
Carlo draws from (opsctl/tco/distributions.py).

- One failure class per part kind the ledger has incidents of (gpu, compute_tray, link,
  switch_tray, cartridge…), repaired by the action the ledger's repairs of that kind took (the
  most frequent; none recorded: the MTTR model's action for the kind). Its own MTBI is
  `poisson_mtbi` over the kind's failures and the fleet's GPU-days (the gamma posterior of its
  rate; the output quotes the ledger's exact Garwood interval beside it); its repair hours are
  `lognormal_mean` of the time to restore of every closed repair with that action (the posterior
  of a lognormal's mean, wide for one or two repairs), or the MTTR model's when none is closed.
  The blast radius is the action's.
- A scenario class naming a part kind the ledger has no incident of is a ledger class too, with
  no failure over the fleet's GPU-days: a fleet that ran T GPU-days without one has evidence its
  rate is low, not the scenario's figure; the output flags it ("no incident in T GPU-days").
- The prior: the k kinds that failed share one Jeffreys' ½ (Gamma(½ / k) each), so that their
  total rate has Jeffreys' posterior Gamma(N + ½) over their N failures whatever k is — Jeffreys'
  ½ on each would add k / 2 failures to the total (2.5 for five kinds: a rate a third too high at
  8 failures). A kind with no failure gets Jeffreys' own ½: Gamma(½) over T GPU-days puts its
  MTBI's 5% end at T / 1.92, while a share of ½ (Gamma(0.1)) would price a rare, costly kind (a
  cable cartridge drains a rack for some 20 h) at almost nothing; the coverage of each choice:
  bench/tco_coverage.py --prior, docs/benchmarks.md.
- A scenario class the ledger cannot measure — given as blast radius and repair hours (software
  restarts), or naming only an action the ledger has no repair of — keeps the scenario's figure
  (its share of the scenario's MTBI, its repair), and the output flags it. Without a failure_mix,
  the scenario's one class stood for every interruption: the ledger's classes replace it.
The point figures are the ledger's measures (each kind's MTBI, each action's mean restore; for a
kind with no failure the posterior median).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opsctl.errors import InputError
from opsctl.ledger.fleet_stats import window_of
from opsctl.ledger.intervals import poisson_interval
from opsctl.ledger.repairs import restore_hours
from opsctl.ledger.timestamps import Moment, parse_time

from opsctl.tco import distributions
from opsctl.tco.spares import action_of
from opsctl.tco.uncertain import UncertainScenario

if TYPE_CHECKING:
    from opsctl.ledger.fleet_stats import ReliabilityInputs
    from opsctl.ledger.store import Ledger
    from opsctl.mttr import MttrModel
    from opsctl.tco.scenario import FailureClass, Scenario

_MIX = "reliability.failure_mix"


@dataclass(frozen=True)
class LedgerRepairs:
    """The window's repairs as the failure classes need them."""

    hours_by_action: dict[str, list[float]]  # action -> time to restore (hours) of each closed repair
    actions_by_kind: dict[str, Counter[str]]  # part kind -> the actions that repaired it (or an incident of it)


def ledger_repairs(ledger: Ledger, since: Moment | None = None, until: Moment | None = None,
                   racks: Iterable[str] = ()) -> LedgerRepairs:
    """Repairs opened in the window (fleet_stats measures time to restore over the same ones)."""
    window = window_of(since, until, racks)
    data = ledger.everything()
    incidents = {incident["key"]: incident for incident in data["incidents"]}
    hours: dict[str, list[float]] = {}
    actions: dict[str, Counter[str]] = {}
    for repair in data["repairs"]:
        if not (window.covers_rack(repair["rack"]) and window.covers(parse_time(repair["opened_at"]).timestamp())):
            continue
        incident = incidents.get(repair["incident_key"])
        # A triage may have suspected a connector where the tray was replaced: both kinds took this action.
        for kind in {repair["kind"], incident["kind"] if incident else repair["kind"]}:
            actions.setdefault(kind, Counter())[repair["action"]] += 1
        value = restore_hours(repair, incidents)
        if value is not None:
            hours.setdefault(repair["action"], []).append(value)
    return LedgerRepairs(hours, actions)


def with_measured_reliability(uncertain: UncertainScenario, measured: ReliabilityInputs, repairs: LedgerRepairs,
                              mttr_model: MttrModel, level: float = 0.9,
                              prior: float | None = None) -> tuple[UncertainScenario, list[dict[str, Any]]]:
    """(a new UncertainScenario with the ledger's failure classes, one line per class of its mix
    saying where its figures come from). `prior`: each kind's prior shape (default ½ / kinds;
    bench/tco_coverage.py --prior compares others)."""
    data = copy.deepcopy(uncertain.data)
    if not isinstance(data.get("reliability"), dict) or uncertain.point.reliability is None:
        raise InputError(f"{uncertain.source}: --from-ledger needs a reliability block (restart and checkpoint "
                         "times) for the ledger's MTBI and repair times to go into")
    block = data["reliability"]
    by_kind = dict(measured.detail.get("mtbi_by_kind") or {})
    scenario_classes = uncertain.point.reliability.failures
    measured_classes = [_measured_class(kind, rate, measured, repairs, mttr_model, uncertain.point)
                        for kind, rate in sorted(by_kind.items())]
    kinds = set(by_kind)
    actions = {_action_name(entry, mttr_model, uncertain.point) for entry, _ in measured_classes}
    exposure = _exposure(measured)
    confidence = measured.detail.get("confidence", 0.95)
    for given in scenario_classes:  # a part kind the scenario says fails and the ledger saw none of
        kind = given.part.partition("@")[0] if given.part else None
        if kind is None or not exposure or kind in kinds or _measured(given, kinds, actions, uncertain.point, mttr_model):
            continue
        low, high = poisson_interval(0, confidence)
        by_kind[kind] = {"failures": 0, "gpu_days": round(exposure, 1), "mtbi_gpu_days": None,
                         "interval": [round(exposure / high, 1), None]}
        measured_classes.append(_measured_class(kind, by_kind[kind], measured, repairs, mttr_model, uncertain.point,
                                                part=given.part))
        kinds.add(kind)
        actions.add(_action_name(measured_classes[-1][0], mttr_model, uncertain.point))
    if not measured_classes:  # nothing the ledger measured: every class as the scenario gave it
        return uncertain, [_kept(c, "the ledger has no incident in this window") for c in scenario_classes]
    seen = sum(1 for entry, _ in measured_classes if entry["mtbi_gpu_days"]["failures"])
    for entry, _ in measured_classes:  # the kinds seen share one Jeffreys ½; one not seen has its own ½
        own = distributions.JEFFREYS / max(seen, 1) if entry["mtbi_gpu_days"]["failures"] else distributions.JEFFREYS
        entry["mtbi_gpu_days"]["prior"] = prior or own
    sources = data.get("sources") if isinstance(data.get("sources"), dict) else {}
    mix = block.get("failure_mix") if isinstance(block.get("failure_mix"), list) else None
    kept = []  # (old index, raw entry, FailureClass)
    if mix is not None:
        for index, (raw, given) in enumerate(zip(mix, scenario_classes)):
            if not _measured(given, kinds, actions, uncertain.point, mttr_model):
                kept.append((index, raw, given))
    for key in ("blast_radius_gpus", "repair_hours"):  # without a failure_mix, the one class they described
        block.pop(key, None)
        sources.pop(f"reliability.{key}", None)
    block["failure_mix"] = [raw for _, raw, _ in kept] + [entry for entry, _ in measured_classes]
    sources = _renumbered(sources, {old: new for new, (old, _, _) in enumerate(kept)})
    published = sources.get(_MIX)
    sources[_MIX] = (f"per part kind: {measured.source}; the classes it has no incident for as the scenario gave them"
                     + (f" ({published})" if published else ""))
    for number, (entry, said) in enumerate(measured_classes, start=len(kept)):
        for key, text in said.items():
            sources[f"{_MIX}[{number}].{key}"] = text
    if all("mtbi_gpu_days" in entry for entry in block["failure_mix"]):  # no class left a share of it
        block.pop("mtbi_gpu_days", None)
        sources.pop("reliability.mtbi_gpu_days", None)
    data["sources"] = sources
    report = [_kept(given, "no incident of this part kind or repair action in the ledger" if given.blast_radius_gpus is None
                    else "not a part the ledger records (given as blast radius and repair hours)")
              for _, _, given in kept]
    report += [_report(entry, by_kind[entry["name"]], level) for entry, _ in measured_classes]
    return UncertainScenario(data, uncertain.source), report


def _measured_class(kind: str, rate: dict[str, Any], measured: ReliabilityInputs, repairs: LedgerRepairs,
                    mttr_model: MttrModel, scenario: Scenario,
                    part: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """(failure_mix entry, {key: source}) of one part kind: one the ledger has incidents of, or
    (`part`: the scenario's name for it) one it has none of over its exposure."""
    counts = repairs.actions_by_kind.get(kind)
    action = min(counts, key=lambda name: (-counts[name], name)) if counts else None  # the most frequent
    entry: dict[str, Any] = {"name": kind}
    if action is not None and action in mttr_model.actions:
        entry["action"] = action
    else:
        try:
            named, context = _split(part or kind)
            action = mttr_model.action_for(named, scenario.sku.domain.model, context).name
        except InputError:
            raise InputError(f"the ledger's {rate['failures']} incident(s) of kind {kind!r} have no repair recorded, "
                             f"and {mttr_model.source} has no repair action for that kind: record the repair (opsctl "
                             f"repair open PART --action ACTION), or add parts.{kind} in --mttr-config") from None
        entry["part"] = part or kind
    ledger = f"the opsctl ledger {measured.detail['ledger']}" if "ledger" in measured.detail else "the ledger"
    low, high = rate["interval"]
    confidence = measured.detail.get("confidence", 0.95)
    entry["mtbi_gpu_days"] = {"dist": "poisson_mtbi", "failures": rate["failures"], "gpu_days": rate["gpu_days"]}
    if rate["mtbi_gpu_days"] is not None:  # none failed: the posterior's median stands for it
        entry["mtbi_gpu_days"]["value"] = rate["mtbi_gpu_days"]
    said = {"mtbi_gpu_days": f"{ledger}: {rate['failures']} failure(s) of kind {kind} over {rate['gpu_days']:,.0f} "
                             f"GPU-days (exact {confidence:.0%} interval {_gpu_days(low)}–{_gpu_days(high)} GPU-days)"}
    samples = repairs.hours_by_action.get(action)
    if samples:
        mean = (measured.detail.get("mttr_by_action", {}).get(action) or {}).get("mean_hours")
        entry["repair_hours"] = {"dist": "lognormal_mean", "samples": list(samples),
                                 "value": mean if mean is not None else sum(samples) / len(samples)}
        said["repair_hours"] = (f"{ledger}: mean time to restore of {len(samples)} closed {action} repair(s) "
                                f"(posterior of a lognormal's mean; prior spread σ {distributions.PRIOR_SIGMA} "
                                f"worth {distributions.PRIOR_WEIGHT:g} repairs)")
    return entry, said


def _split(part: str) -> tuple[str, str | None]:
    """(kind, context or None) of a part name such as gpu@reset."""
    kind, _, context = part.partition("@")
    return kind, context or None


def _action_name(entry: dict[str, Any], mttr_model: MttrModel, scenario: Scenario) -> str:
    if "action" in entry:
        return entry["action"]
    kind, context = _split(entry["part"])
    return mttr_model.action_for(kind, scenario.sku.domain.model, context).name


def _exposure(measured: ReliabilityInputs) -> float:
    """The fleet's GPU-days in service over the window (the same for every part kind)."""
    overall = measured.detail.get("mtbi") or {}
    if overall.get("gpu_days"):
        return overall["gpu_days"]
    return max((rate["gpu_days"] for rate in (measured.detail.get("mtbi_by_kind") or {}).values()), default=0)


def _gpu_days(value: float | None) -> str:
    return "∞" if value is None else f"{value:,.0f}"


def _measured(given: FailureClass, kinds: set[str], actions: set[str], scenario: Scenario, mttr_model: MttrModel) -> bool:
    """Whether the ledger measured what a scenario class stands for: its part kind, or its repair
    action (the ledger's compute_tray failures are the scenario's `part: gpu` class on GB200,
    whose GPUs are replaced with their tray). A class given as blast radius and repair hours
    names no part: the ledger cannot have measured it."""
    if given.blast_radius_gpus is not None:
        return False
    if given.part is not None and given.part.partition("@")[0] in kinds:
        return True
    return action_of(given, scenario, mttr_model).name in actions


def _renumbered(sources: dict[str, str], moves: dict[int, int]) -> dict[str, str]:
    """The scenario's sources with each kept failure_mix class's keys at its new index, and those
    of the classes the ledger replaced dropped."""
    result = {}
    for key, text in sources.items():
        if key.startswith(f"{_MIX}["):
            index, _, rest = key[len(_MIX) + 1:].partition("]")
            if index.isdigit() and int(index) in moves:
                result[f"{_MIX}[{moves[int(index)]}]{rest}"] = text
            continue
        result[key] = text
    return result


def _kept(given: FailureClass, why: str) -> dict[str, Any]:
    return {"name": given.name, "from": "scenario", "why": why,
            **({"part": given.part} if given.part else {}), **({"action": given.action} if given.action else {})}


def _report(entry: dict[str, Any], rate: dict[str, Any], level: float) -> dict[str, Any]:
    """A measured class as the output shows it: its MTBI and repair hours, each with its interval."""
    mtbi = distributions.parse(entry["mtbi_gpu_days"], entry["name"])
    low, high = mtbi.ends(level)
    line: dict[str, Any] = {"name": entry["name"], "from": "ledger",
 **{k: entry[k] for k in ("part", "action") if k in entry},
            "failures": rate["failures"], "gpu_days": rate["gpu_days"], "mtbi_gpu_days": mtbi.point,
            "mtbi_interval": [round(low, 1), round(high, 1) if rate["failures"] else None],
            "mtbi_exact_interval": rate["interval"], "mtbi_prior": entry["mtbi_gpu_days"]["prior"]}
    if not rate["failures"]:
        line["why"] = (f"no incident of this kind in {rate['gpu_days']:,.0f} GPU-days: its rate's posterior for zero "
                       "failures over that exposure")
    if "repair_hours" in entry:
        repair = distributions.parse(entry["repair_hours"], entry["name"])
        line.update(repair_hours=repair.point, repair_hours_interval=[round(v, 2) for v in repair.ends(level)],
                    repairs_closed=len(entry["repair_hours"]["samples"]), repair_from="ledger")
    else:
        line.update(repair_hours=None, repair_from="MTTR model (no closed repair with this action in the ledger)")
    return line
