"""What one snapshot says about each link and each GPU, as likelihood ratios.

For every observed link, log r = log P(reading | link bad) − log P(reading | link healthy);
for every GPU, the log ratio of its own symptoms (XIDs, lost) under "GPU faulty" vs "healthy".
A link nobody read has r = 1 (log 0): missing is neither healthy nor faulty.

Counters. Over a window of T seconds a counter with rate λ counts Poisson(λT). Links differ
(some healthy links are noisier than others), so λ itself is drawn from a Gamma prior, one for
healthy links and one for faulty ones, which makes the count negative-binomial. With the same
shape α in both states the ratio has a closed form and no lgamma:

    log NB_bad(k) − log NB_healthy(k) = k·[log(x_b/(1+x_b)) − log(x_h/(1+x_h))] − α·[log1p(x_b) − log1p(x_h)]

where x = (mean rate / α)·T. A faulty link shows some of its symptoms, not all (a link that
drops need not count CRC errors), so under "bad" each counter follows the faulty rate with
probability `shows` and the healthy rate otherwise: r_c = (1 − shows) + shows·NB ratio.
Counters are independent given the link's state, so their log ratios add; readings from the
switch end of the same link add too.

The numbers below are opsctl's model; the healthy/faulty boundaries sit where DCGM's health
rules put them (NVML_AND_XID.md: any replay or recovery fails a link, CRC fails at ≥ 100/s,
symbol errors after FEC should not appear, BER above 1e-12 fails).
"""

from dataclasses import dataclass

import numpy as np

# Link counters of CONTRACT's snapshot, in the column order of the arrays below.
COUNTERS = ("crc_errors", "replay_errors", "recovery_errors", "symbol_errors", "link_down_events")
LOG_R_MIN, LOG_R_MAX = -30.0, 600.0  # beyond these a link is as certain as it gets; keeps exp() finite


@dataclass(frozen=True)
class CounterModel:
    healthy_per_s: float  # mean rate on a healthy link
    faulty_per_s: float  # mean rate on a link that shows this symptom
    shows: float  # P(a faulty link shows this symptom at the faulty rate)
    shape: float  # Gamma shape α: how much links differ from each other (small: a lot)
    source: str


COUNTER_MODELS = {
    "crc_errors": CounterModel(10.0, 3000.0, 0.7, 0.5,
                               "DCGM health rule: CRC fails at ≥ 100/s (NVML_AND_XID.md), so tens a second are in spec; "
                               "healthy and faulty rates cross near 60/s"),
    "replay_errors": CounterModel(1e-4, 1.0, 0.5, 0.5,
                                  "DCGM health rule: any replay fails a link; a stray replay every few hours is in-spec noise"),
    "recovery_errors": CounterModel(1e-6, 0.1, 0.3, 0.5, "DCGM health rule: any recovery fails a link"),
    "symbol_errors": CounterModel(1e-6, 10.0, 0.3, 0.5, "symbol errors after FEC should not appear at all (NVML_AND_XID.md)"),
    "link_down_events": CounterModel(1e-7, 0.01, 0.3, 0.5, "a healthy link does not drop; a flapping one drops every few minutes"),
}
# A link read as down: P(down | faulty), P(down | healthy).
STATE_DOWN = (0.3, 1e-7)
# Effective BER above DCGM's 1e-12: P(above | faulty), P(above | healthy).
BER_LIMIT = 1e-12
BER_ABOVE = (0.5, 1e-3)
SOURCE = "opsctl localizer: likelihood model in opsctl/localize/evidence.py, thresholds of DCGM's health rules (NVML_AND_XID.md)"


def counter_log_ratio(counts, window_s, model):
    """log r for one counter: counts is an array (NaN where not read) over a window of window_s."""
    alpha = model.shape
    x_h = model.healthy_per_s / alpha * window_s
    x_b = model.faulty_per_s / alpha * window_s
    per_count = np.log(x_b / (1 + x_b)) - np.log(x_h / (1 + x_h))
    missing = np.isnan(counts)
    nb = np.where(missing, 0.0, counts) * per_count - alpha * (np.log1p(x_b) - np.log1p(x_h))
    mixed = np.logaddexp(np.log1p(-model.shows), np.log(model.shows) + nb)
    return np.where(missing, 0.0, mixed)


def link_log_ratios(counts, state, ber, window_s):
    """Per-link log r from one side's readings.

    counts: (links × COUNTERS) float array, NaN where not read; state: int8 array, 1 down,
    0 up, −1 not read; ber: float array, NaN where not read."""
    total = np.zeros(counts.shape[0])
    for column, name in enumerate(COUNTERS):
        total += counter_log_ratio(counts[:, column], window_s, COUNTER_MODELS[name])
    p_bad, p_healthy = STATE_DOWN
    total += np.where(state == 1, np.log(p_bad / p_healthy), np.where(state == 0, np.log((1 - p_bad) / (1 - p_healthy)), 0.0))
    p_bad, p_healthy = BER_ABOVE
    above = ber > BER_LIMIT
    total += np.where(np.isnan(ber), 0.0, np.where(above, np.log(p_bad / p_healthy), np.log((1 - p_bad) / (1 - p_healthy))))
    return total


# --- link verdicts (a burn-in judge's pass/fail per link instead of raw counters) -------------
# P(verdict | link bad), P(verdict | link healthy): how well a judge built on DCGM's rules tells them apart.
VERDICT_LIKELIHOODS = {"fail": (0.95, 1e-5), "warn": (0.3, 0.01), "pass": (0.05, 1.0 - 1e-5 - 0.01)}
VERDICT_SOURCE = "opsctl localizer: a judge on DCGM's rules misses 5% of bad links and fails 1 healthy link in 100,000 (estimate)"


def verdict_log_ratio(verdict):
    """log r for a judged link; 0 (no evidence) for incomplete or unknown verdicts."""
    likelihoods = VERDICT_LIKELIHOODS.get(verdict)
    return 0.0 if likelihoods is None else float(np.log(likelihoods[0] / likelihoods[1]))


# --- XIDs -------------------------------------------------------------------------------------
NVLINK_XIDS = frozenset({74, 144, 145, 146, 147, 148, 149, 150})
DOWNSTREAM_XID = 145  # what the other GPUs of an NVL72 domain log when one link drops
BURST_GAP_S = 10.0  # NVLink XIDs further apart than this are separate incidents
ORIGIN_TOLERANCE_S = 0.1  # the origin logs first; the domain follows "a moment later"
# An origin NVLink XID on a GPU: P(logged | a part on the GPU's links is faulty), P(logged | not).
ORIGIN_XID = (0.5, 1e-3)


@dataclass(frozen=True)
class GpuXid:
    """An XID that says the GPU itself is faulty: how strongly, and the repair it calls for."""

    name: str
    p_faulty: float  # P(logged in the window | GPU faulty)
    p_healthy: float  # P(logged in the window | GPU healthy)
    repair: str  # the repair context in opsctl/data/mttr.yaml: reset (reset the GPU) or rma

    @property
    def log_ratio(self):
        return float(np.log(self.p_faulty / self.p_healthy))


# NVIDIA's resolution buckets (NVML_AND_XID.md); the probabilities are opsctl's estimates.
# XIDs the catalog says to ignore or that blame the application (13, 31, 43, 63, 92, 154) are absent: no evidence.
GPU_XIDS = {
    48: GpuXid("double-bit ECC error", 0.2, 1e-5, "reset"),
    64: GpuXid("row remap failure", 0.2, 1e-6, "rma"),
    79: GpuXid("GPU fell off the bus", 0.3, 1e-6, "reset"),
    94: GpuXid("contained memory error", 0.1, 1e-3, "reset"),
    95: GpuXid("uncontained memory error", 0.2, 1e-5, "reset"),
    119: GpuXid("GSP RPC timeout", 0.2, 1e-5, "reset"),
    120: GpuXid("GSP error", 0.2, 1e-5, "reset"),
    121: GpuXid("C2C error", 0.1, 1e-5, "rma"),
    136: GpuXid("link training failed", 0.1, 1e-5, "reset"),
    140: GpuXid("unrecovered ECC error", 0.2, 1e-5, "reset"),
    155: GpuXid("NVLink software-defined error", 0.1, 1e-5, "reset"),
}
# A GPU that did not answer while the rest of its tray did: P(| faulty), P(| healthy).
GPU_LOST = (0.3, 1e-5)
XID_SOURCE = "NVIDIA XID catalog (NVML_AND_XID.md); likelihoods are opsctl's estimates"


def nvlink_origins(gpu_xids):
    """Which GPUs' NVLink XIDs mark where a link went wrong, and which merely echo it.

    gpu_xids: {gpu index: [(xid, time or None), ...]}. On NVL72 one dropping link makes every
    other GPU of the domain log XID 145 moments after the origin logged its own (149, …): the
    origin is whoever logged first in each burst, never every GPU that logged one. Without
    times, XID 145 is downstream by definition and any other NVLink XID counts as an origin.
    Returns (origins, downstream): sets of GPU indices."""
    events = [(t, gpu, xid) for gpu, xids in gpu_xids.items() for xid, t in xids if xid in NVLINK_XIDS]
    origins, downstream = set(), set()
    timed = [e for e in events if e[0] is not None]
    for t, gpu, xid in events:
        if t is None:
            (downstream if xid == DOWNSTREAM_XID else origins).add(gpu)
    timed.sort(key=lambda e: (e[0], e[1]))
    burst_start = None
    last = None
    for t, gpu, xid in timed:
        if last is None or t - last > BURST_GAP_S:
            burst_start = t
        last = t
        if xid != DOWNSTREAM_XID and t - burst_start <= ORIGIN_TOLERANCE_S:
            origins.add(gpu)
        else:
            downstream.add(gpu)
    return origins, downstream - origins


def gpu_log_ratio(xid_codes, lost):
    """log ratio of a GPU's own symptoms (distinct XID codes, lost) under faulty vs healthy.

    Each code counts once: repeats of one XID are one fault talking, not more evidence."""
    total = 0.0
    for code in set(xid_codes):
        known = GPU_XIDS.get(code)
        if known is not None:
            total += known.log_ratio
    if lost:
        total += float(np.log(GPU_LOST[0] / GPU_LOST[1]))
    return total


def origin_log_ratio():
    return float(np.log(ORIGIN_XID[0] / ORIGIN_XID[1]))
