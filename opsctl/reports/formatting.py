"""How every report writes a check's reading and threshold, and picks what to show."""

from __future__ import annotations

from typing import Any


def number(value: object) -> str:
    """1398.17 → '1398', 179.990772 → '180.0', 3.000084e-11 → '3e-11', lists joined."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
            return f"{value:.2g}"
        return f"{value:.1f}" if abs(value) < 1000 else f"{value:.0f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def reading(check: dict[str, Any]) -> str:
    return f"{number(check['value'])} {check['unit']}".strip()


def fails_when(check: dict[str, Any]) -> str:
    return "" if check["threshold"] is None else f"{check['op']} {number(check['threshold'])}"


def shown_checks(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The checks a report lists: failures (warnings too, when the criteria fail on them) and
    what could not be judged; worst first, then by component."""
    bad = {"fail", "warn"} if summary["criteria"].get("warnings_fail") else {"fail"}
    shown = [c for c in summary["checks"] if c["verdict"] in bad or c["verdict"] == "incomplete"]
    order = {"fail": 0, "incomplete": 1, "warn": 2}
    return sorted(shown, key=lambda c: (order[c["verdict"]], c["component"], c["check"]))


def primary_suspects(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts the localizer names as faults (its runners-up left out)."""
    return [s for s in summary.get("suspects") or [] if not s.get("alternative_to")]
