"""The noise floor: how much deviation the dtypes of a pair explain without any bug.

A value rounded to a float format is off by at most its *unit roundoff* ``u`` (relative).
A healthy lower-precision run therefore deviates from a float32 golden run by a few ``u``
per op, and an op passes on the deviation of its inputs scaled by a modest gain. The floor
of one op is::

    floor = gain * input_deviation + LOCAL * u

where ``gain`` is what ops of the same kind typically do to an input deviation in this
dump (their median, clamped to ``[1, MAX_GAIN]``) and ``LOCAL * u`` covers the rounding of
the op's own result and of its reductions.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable

UNIT_ROUNDOFF = {
    "float64": 2.0 ** -53,
    "float32": 2.0 ** -24,
    "float16": 2.0 ** -11,
    "bfloat16": 2.0 ** -8,
    "float8_e4m3fn": 2.0 ** -4,
    "float8_e5m2": 2.0 ** -3,
    "hifloat8": 2.0 ** -3,
    "float8": 2.0 ** -3,
}
"""Unit roundoff (half the machine epsilon) of each float dtype, canonical names."""

LOCAL = 8.0
"""Units of roundoff an op may add by itself (its own rounding, reductions, the statistics' own rounding)."""
MIN_GAIN, MAX_GAIN = 1.0, 4.0
"""Bounds of the per-kind gain: an op may amplify an input deviation this much without suspicion."""
DEFAULT_GAIN = 2.0
"""Gain of an op kind with too few calls to measure."""


def unit_roundoff(dtype: str) -> float:
    """``u`` of a canonical dtype name; float32's for unknown or empty names."""
    return UNIT_ROUNDOFF.get(dtype, UNIT_ROUNDOFF["float32"])


def local_floor(dtype: str) -> float:
    """The deviation an op of this dtype may show with exact inputs."""
    return LOCAL * unit_roundoff(dtype)


def kind_gains(samples: Iterable[tuple[str, float, float, str]]) -> dict[str, float]:
    """The typical gain of each op kind from ``(kind, input deviation, output deviation, dtype)`` samples.

    The gain of one call is ``out / (in + LOCAL*u)``; the kind's gain is the median over its
    calls (a faulty call is one of several and does not move the median), clamped.
    """
    ratios: dict[str, list[float]] = defaultdict(list)
    for kind, dev_in, dev_out, dtype in samples:
        ratios[kind].append(dev_out / (dev_in + local_floor(dtype)))
    gains = {}
    for kind, values in ratios.items():
        if len(values) < 3:
            gains[kind] = DEFAULT_GAIN
        else:
            gains[kind] = min(MAX_GAIN, max(MIN_GAIN, statistics.median(values)))
    return gains
