"""A simulated GPU's HBM under the memory test: real writes and reads on a small buffer that
stands for the tested memory (each of its words for a slice of bytes), with the cells of an
`hbm_bad_cells` effect stuck: bit 0 of every word in their byte range reads 1 whatever was
written, so each pass that writes a 0 there really reads back wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from probes.compute.memory_patterns import PATTERNS

USED_BYTES = 600 * 2**20  # what the simulated NVML reports in use (nvmlDeviceGetMemoryInfo)
WORDS = 2**14  # 8-byte words of the buffer that stands for the tested memory


def numpy_words(recipe: tuple[str, Any], addresses: np.ndarray, seed: int) -> np.ndarray:
    """A pass's words for 8-byte words at `addresses` (uint64 array of word addresses)."""
    kind, arg = recipe
    if kind == "constant":
        return np.full(addresses.shape, arg, dtype=np.uint64)
    if kind == "address":
        words = addresses.copy()
    else:
        words = np.random.default_rng(seed).integers(0, 2**63, size=addresses.shape, dtype=np.uint64)
    return ~words if arg else words


def free_bytes(gpu: Any) -> int:
    return gpu.sku.memory_bytes - USED_BYTES


def bad_ranges(gpu: Any, tested: int) -> list[tuple[int, int]]:
    """The stuck byte ranges the test reaches (cut at the tested size)."""
    found = []
    for effect in gpu.effects:
        if effect.kind == "hbm_bad_cells":
            start = int(effect.get("offset_bytes", 0))
            end = min(start + int(effect.get("size_bytes", 0)), tested)
            if start < end:
                found.append((start, end))
    return found


def memory_test(sim_device: Any, pattern: str, fraction: float,
                seed: int) -> tuple[int, int, int, list[list[int]], float]:
    """(free bytes, tested bytes, wrong words, [[first byte, end byte], …], seconds) of one
    pattern over `fraction` of the GPU's free memory."""
    gpu = sim_device.gpu
    free = free_bytes(gpu)
    tested = int(free * fraction) // 8 * 8
    bytes_per_word = tested / WORDS
    bad = bad_ranges(gpu, tested)
    spans = [(int(start // bytes_per_word), int((end - 1) // bytes_per_word) + 1) for start, end in bad]
    stuck = np.zeros(WORDS, dtype=bool)
    for first, stop in spans:
        stuck[first:stop] = True
    addresses = np.arange(WORDS, dtype=np.uint64) * np.uint64(max(1, int(bytes_per_word) // 8))
    memory = np.zeros(WORDS, dtype=np.uint64)
    wrong = np.zeros(WORDS, dtype=bool)
    passes = PATTERNS[pattern]
    for recipe in passes:
        written = numpy_words(recipe, addresses, seed)
        memory[:] = written
        memory[stuck] |= np.uint64(1)
        wrong |= memory != written
    seconds = sim_device.copy_seconds(tested * len(passes))  # each pass writes and reads it all once
    errors = 0
    ranges: list[list[int]] = []
    for (start, end), (first, stop) in zip(bad, spans):
        share = float(np.mean(wrong[first:stop]))  # of the range's words that read back wrong
        if share:
            errors += max(1, round((end - start) / 8 * share))
            ranges.append([start, end])
    return free, tested, errors, ranges, seconds
