"""The verdicts a run gives its checks and parts, and which is worst.

The rack's judge (opsctl/burnin/) gives them and the reports draw them from the summary; both
read the order here, so a report colours a part by the same rule the judge used.
"""

from __future__ import annotations

from collections.abc import Iterable

VERDICTS = ("pass", "warn", "fail", "incomplete")
# The rack's verdict, worst last: fail over incomplete. A rack with a known failure fails whatever
# else is missing — its failing parts are already named and repairable — while a tray's own
# status puts incomplete first (probes/tray_judge.py TRAY_STATUS_ORDER), because a tray that did not
# finish cannot vouch for what it did see.
SEVERITY = {"pass": 0, "warn": 1, "incomplete": 2, "fail": 3}


def worst(verdicts: Iterable[str], default: str = "pass") -> str:
    """The worst of some verdicts: fail, then incomplete, then warn, then pass."""
    verdicts = list(verdicts)
    return max(verdicts, key=SEVERITY.__getitem__) if verdicts else default
