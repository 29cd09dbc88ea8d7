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

from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

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
PARAMETER_UNITS = 4.0
"""Units of roundoff a parameter may differ by: a cast moves each statistic by at most one."""
MAX_WIDTH = 1 << 16
"""Reductions longer than this are not trusted to stay near the roundoff (a cap on ``width``)."""
MIN_GAIN, MAX_GAIN = 1.0, 4.0
"""Bounds of the per-kind gain: an op may amplify an input deviation this much without suspicion."""
DEFAULT_GAIN = 2.0
"""Gain of an op kind with too few calls to measure."""


def unit_roundoff(dtype: str) -> float:
    """``u`` of a canonical dtype name; float32's for unknown or empty names."""
    return UNIT_ROUNDOFF.get(dtype, UNIT_ROUNDOFF["float32"])


@lru_cache(maxsize=4096)
def local_floor(dtype: str, width: int = 1) -> float:
    """The deviation an op of this dtype may show with exact inputs.

    ``LOCAL`` units of its own roundoff, plus the worst-case float32 accumulation error of a
    reduction over ``width`` terms (kernels accumulate low-precision data in float32; two
    float32 kernels that sum in different orders differ by up to ``width * u``).
    """
    return _local(unit_roundoff(dtype), min(width, MAX_WIDTH))


def local_floors(units: np.ndarray, widths: list[int]) -> np.ndarray:
    """:func:`local_floor` of many calls at once, from their dtypes' unit roundoffs and their widths."""
    import numpy as np  # not at start-up

    capped = np.array(widths)
    if capped.dtype.kind != "i":  # an int beyond int64 (or no widths)
        capped = np.array([min(width, MAX_WIDTH) for width in widths], np.int64)
    return _local(units, np.minimum(capped, MAX_WIDTH))


def _local(unit: Any, width: Any) -> Any:
    """The one formula of :func:`local_floor` and :func:`local_floors` (floats or arrays)."""
    return LOCAL * unit + width * UNIT_ROUNDOFF["float32"]


def parameter_floor(dtype: str) -> float:
    """The deviation a parameter (or any tensor no call produced) may show from a cast to ``dtype``."""
    return PARAMETER_UNITS * unit_roundoff(dtype)


def kind_gains(samples: Iterable[tuple[str, float, float, str, int]]) -> dict[str, float]:
    """The typical gain of each op kind from ``(kind, input deviation, output deviation, dtype, width)`` samples.

    The gain of one call is ``out / (in + LOCAL*u)``; the kind's gain is the median over its
    calls (a faulty call is one of several and does not move the median), clamped.
    """
    import numpy as np  # not at start-up

    kinds, ratios = [], []
    for kind, dev_in, dev_out, dtype, width in samples:
        kinds.append(kind)
        ratios.append(dev_out / (dev_in + local_floor(dtype, width)))
    names = list(dict.fromkeys(kinds))
    number = {name: k for k, name in enumerate(names)}
    gains = group_gains(np.array([number[kind] for kind in kinds], np.intp), np.array(ratios, float), len(names))
    return dict(zip(names, gains.tolist()))


def group_gains(groups: np.ndarray, ratios: np.ndarray, count: int) -> np.ndarray:
    """The gain of each of ``count`` op kinds (numbered ``0..count-1``) from one ratio per call
    (``ratios[i]`` of a call of kind ``groups[i]``): as :func:`kind_gains`, all kinds at once."""
    import numpy as np  # not at start-up

    gains = np.full(count, DEFAULT_GAIN)
    sizes = np.bincount(groups, minlength=count)
    ratios = ratios[np.argsort(groups, kind="stable")]  # by kind
    ends = np.cumsum(sizes).tolist()
    for kind in np.flatnonzero(sizes >= 3).tolist():
        end = ends[kind]
        values = np.sort(ratios[end - int(sizes[kind]):end])
        middle = len(values) // 2
        if len(values) % 2:
            median = float(values[middle])
        else:  # as statistics.median: the mean of the two middle values
            median = (float(values[middle - 1]) + float(values[middle])) / 2
        gains[kind] = min(MAX_GAIN, max(MIN_GAIN, median))
    return gains
