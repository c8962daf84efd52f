"""NVLink 5 BER fields (NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER, _SYMBOL_BER) come as one
unsigned integer: a mantissa in bits 11:8 and a decimal exponent in bits 7:0, so
BER = mantissa × 10^-exponent. This is the driver's layout for BER values
(NV2080_CTRL_NVLINK_*_BER_MANTISSA 11:8 / _EXPONENT 7:0 in open-gpu-kernel-modules);
DCGM publishes the same field raw and as a decoded float.
"""

from __future__ import annotations

import math

MANTISSA_SHIFT = 8
MANTISSA_MASK = 0xF
EXPONENT_MASK = 0xFF


def ber_parts(raw: float) -> tuple[int, int]:
    """(mantissa, exponent) of a raw BER field: BER = mantissa × 10^-exponent."""
    return (int(raw) >> MANTISSA_SHIFT) & MANTISSA_MASK, int(raw) & EXPONENT_MASK


def decode_ber(raw: float) -> float:
    mantissa, exponent = ber_parts(raw)
    return mantissa * 10.0 ** (-exponent)


def symbol_ber_exceeded(raw: float, floor_exponent: int, floor_mantissa: int) -> bool:
    """DCGM 4.6's IsSymbolBerThresholdExceeded on a raw symbol BER (the floor from the rulebook):
    it compares the packed mantissa and exponent, not the decoded number, so 1e-237 (exponent
    237) fails a floor at exponent 238 while 10e-238, the same number, does not."""
    mantissa, exponent = ber_parts(raw)
    if mantissa == 0:
        return False
    if exponent == floor_exponent:
        return mantissa > floor_mantissa
    return exponent < floor_exponent


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
