"""Acceptance criteria: a versioned YAML file saying which probes run, for how long, and how
each GPU must compare with its rack (see opsctl/data/criteria/default.yaml).

The file is data, never code. What is loaded is recorded — name, version, sha256 of the very
bytes read — so a handover report says exactly which criteria judged the rack.
"""

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path

from opsctl.burnin.rack_relative import METRICS
from opsctl.errors import InputError
from opsctl.input_checks import MAX_SECONDS, number
from opsctl.yaml_input import parse_yaml, require_mapping

DEFAULT_CRITERIA = Path(__file__).resolve().parent.parent / "data" / "criteria" / "default.yaml"
PROBES = ("gemm", "membw", "nvlink", "hbm", "configuration", "counters", "collective")  # collective: the rack's NVLink domain as one job
VERDICTS = ("fail", "warn")
_TOP_KEYS = {"criteria", "version", "description", "probes", "duration_s", "run_timeout_s", "warnings_fail",
             "rack_relative"}
_RULE_KEYS = {"metric", "worse", "pct", "delta", "robust_sigmas", "verdict"}
# A margin wider than these compares nothing: a typo, refused rather than a rule switched off.
MAX_PCT = 1000.0
MAX_SIGMAS = 100.0


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
    probes: tuple
    duration_s: float
    run_timeout_s: float
    warnings_fail: bool
    min_gpus: int
    rules: tuple
    relative_source: str
    path: Path
    sha256: str

    def record(self):
        """What a report says about the criteria that judged the rack."""
        return {"name": self.name, "version": self.version, "sha256": self.sha256, "file": str(self.path),
                "probes": list(self.probes), "duration_s": self.duration_s, "warnings_fail": self.warnings_fail,
                "rack_relative": {"min_gpus": self.min_gpus, "rules": [asdict(rule) for rule in self.rules],
                                  "source": self.relative_source}}


def load_criteria(path=None):
    path = Path(path) if path else DEFAULT_CRITERIA
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such criteria file") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    data = require_mapping(parse_yaml(text, path), path)
    return _parse(data, path, hashlib.sha256(raw).hexdigest())


def _fail(path, message):
    raise InputError(f"{path}: {message}")


def _number(data, key, path, minimum=0.0, default=None, maximum=None):
    # Finite (`pct: .nan` would pass every comparison and switch the rule off) and in range.
    return float(number(data.get(key, default), f"{path}: {key}", minimum, maximum, min_open=True))


def _text(data, key, path):
    value = data.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) != float("inf"):
        value = str(value)  # version: 1.0 (but never nan or inf)
    if not isinstance(value, str) or not value.strip():
        _fail(path, f"{key} must be given as text (e.g. {key}: \"1.0\")")
    return value.strip()


def _parse(data, path, sha256):
    unknown = set(data) - _TOP_KEYS
    if unknown:
        _fail(path, f"unknown key(s) {', '.join(sorted(map(str, unknown)))} (known: {', '.join(sorted(_TOP_KEYS))})")
    probes = data.get("probes", list(PROBES))
    if not isinstance(probes, list) or not probes or any(p not in PROBES for p in probes):
        _fail(path, f"probes must be a list drawn from {', '.join(PROBES)}, got {probes!r}")
    duration = _number(data, "duration_s", path, maximum=MAX_SECONDS)
    timeout = _number(data, "run_timeout_s", path, default=max(2 * duration, duration + 300), maximum=2 * MAX_SECONDS)
    if timeout <= duration:
        _fail(path, f"run_timeout_s ({timeout:g}) must be longer than duration_s ({duration:g})")
    warnings_fail = data.get("warnings_fail", False)
    if not isinstance(warnings_fail, bool):
        _fail(path, f"warnings_fail must be true or false, got {warnings_fail!r}")
    relative = data.get("rack_relative") or {}
    if not isinstance(relative, dict):
        _fail(path, "rack_relative must be a mapping")
    unknown = set(relative) - {"min_gpus", "rules", "source"}
    if unknown:
        _fail(path, f"rack_relative: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    min_gpus = relative.get("min_gpus", 4)
    if isinstance(min_gpus, bool) or not isinstance(min_gpus, int) or min_gpus < 3:
        _fail(path, f"rack_relative.min_gpus must be a whole number of at least 3, got {min_gpus!r}")
    rules = relative.get("rules") or []
    if not isinstance(rules, list):
        _fail(path, "rack_relative.rules must be a list")
    return Criteria(
        name=_text(data, "criteria", path), version=_text(data, "version", path),
        description=str(data.get("description") or "").strip(), probes=tuple(probes), duration_s=duration,
        run_timeout_s=timeout, warnings_fail=warnings_fail, min_gpus=min_gpus,
        rules=tuple(_rule(rule, index, path) for index, rule in enumerate(rules)),
        relative_source=" ".join(str(relative.get("source") or "opsctl rack-relative rule").split()),
        path=path, sha256=sha256,
    )


def _rule(rule, index, path):
    where = f"rack_relative.rules[{index}]"
    if not isinstance(rule, dict):
        _fail(path, f"{where} must be a mapping")
    unknown = set(rule) - _RULE_KEYS
    if unknown:
        _fail(path, f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    metric = rule.get("metric")
    if not isinstance(metric, str) or metric not in METRICS:
        _fail(path, f"{where}: metric must be one of {', '.join(METRICS)}, got {metric!r}")
    worse = rule.get("worse")
    if worse not in ("lower", "higher"):
        _fail(path, f"{where}: worse must be lower or higher, got {worse!r}")
    if ("pct" in rule) == ("delta" in rule):
        _fail(path, f"{where}: give exactly one of pct (percent of the median) or delta (in {METRICS[metric].unit})")
    margin_key = "pct" if "pct" in rule else "delta"
    margin = _number(rule, margin_key, f"{path}: {where}", maximum=MAX_PCT if margin_key == "pct" else None)
    verdict = rule.get("verdict", "fail")
    if verdict not in VERDICTS:
        _fail(path, f"{where}: verdict must be fail or warn, got {verdict!r}")
    return RelativeRule(
        metric=metric, worse=worse, pct=margin if margin_key == "pct" else None,
        delta=margin if margin_key == "delta" else None,
        robust_sigmas=_number(rule, "robust_sigmas", f"{path}: {where}", default=6, maximum=MAX_SIGMAS), verdict=verdict,
    )
