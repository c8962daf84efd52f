"""NVIDIA's XID catalog (probes/references/xids.yaml) and what opsctl does with each XID.

The catalog gives, per XID, NVIDIA's immediate and investigatory resolution buckets; the file's
`buckets` table says how opsctl acts on each immediate bucket (verdict, alert tier, action).
An XID the catalog does not list, or lists without a bucket, is `unlisted`: it fails, never
passes. XIDs 144-150 (NVLink 5 units) are decided by the unit and errorStatus of the kernel
log line (the catalog's "XID 144-150 Decode" sheet); without them, by the code's most severe
row. probes/kernel_log.py reads those lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from probes.shipped_yaml import load_shipped_yaml

CATALOG_FILE = Path(__file__).parent / "references" / "xids.yaml"
VERDICT_ORDER = ("pass", "warn", "fail")


@dataclass(frozen=True)
class XidRuling:
    """What one logged XID means and what to do about it."""

    code: int
    mnemonic: str | None
    meaning: str
    bucket: str | None  # NVIDIA's immediate resolution bucket; None when the catalog gives none
    investigatory: str | None
    verdict: str  # warn | fail
    alert: str  # critical | warning | info
    action: str
    runbook: str
    listed: bool
    decoded: str | None = None  # the decode sheet's row, when a 144-150 kernel log line decided it
    source: str = ""


@lru_cache(maxsize=1)
def catalog() -> dict[str, Any]:
    return load_shipped_yaml(CATALOG_FILE)


def nvlink5_rows(code: int) -> list[dict[str, Any]]:
    """The decode rows of an NVLink 5 unit XID (144-150); empty for any other code."""
    return [row for row in catalog()["nvlink5_decode"] if row["xid"] == code]


def _most_severe(rows: list[dict[str, Any]]) -> dict[str, Any]:
    buckets = catalog()["buckets"]
    return max(rows, key=lambda row: VERDICT_ORDER.index(buckets.get(row["immediate"], catalog()["unlisted"])["verdict"]))


R575 = 575  # the driver branch from which the decode sheet's v2 intrInfo masks apply


def _mask_matches(mask: str, value: int) -> bool:
    """Does the 32-bit `value` fit the sheet's mask ("1", "0", "-" per bit, bit 31 first)?"""
    bits = format(value & 0xFFFFFFFF, "032b")
    return len(mask) == 32 and all(m in ("-", b) for m, b in zip(mask, bits))


def _status_matches(listed: object, status: int) -> bool:
    if listed is None:
        return True  # the sheet leaves errorStatus blank for the row: any
    for text in str(listed).split("/"):
        try:
            if int(text.strip(), 16) == status:
                return True
        except ValueError:
            continue
    return False


def decode(code: int, intr_info: int, error_status: int, driver_major: int | None = None) -> dict[str, Any] | None:
    """The decode row of an NVLink 5 unit XID (144-150) for the registers of its kernel log
    line, or None when no row fits. The sheet has two intrInfo layouts (before R575 and from
    R575); the layout of the driver's branch is tried first, then the other: a kernel log keeps
    lines an earlier driver wrote, and drivers of one branch are seen writing the other's layout
    (docs/sources.md). The two layouts place the unit in different bits, so no line fits both."""
    versions = ["intrinfo_v2", "intrinfo_v1"]
    if driver_major is not None and driver_major < R575:
        versions.reverse()
    for version in versions:
        for row in nvlink5_rows(code):
            if _mask_matches(row[version], intr_info) and _status_matches(row["error_status"], error_status):
                return row
    return None


def _layout(row: dict[str, Any], intr_info: int) -> str:
    """Which of the decode sheet's intrInfo layouts the register fits, in words."""
    fits = [name for version, name in (("intrinfo_v1", "pre-R575 layout"), ("intrinfo_v2", "R575+ layout"))
            if _mask_matches(row[version], intr_info)]
    return "either layout" if len(fits) == 2 else fits[0]


def rule(code: int, intr_info: int | None = None, error_status: int | None = None,
         driver_major: int | None = None) -> XidRuling:
    """The ruling for XID `code`; for an NVLink 5 unit XID the intrInfo and errorStatus of its
    kernel log line (and the driver's branch) pick the decode sheet's row."""
    data = catalog()
    entry = data["xids"].get(code)
    runbook = data["runbooks"].get(code, data["default_runbook"])
    source = data["source"]
    if entry is None:
        unlisted = data["unlisted"]
        listed = sorted(data["xids"])
        return XidRuling(code, None, f"no row in NVIDIA's XID catalog (it lists XIDs {listed[0]}-{listed[-1]})", None, None,
                         unlisted["verdict"], unlisted["alert"], unlisted["action"], runbook, listed=False, source=source)
    bucket, investigatory, decoded = entry["immediate"], entry["investigatory"], None
    rows = nvlink5_rows(code)
    if rows:
        row = decode(code, intr_info, error_status, driver_major) if intr_info is not None and error_status is not None else None
        if row is not None and intr_info is not None:
            decoded = (f"unit {row['unit']}, intrInfo {intr_info:#010x} ({_layout(row, intr_info)}), "
                       f"errorStatus {error_status:#010x}: {row['severity']}")
        else:
            row = _most_severe(rows)
        bucket, investigatory = row["immediate"], row["investigatory"]
    how = data["buckets"].get(bucket) or data["unlisted"]
    action = how["action"]
    if bucket not in data["buckets"]:
        action = f"the catalog lists this XID without a resolution bucket: {action}"
    if rows and decoded is None:
        action = (f"{action}; without a decodable kernel log line the catalog's most severe row for XID {code} applies "
                  f"({bucket}): read the NVRM Xid line on the tray to decode it")
    if investigatory:
        action += f"; then {investigatory}"
    return XidRuling(code, entry["mnemonic"], entry["description"], bucket, investigatory, how["verdict"], how["alert"],
                     action, runbook, listed=bucket in data["buckets"], decoded=decoded, source=source)


NVLINK_BUCKETS = ("WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR")


@lru_cache(maxsize=1)
def nvlink_xids() -> frozenset[int]:
    """The XIDs of NVIDIA's NVLink workflows (catalog buckets WORKFLOW_NVLINK_ERR and
    WORKFLOW_NVLINK5_ERR): the GPU that logs one has a problem on its own NVLink links."""
    return frozenset(code for code, entry in catalog()["xids"].items() if entry["immediate"] in NVLINK_BUCKETS)


def rulings() -> dict[int, XidRuling]:
    """{code: XidRuling} for every XID of the catalog (without sub-codes)."""
    return {code: rule(code) for code in catalog()["xids"]}
