"""The XIDs the exporter knows by name: their alert tier and the runbook that handles them.

Every XID is counted, known or not, once a GPU logs it (exporters/xid_counts.py: no code is
published at 0; each GPU's total over all codes is). The alert rules in exporters/rules/xid.yml
group these codes by tier and runbook; a test checks that the rules and this table agree.

The table is NVIDIA's XID catalog (probes/references/xids.yaml, read by probes/xids.py), the
one the burn-in judge reads too: each XID's tier follows its immediate resolution bucket —
critical pages, warning needs a look, info is counted and never alerted.
"""

from __future__ import annotations

from dataclasses import dataclass

from probes.xids import rulings


@dataclass(frozen=True)
class Xid:
    code: int
    meaning: str
    tier: str  # critical | warning | info
    runbook: str  # file under runbooks/


def _load() -> dict[int, Xid]:
    return {code: Xid(code, ruling.meaning, ruling.alert, ruling.runbook) for code, ruling in rulings().items()}


XIDS = _load()
