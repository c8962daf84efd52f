"""Acceptance criteria: a versioned YAML file saying which probes run, for how long, and how
each GPU must compare with its rack (see opsctl/data/criteria/default.yaml).

The file is data, never code. What is loaded is recorded — name, version, sha256 of the very
bytes read — so a handover report says exactly which criteria judged the rack.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from opsctl.burnin.rack_relative import METRICS
from opsctl.errors import InputError
from opsctl.regular_files import read_regular_bytes
from opsctl.yaml_input import MAX_WRITTEN_BYTES, parse_yaml

DEFAULT_CRITERIA = Path(__file__).resolve().parent.parent / "data" / "criteria" / "default.yaml"
PROBES = ("gemm", "membw", "nvlink", "pulse", "hbm", "configuration", "counters", "collective")  # collective: the rack's NVLink domain as one job


@dataclass(frozen=True)
class RelativeRule:
    metric: str
    worse: str  # lower | higher
    pct: float | None
    delta: float | None
    robust_sigmas: float
    verdict: str  # fail | warn


@dataclass(frozen=True)
class Criteria:
    name: str
    version: str
    description: str
    probes: tuple[str, ...]
    duration_s: float
    run_timeout_s: float
    warnings_fail: bool
    min_gpus: int
    rules: tuple[RelativeRule, ...]
    relative_source: str
    path: Path
    sha256: str
    optional_probes: tuple[str, ...] = ()  # the run goes on without them where a tray cannot run them

    def record(self) -> dict[str, Any]:
        """What a report says about the criteria that judged the rack."""
        return {"name": self.name, "version": self.version, "sha256": self.sha256, "file": str(self.path),
                "probes": list(self.probes), "optional_probes": list(self.optional_probes), "duration_s": self.duration_s, "warnings_fail": self.warnings_fail,
                "rack_relative": {"min_gpus": self.min_gpus, "rules": [asdict(rule) for rule in self.rules],
                                  "source": self.relative_source}}


def load_criteria(path: str | Path | None = None) -> Criteria:
    path = Path(path) if path else DEFAULT_CRITERIA
    if not os.path.lexists(path):
        raise InputError(f"{path}: no such criteria file")
    raw = read_regular_bytes(path, MAX_WRITTEN_BYTES)  # a FIFO or /dev/zero: refused in one line
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    return _parse(parse_yaml(text, path), path, hashlib.sha256(raw).hexdigest())


def _parse(data: object, path: Path, sha256: str) -> Criteria:
    """The criteria of a parsed file: its schema (criteria_schema.py), then the rules between keys."""
    from opsctl.acceptance.criteria_schema import CriteriaFile
    from opsctl.input_schema import convert

    document = convert(data, CriteriaFile, path)
    duration = document.duration_s
    timeout = document.run_timeout_s if isinstance(document.run_timeout_s, float) else max(2 * duration, duration + 300)
    if timeout <= duration:
        raise InputError(f"{path}: run_timeout_s ({timeout:g}) must be longer than duration_s ({duration:g})")
    relative = document.rack_relative
    rules = relative.rules if relative is not None and relative.rules else []
    return Criteria(
        name=document.criteria.strip(), version=str(document.version).strip(),
        description=(document.description or "").strip(),
        probes=tuple(document.probes) if isinstance(document.probes, list) else PROBES, duration_s=duration,
        run_timeout_s=timeout, warnings_fail=document.warnings_fail, min_gpus=relative.min_gpus if relative else 4,
        rules=tuple(_rule(rule, index, path) for index, rule in enumerate(rules)),
        relative_source=" ".join(((relative and relative.source) or "opsctl rack-relative rule").split()),
        path=path, sha256=sha256, optional_probes=tuple(dict.fromkeys(document.optional_probes)),
    )


def _rule(rule: Any, index: int, path: Path) -> RelativeRule:
    """One rack-relative rule (a criteria_schema.Rule), with exactly one margin."""
    pct = rule.pct if isinstance(rule.pct, float) else None
    delta = rule.delta if isinstance(rule.delta, float) else None
    if (pct is None) == (delta is None):
        raise InputError(f"{path}: rack_relative.rules[{index}]: give exactly one of pct (percent of the median) "
                         f"or delta (in {METRICS[rule.metric].unit})")
    return RelativeRule(metric=rule.metric, worse=rule.worse, pct=pct, delta=delta, robust_sigmas=rule.robust_sigmas,
                        verdict=rule.verdict)
