"""Finding the smallest likely set of faulty parts that explains what was seen.

A hypothesis is a set of faulty parts. Under it each link is bad with probability
1 − Π(1 − q_f) over the parts f on its path (noisy-OR; q_f is the part's penetrance, which
each part's score marginalizes over). Relative to "nothing is faulty", the evidence for adding
a part f to a hypothesis whose parts already make link l bad with probability p_l is

    Σ_{l ∈ f} log(1 + q·(1 − p_l)(r_l − 1) / (p_l·r_l + 1 − p_l))     (r_l: the link's likelihood ratio)

plus the GPU evidence f explains (its own XIDs for a GPU; origin NVLink XIDs for any part on
a GPU's links). Links already explained (p_l ≈ 1) add nothing, so a second part is chosen
only for what the first leaves unexplained. With its prior odds, G_f = log P(f added) − log
P(nothing added).

The search adds the best part while the posterior that some further part is faulty,
Σe^G / (1 + Σe^G), exceeds one half; then, for each choice, it regrows the set without it and
with each runner-up for its slot in its place, keeping the set whose total posterior (an
order-free score: see `total`) is higher — so one big part gives way to the smaller ones that
explain the same links better, and back. A chosen part's score is its share of that
posterior in its slot — e^{G_f} / (1 + Σ_g e^{G_g}) over every candidate g for the slot — so
"0.97" means: given the other faults found, 97% of the belief about what explains the rest is
this part; the runners-up are the alternatives.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from opsctl.localize.evidence import LOG_R_MAX, LOG_R_MIN

if TYPE_CHECKING:
    from opsctl.localize.parts import PartIndex

MAX_FAULTS = 6
MIN_ALTERNATIVE = 0.01  # runners-up below this share of their slot are not worth listing
ALTERNATIVES_PER_SLOT = 3
DECIDE = 0.5  # another fault is declared when P(some further part is faulty) exceeds this
RUNNERS_UP = 3  # how many second-best parts for a slot the local search tries in its place


@dataclass(frozen=True)
class Slot:
    part: int
    score: float  # its share of the slot's posterior
    q: float  # posterior mean penetrance: the share of its links the fault shows on
    alternatives: tuple  # ((part, score), ...), best first


@dataclass
class Evidence:
    """One rack's evidence, indexed like its PartIndex."""

    log_r: np.ndarray  # per link
    gpu_own: np.ndarray  # per GPU: log ratio of its own symptoms
    gpu_origin: np.ndarray  # per GPU: log ratio of an origin NVLink XID on it (0 when none)


def _logsumexp(values: np.ndarray, axis: int | None = None) -> Any:
    """log Σ exp(values): an array along `axis`, a float over all of them."""
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):  # every value −inf: the sum is 0 and its log −inf, as it should be
        total = np.log(np.sum(np.exp(values - top), axis=axis, keepdims=True)) + top
    return np.squeeze(total, axis=axis) if axis is not None else float(total.ravel()[0])


def _lookup(values: np.ndarray, sorted_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of `values`: where it would sit in `sorted_values` (unique, ascending) and whether
    it is there — np.isin's answer for sorted integers, by binary search."""
    if not len(sorted_values):
        return np.zeros(len(values), dtype=np.int64), np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_values, values), len(sorted_values) - 1)
    return at, sorted_values[at] == values


class _Scorer:
    """Scores parts and sets of parts for one rack's evidence. Only "live" parts are scored:
    those with a link that looks bad or GPU evidence; no other part can gain."""

    def __init__(self, index: PartIndex, evidence: Evidence) -> None:
        self.index = index
        self.evidence = evidence
        self.r = np.exp(np.clip(evidence.log_r, LOG_R_MIN, LOG_R_MAX))
        interesting = (evidence.log_r > 0)[index.entry_link]
        live = np.zeros(len(index.part_ids), dtype=bool)
        np.logical_or.at(live, index.entry_part, interesting)
        gpu_evidence = (evidence.gpu_own != 0) | (evidence.gpu_origin != 0)
        live[index.gpu_part[gpu_evidence & (index.gpu_part >= 0)]] = True
        if gpu_evidence.any():
            gpu_entry_part = np.repeat(np.arange(len(index.part_ids)), np.diff(index.gpu_entry_start))
            np.logical_or.at(live, gpu_entry_part, (evidence.gpu_origin != 0)[index.gpu_entry_gpu])
        self.live = np.flatnonzero(live)
        starts = index.entry_start[self.live]
        ends = index.entry_start[self.live + 1]
        self.entries = np.concatenate([index.entry_link[s:e] for s, e in zip(starts, ends)]) if len(self.live) else np.zeros(0, int)
        self.offsets = np.concatenate([[0], np.cumsum(ends - starts)])[:-1]
        gstarts = index.gpu_entry_start[self.live]
        gends = index.gpu_entry_start[self.live + 1]
        self.gpu_entries = np.concatenate([index.gpu_entry_gpu[s:e] for s, e in zip(gstarts, gends)]) if len(self.live) else np.zeros(0, int)
        self.gpu_offsets = np.concatenate([[0], np.cumsum(gends - gstarts)])[:-1]
        self.gpu_counts = gends - gstarts
        self.entry_position = np.repeat(np.arange(len(self.live)), ends - starts)  # live position of each entry
        self.base: np.ndarray | None = None
        # The search asks for the same sets again and again (a slot's others, a grown set's
        # prefixes): each state and slot is computed once, from its prefix's state.
        self._states: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._slots: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._overlaps: dict[tuple[int, int], np.ndarray] = {}  # total()'s: which links two parts share
        self._best_qs: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}
        self.own = np.zeros(len(self.live))
        for position, part in enumerate(self.live):
            if index.part_kinds[part] == "gpu":
                self.own[position] = evidence.gpu_own[np.flatnonzero(index.gpu_part == part)[0]]

    def per_q(self, p: np.ndarray) -> np.ndarray:
        """(live parts × q grid): the link evidence for each part at each penetrance.

        The table with nothing explained is computed once; a hypothesis changes only the
        entries of the links its parts explain, so only those are recomputed."""
        grid = self.index.q_grid
        if self.base is None:
            a = (self.r - 1)[self.entries]
            self.base = np.zeros((len(self.live), len(grid)))
            if len(a):
                self.base = np.add.reduceat(np.log1p(np.outer(a, grid)), self.offsets, axis=0)
        touched = np.flatnonzero(p[self.entries] > 0)
        if not len(touched):
            return self.base
        # The change each explained link makes, once a link (it is an entry of every live part
        # it passes through), then added to each of those parts' rows: by np.add.at over the flat
        # table (NumPy's fast path), cell by cell in the same order as by rows.
        explained_links = np.flatnonzero(p > 0)
        r, explained = self.r[explained_links], p[explained_links]
        before = np.log1p(np.outer(r - 1, grid))
        after = np.log1p(np.outer((1 - explained) * (r - 1) / (explained * r + 1 - explained), grid))
        row_of = np.zeros(self.index.links, dtype=np.int64)
        row_of[explained_links] = np.arange(len(explained_links))
        change = (after - before)[row_of[self.entries[touched]]]
        table = self.base.copy()
        cells = (self.entry_position[touched, None] * len(grid) + np.arange(len(grid))).ravel()
        np.add.at(table.reshape(-1), cells, change.ravel())
        return table

    def log_odds(self, p: np.ndarray, origin_left: np.ndarray) -> np.ndarray:
        """G for every live part, given link explanation p and unexplained origin XIDs."""
        table = self.per_q(p) + self.index.log_q_weight[self.live]
        gain = _logsumexp(table, axis=1) + self.own
        if origin_left.any() and len(self.gpu_entries):
            gain = gain + np.add.reduceat(origin_left[self.gpu_entries], self.gpu_offsets) * (self.gpu_counts > 0)
        return gain + self.index.log_prior_odds[self.live]

    def part_gain(self, part: int, p: np.ndarray, origin_left: np.ndarray) -> tuple[float, float]:
        """G of one part given link explanation p, and its posterior mean penetrance."""
        index = self.index
        links = index.part_links(part)
        r = self.r[links]
        a = (1 - p[links]) * (r - 1) / (p[links] * r + 1 - p[links])
        row = np.log1p(np.outer(a, index.q_grid)).sum(axis=0) + index.log_q_weight[part]
        total = _logsumexp(row)
        q = float(np.dot(np.exp(row - total), index.q_grid))
        position = np.searchsorted(self.live, part)
        own = self.own[position] if position < len(self.live) and self.live[position] == part else 0.0
        gain = total + own + float(np.sum(origin_left[index.part_gpus(part)])) + index.log_prior_odds[part]
        return gain, q

    def add(self, part: int, p: np.ndarray, origin_left: np.ndarray) -> None:
        """Explain the links a chosen part makes bad (in place): each link by its posterior of
        being bad through this part, at the part's posterior penetrance."""
        _, q = self.part_gain(part, p, origin_left)
        links = self.index.part_links(part)
        r = self.r[links]
        explained = q * r / (q * r + 1 - q) if q < 1 else np.ones(len(links))
        p[links] = 1 - (1 - p[links]) * (1 - explained)
        origin_left[self.index.part_gpus(part)] = 0.0

    def state(self, chosen: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
        """Link explanation p and unexplained origin XIDs under the chosen parts, in their
        order (read-only: they are kept for the next ask)."""
        key = tuple(chosen)
        if key not in self._states:
            if key:
                p, origin_left = (array.copy() for array in self.state(key[:-1]))
                self.add(key[-1], p, origin_left)
            else:
                p, origin_left = np.zeros(self.index.links), self.evidence.gpu_origin.copy()
            p.flags.writeable = origin_left.flags.writeable = False
            self._states[key] = p, origin_left
        return self._states[key]

    def total(self, chosen: Sequence[int], passes: int = 3) -> float:
        """Log posterior odds of the whole set against "nothing is faulty", whatever its order:
        the likelihood with each part at its best penetrance (fitted together, part by part),
        plus each part's prior and GPU evidence. The local search compares sets with it."""
        index = self.index
        if not chosen:
            return 0.0
        grid = index.q_grid
        # Only the other parts that share links with a part change its fit (most share none).
        sharing = {part: [other for other in chosen if other != part and len(self._shared(part, other))] for part in chosen}
        q = {part: 0 for part in chosen}
        for _ in range(passes):
            for part in chosen:
                q[part] = self._best_q(part, tuple((other, q[other]) for other in sharing[part]))
        survive = np.ones(index.links)
        for part in chosen:
            survive[index.part_links(part)] *= 1 - grid[q[part]]
        touched = survive < 1
        p, r = 1 - survive[touched], self.r[touched]
        total = float(np.sum(np.log(p * r + 1 - p)))
        gpus: set[int] = set()
        for part in chosen:
            position = np.searchsorted(self.live, part)
            own = self.own[position] if position < len(self.live) and self.live[position] == part else 0.0
            total += index.log_q_weight[part][q[part]] + index.log_prior_odds[part] + own
            gpus.update(index.part_gpus(part).tolist())
        return total + float(np.sum(self.evidence.gpu_origin[list(gpus)]))

    def live_positions(self, parts: Sequence[int]) -> np.ndarray:
        """Where the live ones of `parts` sit in `live`."""
        at, found = _lookup(np.asarray(parts, dtype=np.int64), self.live)
        return at[found]

    def _shared(self, part: int, other: int) -> np.ndarray:
        """The positions in `part`'s links of the links `other` carries too."""
        key = part, other
        if key not in self._overlaps:
            self._overlaps[key] = np.flatnonzero(_lookup(self.index.part_links(part), self.index.part_links(other))[1])
        return self._overlaps[key]

    def _best_q(self, part: int, shared: tuple[tuple[int, int], ...]) -> int:
        """The grid index of `part`'s best penetrance, the parts it shares links with at theirs."""
        key = part, shared
        if key not in self._best_qs:
            links, grid = self.index.part_links(part), self.index.q_grid
            survive = np.ones(len(links))  # P(link not made bad by the other parts)
            for other, q_other in shared:
                survive[self._shared(part, other)] *= 1 - grid[q_other]
            p, r = 1 - survive, self.r[links]
            a = (1 - p) * (r - 1) / (p * r + 1 - p)
            row = np.log1p(np.outer(a, grid)).sum(axis=0) + self.index.log_q_weight[part]
            self._best_qs[key] = int(np.argmax(row))
        return self._best_qs[key]

    def slot(self, others: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """G of every live part for one more fault beside `others` (a copy, the caller's to
        change), and the link-state p."""
        key = tuple(others)
        if key not in self._slots:
            p, origin_left = self.state(others)
            odds = self.log_odds(p, origin_left)
            odds[self.live_positions(others)] = -np.inf
            self._slots[key] = odds, p
        odds, p = self._slots[key]
        return odds.copy(), p

    def moves(self, part: int, others: list[int], odds: np.ndarray,
              p: np.ndarray) -> Iterator[tuple[list[int], Sequence[int]]]:
        """Where the local search may regrow from instead of `part` (others fixed): without it,
        and with each runner-up for its slot. A move is skipped when even recovering all the
        evidence it would leave unexplained could not beat `part` (an upper bound, priors of
        the parts it would still need left out)."""
        index = self.index
        position = {int(part): i for i, part in enumerate(self.live)}
        g_part = odds[position[part]]
        unexplained = (1 - p) * np.maximum(self.evidence.log_r, 0)
        own = self.own[position[part]]
        links = index.part_links(part)
        # Without it: the parts that replace it explain at most its links and need a prior.
        smaller_prior = np.max(index.log_prior_odds[self.live[self.live != part]], initial=-np.inf)
        if index.part_kinds[part] != "link" and np.sum(unexplained[links]) + own - g_part + smaller_prior > 0:
            yield others, [part]
        tried = 0
        for j in np.argsort(-odds):
            candidate = int(self.live[j])
            if tried == RUNNERS_UP or not np.isfinite(odds[j]):
                break
            if candidate == part:
                continue
            tried += 1
            left = np.sum(unexplained[np.setdiff1d(links, index.part_links(candidate), assume_unique=True)]) + own
            if odds[j] - g_part + left > 0:
                yield others + [candidate], ()

    def grow(self, chosen: Iterable[int], max_faults: int, threshold: float, forbidden: Sequence[int] = ()) -> list[int]:
        """Add the best part (not one of `forbidden`) while some further fault is more likely than not."""
        chosen = list(chosen)
        while len(chosen) < max_faults:
            odds, _ = self.slot(chosen)
            odds[self.live_positions(forbidden)] = -np.inf
            if _logsumexp(odds) <= threshold:
                break
            chosen.append(int(self.live[int(np.argmax(odds))]))
        return chosen


def find_faults(index: PartIndex, evidence: Evidence, max_faults: int = MAX_FAULTS) -> list[Slot]:
    """The most likely set of faulty parts, as Slots best first ([] for a healthy rack)."""
    scorer = _Scorer(index, evidence)
    if not len(scorer.live):
        return []
    threshold = np.log(DECIDE / (1 - DECIDE))
    chosen = scorer.grow([], max_faults, threshold)
    best = scorer.total(chosen)
    # Greedy picks the part that explains most at once: a cartridge over three links that
    # merely share it. For each choice, regrow the others without it (the smaller parts it
    # may stand in for), and with each runner-up for its slot in its place; keep the set whose
    # total posterior is higher, until nothing improves.
    for _ in range(2 * max_faults):
        improved = False
        for i in range(len(chosen)):
            others = chosen[:i] + chosen[i + 1:]
            odds, p = scorer.slot(others)
            for start, forbidden in scorer.moves(chosen[i], others, odds, p):
                regrown = scorer.grow(start, max_faults, threshold, forbidden)
                score = scorer.total(regrown)
                if score > best + 1e-6:
                    chosen, best, improved = regrown, score, True
                    break
            if improved:
                break
        if not improved:
            break

    slots = []
    for i, part in enumerate(chosen):
        others = chosen[:i] + chosen[i + 1:]
        odds, p = scorer.slot(others)
        total = _logsumexp(np.concatenate([[0.0], odds]))
        shares = np.exp(odds - total)
        position = int(np.flatnonzero(scorer.live == part)[0])
        q = scorer.part_gain(part, p, np.zeros(len(index.gpu_ids)))[1]
        order = np.argsort(-shares)
        alternatives = tuple(
            (int(scorer.live[j]), float(shares[j])) for j in order[:ALTERNATIVES_PER_SLOT + 1]
            if scorer.live[j] != part and shares[j] >= MIN_ALTERNATIVE
        )[:ALTERNATIVES_PER_SLOT]
        slots.append(Slot(part, float(shares[position]), q, alternatives))
    slots.sort(key=lambda s: -s.score)
    return slots
