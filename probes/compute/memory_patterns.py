"""The memory test's patterns, as the passes each writes and reads back (DCGM's memory test and
memtest86's: moving inversions, address in address, random data).

A pass is a recipe, materialized by each device in its own arrays (NumPy for the simulator,
probes/sim/memory.py; PyTorch on the GPU): ("constant", 64-bit word), ("address", inverted) — each word holds its
own address — or ("random", inverted) — seeded random words. Every pattern also writes its
complement, so each bit of each word is seen holding a 0 and a 1.
"""

from __future__ import annotations

ONES = 0xFFFFFFFFFFFFFFFF
PATTERNS = {
    # 0101…, its inversion, and back: a cell that cannot flip either way reads back wrong
    "moving_inversions": (("constant", 0x5555555555555555), ("constant", 0xAAAAAAAAAAAAAAAA),
                          ("constant", 0x5555555555555555)),
    # each word its own address: two addresses that reach the same cells (a bad address line) disagree
    "address_in_address": (("address", False), ("address", True)),
    "random": (("random", False), ("random", True)),
}


def signed(word: int) -> int:
    """A 64-bit word as the int64 PyTorch holds it."""
    return word - 2**64 if word >= 2**63 else word
