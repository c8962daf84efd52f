"""NVLink 5 BER fields (NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER, _SYMBOL_BER) come as one
unsigned integer: a mantissa in bits 11:8 and a decimal exponent in bits 7:0, so
BER = mantissa × 10^-exponent. This is the driver's layout for BER values
(NV2080_CTRL_NVLINK_*_BER_MANTISSA 11:8 / _EXPONENT 7:0 in open-gpu-kernel-modules);
DCGM publishes the same field raw and as a decoded float.
"""

from __future__ import annotations

import math
from typing import Any

MANTISSA_SHIFT = 8
MANTISSA_MASK = 0xF
EXPONENT_MASK = 0xFF


def ber_parts(raw: float) -> tuple[int, int]:
    """(mantissa, exponent) of a raw BER field: BER = mantissa × 10^-exponent."""
    return (int(raw) >> MANTISSA_SHIFT) & MANTISSA_MASK, int(raw) & EXPONENT_MASK


def decode_ber(raw: float) -> float:
    mantissa, exponent = ber_parts(raw)
    return mantissa * 10.0 ** (-exponent)


def symbol_ber_exceeded(raw: Any, floor_exponent: int, floor_mantissa: int) -> Any:
    """DCGM 4.6's IsSymbolBerThresholdExceeded on a raw symbol BER (the floor from the rulebook):
    it compares the packed mantissa and exponent, not the decoded number, so 1e-237 (exponent
    237) fails a floor at exponent 238 while 10e-238, the same number, does not. A mantissa of 0
    passes; an exponent below the floor's fails; at the floor's, a mantissa above its fails.
    Written without branches, so that `raw` may be an int (the tray judge) or a numpy array of
    them (the localizer, a rack's links at once)."""
    mantissa, exponent = (raw >> MANTISSA_SHIFT) & MANTISSA_MASK, raw & EXPONENT_MASK
    return (mantissa != 0) & ((exponent < floor_exponent) | ((exponent == floor_exponent) & (mantissa > floor_mantissa)))


def encode_ber(ber: float) -> int:
    """The raw field value for a BER (one significant digit, as the hardware reports it)."""
    if ber <= 0:
        return 0
    exponent = -math.floor(math.log10(ber))
    mantissa = round(ber * 10.0**exponent)
    if mantissa >= 10:
        mantissa, exponent = 1, exponent - 1
    exponent = max(0, min(EXPONENT_MASK, exponent))
    return (mantissa << MANTISSA_SHIFT) | exponent
