"""Every tray of a rack in one configuration: the same driver, VBIOS and InfoROM image, ECC,
persistence and MIG mode, power limit and application clocks on every GPU of a model (each
GPU's `configuration` section of its tray's probe document).

Judged across the rack, since no tray sees the others: for each setting, what most GPUs of the
model report is what the others should; a GPU that differs fails `rack.configuration`, with
what it has and what it should have. The switch trays' firmware likewise: opsctl/burnin/switch_firmware.py.
"""

from __future__ import annotations

from typing import Any

from collections import Counter

from opsctl.burnin.checks import Check
from opsctl.burnin.rack_evidence import RackEvidence, RackFindings
from probes.sku_references import load_references


def rack_checks(evidence: RackEvidence) -> RackFindings:
    return RackFindings(configuration_checks(evidence.gpus))


def configuration_checks(gpu_readings: dict[str, dict[str, Any]]) -> list[Check]:
    """gpu_readings: {GPU id: its run-document entry}. One check per GPU that reported its configuration."""
    rule = load_references().rules["configuration_rack"]
    by_model: dict[str, dict[str, dict[str, Any]]] = {}
    for gpu_id, reading in gpu_readings.items():
        config = reading.get("configuration")
        if isinstance(config, dict) and not reading.get("lost"):
            by_model.setdefault(str(reading.get("name")), {})[gpu_id] = config
    checks: list[Check] = []
    for model, configs in sorted(by_model.items()):
        if len(configs) < 2:
            continue  # one GPU of its model: nothing to compare it with
        usual: dict[str, tuple[Any, int, int]] = {}
        undecided: list[str] = []
        for key in rule["keys"]:
            seen = Counter(_key(config.get(key)) for config in configs.values() if config.get(key) is not None)
            if seen:
                (value, count), = seen.most_common(1)
                if count * 2 > sum(seen.values()):  # no majority: no telling which is right
                    usual[key] = (value, count, sum(seen.values()))
                else:
                    undecided.append(f"{key} ({', '.join(f'{v}: {n}' for v, n in seen.most_common())})")
        for gpu_id, config in sorted(configs.items()):
            odd = {key: config.get(key) for key, (value, _, _) in usual.items()
                   if config.get(key) is not None and _key(config.get(key)) != value}
            should = {key: usual[key][0] for key in odd}
            reason = ("; ".join(f"{key} {odd[key]} where {usual[key][1]} of {usual[key][2]} {model} GPUs of the rack have "
                                f"{usual[key][0]}: set it to {usual[key][0]}" for key in odd) if odd
                      else f"{len(usual)} settings as the rack's other {model} GPUs")
            verdict = "fail" if odd else "incomplete" if undecided else "pass"
            if undecided and not odd:
                reason = f"no setting most {model} GPUs of the rack share for {'; '.join(undecided)}"
            checks.append(Check("rack.configuration", gpu_id, verdict, odd or {}, should or
                                {key: value for key, (value, _, _) in usual.items()}, "settings", "!=", rule["source"], reason))
    return checks


def _key(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) else str(value)
