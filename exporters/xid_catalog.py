"""The XIDs the exporter knows by name: their alert tier and the runbook that handles them.

Every XID is counted, known or not. The known ones are also published at 0 from the start, so
that the first event of a code is an increase Prometheus can see (a series that is born at 1
shows no `increase()`). The alert rules in exporters/rules/xid.yml group these codes by tier and
runbook; a test checks that the rules and this table agree.

The table is probes/references/xids.yaml, the catalog the burn-in judge reads too (meanings
and actions from NVIDIA's resolution buckets, shared/reference/NVML_AND_XID.md); its `alert`
key is the tier: critical pages, warning needs a look, info is counted and never alerted.
"""

from dataclasses import dataclass

from probes.judge import xid_catalog


@dataclass(frozen=True)
class Xid:
    code: int
    meaning: str
    tier: str  # critical | warning | info
    runbook: str  # file under runbooks/


def _load():
    return {code: Xid(code, entry["meaning"], entry["alert"], entry["runbook"]) for code, entry in xid_catalog().items()}


XIDS = _load()
