"""What one snapshot says about each link and each GPU, as likelihood ratios.

Links. Each observed link is judged by the rulebook (probes/references/rules.yaml: DCGM's
health rules per NVLink generation) exactly as the tray probe judges it: fail when a counter
breaks a fail rule (on NVLink 5 any recovery in the window, successful or not, as DCGM 4.6's
MonitorNVLink5Fields fails it), the link was down, its effective BER is above the limit or its
symbol BER worse than DCGM's floor; warn when it breaks only a warn rule; pass otherwise. The localizer's decision point for a link is therefore the
rulebook's limit, not a model of its own: 99 CRC errors a second is a pass and 100 a fail, as
in DCGM. log r = log P(verdict | link bad) − log P(verdict | link healthy) (VERDICT_LIKELIHOODS);
each end read is a judgment of its own and their log ratios add. A link nobody read has r = 1
(log 0): missing is neither healthy nor faulty.

GPUs. The log ratio of a GPU's own symptoms (XIDs whose catalog bucket fails a GPU, lost) under
"GPU faulty" vs "healthy"; and the NVLink XIDs it logged, which point at the parts on its
own links. NVIDIA documents no XID that one failing link makes other GPUs log, so none is
read as an echo of another GPU's fault.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from probes import xids as xid_catalog
from probes.nvlink_ber import symbol_ber_exceeded
from probes.sku_references import load_references

if TYPE_CHECKING:
    from opsctl.localize.snapshot import SideReadings

# Link counters of the snapshot, in the column order of the arrays below: the snapshot format's five and
# the NVLink 5 counters (the reading's names; link_down_events is NVLink 5's failed recovery).
COUNTERS = ("crc_errors", "replay_errors", "recovery_errors", "symbol_errors", "link_down_events",
            "rcv_errors", "malformed_packet_errors", "buffer_overrun_errors", "local_link_integrity_errors",
            "effective_errors", "recovery_successful", "rcv_remote_errors", "rcv_general_errors", "recovery_events")
RULE_COUNTER = {"link_down_events": "recovery_failed"}  # snapshot name -> the rulebook's counter
LOG_R_MIN, LOG_R_MAX = -30.0, 600.0  # beyond these a link is as certain as it gets; keeps exp() finite
PASS, WARN, FAIL, UNREAD = 0, 1, 2, -1
VERDICT_CODES = {"pass": PASS, "warn": WARN, "fail": FAIL}


@dataclass(frozen=True)
class CounterRule:
    column: int
    per_second: bool
    op: str
    threshold: float
    verdict: int
    source: str


@lru_cache(maxsize=1)
def link_rules() -> tuple[tuple[CounterRule, ...], dict[str, Any], dict[str, Any]]:
    """(counter rules by snapshot column, effective-BER rule, symbol-BER rule) from the rulebook."""
    rules = load_references().rules
    by_counter = {rule["counter"]: rule for rule in rules["link_counters"]}
    found = []
    for column, name in enumerate(COUNTERS):
        rule = by_counter.get(RULE_COUNTER.get(name, name))
        if rule is not None:
            found.append(CounterRule(column, bool(rule.get("per_second")), rule["op"], float(rule["threshold"]),
                                     VERDICT_CODES[rule["verdict"]], rule["source"]))
    return tuple(found), rules["effective_ber"], rules["symbol_ber"]


_OPS = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal}


def side_verdicts(counts: np.ndarray, state: np.ndarray, ber: np.ndarray, window_s: float,
                  symbol_ber_raw: np.ndarray | None = None) -> np.ndarray:
    """Per-link verdict codes from one end's readings, by the rulebook.

    counts: (links × COUNTERS) float array, NaN where not read; state: int8 array, 1 down,
    0 up, −1 not read; ber: float array, NaN where not read; symbol_ber_raw: the symbol BER as
    NVML packs it, NaN where not read (None: read nowhere). UNREAD where nothing was read."""
    counter_rules, ber_rule, symbol_rule = link_rules()
    symbol_read = np.zeros(counts.shape[0], dtype=bool) if symbol_ber_raw is None else ~np.isnan(symbol_ber_raw)
    verdict = np.full(counts.shape[0], UNREAD, dtype=np.int8)
    read = (state >= 0) | ~np.isnan(ber) | symbol_read | np.any(~np.isnan(counts), axis=1)
    verdict[read] = PASS
    for rule in counter_rules:
        values = counts[:, rule.column]
        if rule.per_second:
            values = values / window_s if window_s > 0 else np.full_like(values, np.nan)
        with np.errstate(invalid="ignore"):
            broken = _OPS[rule.op](values, rule.threshold) & ~np.isnan(values)
        verdict[broken] = np.maximum(verdict[broken], rule.verdict)
    verdict[state == 1] = FAIL
    with np.errstate(invalid="ignore"):
        verdict[_OPS[ber_rule["op"]](ber, float(ber_rule["threshold"])) & ~np.isnan(ber)] = FAIL
    if symbol_ber_raw is not None:
        raw = np.where(symbol_read, symbol_ber_raw, 0).astype(np.int64)  # 0: a mantissa of 0, never worse than the floor
        verdict[symbol_ber_exceeded(raw, symbol_rule["floor_exponent"], symbol_rule["floor_mantissa"])] = FAIL
    return verdict


def link_log_ratios(sides: dict[str, SideReadings], window_s: float) -> np.ndarray:
    """Per-link log r: each end's verdict is a reading of its own (the GPU's and the switch's
    counters are separate), so their log ratios add, as the counters' own evidence would."""
    total: np.ndarray | None = None
    for readings in sides.values():
        codes = side_verdicts(readings.counts, readings.state, readings.ber, window_s, readings.symbol_ber_raw)
        log_r = verdict_codes_log_ratio(codes)
        total = log_r if total is None else total + log_r
    assert total is not None  # a snapshot's observation holds both ends, read or not
    return total


# --- link verdicts -------------------------------------------------------------------------
# P(verdict | link bad), P(verdict | link healthy): how well a judge built on DCGM's rules tells them apart.
VERDICT_LIKELIHOODS = {"fail": (0.95, 1e-5), "warn": (0.3, 0.01), "pass": (0.05, 1.0 - 1e-5 - 0.01)}
SOURCE = ("opsctl localizer: each link judged by the rulebook (DCGM's health rules, probes/references/rules.yaml); "
          "a judge on those rules is taken to miss 5% of bad links and fail 1 healthy link in 100,000 (opsctl's estimate)")


def verdict_log_ratio(verdict: str) -> float:
    """log r for a judged link; 0 (no evidence) for incomplete or unknown verdicts."""
    likelihoods = VERDICT_LIKELIHOODS.get(verdict)
    return 0.0 if likelihoods is None else float(np.log(likelihoods[0] / likelihoods[1]))


_LOG_R_BY_CODE = {UNREAD: 0.0, PASS: verdict_log_ratio("pass"), WARN: verdict_log_ratio("warn"), FAIL: verdict_log_ratio("fail")}


def verdict_codes_log_ratio(codes: np.ndarray) -> np.ndarray:
    """log r per link from verdict codes (UNREAD, PASS, WARN, FAIL)."""
    table = np.array([_LOG_R_BY_CODE[UNREAD], _LOG_R_BY_CODE[PASS], _LOG_R_BY_CODE[WARN], _LOG_R_BY_CODE[FAIL]])
    return table[codes.astype(np.int64) + 1]


# --- XIDs -------------------------------------------------------------------------------------
# The XIDs of NVIDIA's NVLink workflows: the GPU that logs one has a problem on its own links.
NVLINK_XIDS = xid_catalog.nvlink_xids()
# An NVLink XID on a GPU: P(logged | a part on the GPU's links is faulty), P(logged | not).
NVLINK_XID = (0.5, 1e-3)


@dataclass(frozen=True)
class GpuXid:
    """An XID that says the GPU itself is faulty: how strongly, and the repair it calls for."""

    name: str
    p_faulty: float  # P(logged in the window | GPU faulty)
    p_healthy: float  # P(logged in the window | GPU healthy)
    repair: str  # the repair context in opsctl/data/mttr.yaml: reset (reset the GPU), reboot (the machine) or rma

    @property
    def log_ratio(self) -> float:
        return float(np.log(self.p_faulty / self.p_healthy))


# Immediate buckets whose first repair is the GPU's own reset (or the machine's reboot: RESTART_BM);
# the catalog's others that fail a GPU (CONTACT_SUPPORT, CHECK_MECHANICALS) go to support: an RMA.
RESET_BUCKETS = ("RESET_GPU", "RESTART_VM", "WORKFLOW_XID_48", "UPDATE_SWFW")
REBOOT_BUCKETS = ("RESTART_BM",)


def first_repair(bucket: str | None) -> str:
    """The repair context (opsctl/data/mttr.yaml gpu@<context>) of an immediate bucket. A code
    without one (not in the catalog, or listed without a bucket) is reset first, as its xid
    check says (opsctl's rule): no part is replaced on an XID NVIDIA gives no action for."""
    if bucket is None:
        return "reset"
    return "reboot" if bucket in REBOOT_BUCKETS else "reset" if bucket in RESET_BUCKETS else "rma"


def _gpu_xids() -> dict[int, GpuXid]:
    """Every catalog XID whose immediate bucket fails a GPU, but for NVLink ones (their links'
    evidence): P(logged | faulty) 0.2 and P(logged | healthy) 1e-5 are opsctl's estimates."""
    found: dict[int, GpuXid] = {}
    for code, ruling in xid_catalog.rulings().items():
        if ruling.verdict == "fail" and code not in NVLINK_XIDS:
            found[code] = GpuXid(ruling.meaning, 0.2, 1e-5, first_repair(ruling.bucket))
    return found


GPU_XIDS = _gpu_xids()
# An XID the catalog does not list fails its GPU in the judge; here it is the GPU's own evidence.
UNLISTED_XID = GpuXid("no row in NVIDIA's XID catalog", 0.2, 1e-5, first_repair(None))


def gpu_xid(code: int) -> GpuXid | None:
    """The GpuXid of a code, UNLISTED_XID for one the catalog lacks, None for one that does not
    fail a GPU (an application fault, an NVLink XID)."""
    if code in GPU_XIDS:
        return GPU_XIDS[code]
    return None if code in xid_catalog.catalog()["xids"] else UNLISTED_XID
# A GPU that did not answer while the rest of its tray did: P(| faulty), P(| healthy).
GPU_LOST = (0.3, 1e-5)
XID_SOURCE = "NVIDIA Xid Catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html); likelihoods are opsctl's estimates"


def recorded_gpu_xids(codes: Iterable[int]) -> list[int]:
    """Of the XIDs a GPU logged before the window (since its driver loaded), those the localizer
    weighs: the GPU's own. An NVLink XID from before the window has none of the window's link
    readings to point at its link, and as evidence it would pull in any part that touches the
    GPU's other links (a switch-tray connector with one bad link of 40); it stays the GPU's
    xid.recorded check, whose repair is the catalog's first step."""
    return [code for code in codes if code not in NVLINK_XIDS]


def nvlink_xid_gpus(gpu_xids: dict[int, list[tuple[int, float | None]]]) -> set[int]:
    """The GPUs that logged an NVLink XID: gpu_xids is {gpu index: [(xid, time or None), ...]}."""
    return {gpu for gpu, events in gpu_xids.items() if any(xid in NVLINK_XIDS for xid, _ in events)}


def gpu_log_ratio(xid_codes: Iterable[int], lost: bool) -> float:
    """log ratio of a GPU's own symptoms (distinct XID codes, lost) under faulty vs healthy.

    Each code counts once: repeats of one XID are one fault talking, not more evidence."""
    total = 0.0
    for code in set(xid_codes):
        known = gpu_xid(code)
        if known is not None:
            total += known.log_ratio
    if lost:
        total += float(np.log(GPU_LOST[0] / GPU_LOST[1]))
    return total


def nvlink_xid_log_ratio() -> float:
    return float(np.log(NVLINK_XID[0] / NVLINK_XID[1]))
