"""TorchAir comparison metrics (real data, statistics, md5) and the PASS/FAIL rule.

These are TorchAir's own definitions, kept apart from the core's tensor metrics on purpose:
max/mean relative *and absolute* errors only count positions where ``|golden| > eps``
(float32 eps) and average over all elements; cosine is 1.0 for two all-zero tensors; the
KL divergence is taken between the softmax of the flattened tensors. They match what
msProbe reports for ``-m torchair``, which differs from its API-level compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from probe_torchair.tensors import Loaded

EPS = float(np.finfo(np.float32).eps)
COSINE_EPS = 1e-8
COSINE_PASS = 0.99
MAX_REL_PASS = 0.01
STAT_REL_PASS = 0.01

PASS, FAIL, NA = "PASS", "FAIL", "N/A"

SHAPE_MISMATCH = "data shape doesn't match."
GOLDEN_NAN = "golden_data includes NAN or inf."
MY_NAN = "my_data includes NAN or inf."

TENSOR_COLUMNS = (
    "cosine_similarity", "max_relative_error", "mean_relative_error", "max_absolute_error",
    "mean_absolute_error", "kl_divergence", "relative_euclidean_distance",
)
STATISTICS_COLUMNS = (
    "max_diff", "min_diff", "mean_diff", "max_relative_diff", "min_relative_diff",
    "mean_relative_diff",
)
MD5_COLUMNS = ("golden_md5", "my_md5")
MODE_COLUMNS = {"tensor": TENSOR_COLUMNS, "statistics": STATISTICS_COLUMNS, "md5": MD5_COLUMNS}


@dataclass
class Outcome:
    """Metric values (in the mode's column order), fail reasons and the verdict."""

    values: tuple[object, ...]
    reasons: list[str]
    result: str
    documented: tuple[object, ...] = ()
    """Tensor mode: EucDist and the 1/1000, 5/1000 error ratios for the documented report."""


def documented_metrics(golden: np.ndarray, mine: np.ndarray) -> tuple[object, ...]:
    """EucDist, One Thousandth and Five Thousandths Err Ratio, as the core's tensor compare
    defines them (the TorchAir documentation's report columns)."""
    from probe.api import compare_arrays  # numpy-backed: loaded when first used

    values, _ = compare_arrays(np.asarray(mine).reshape(-1), np.asarray(golden).reshape(-1))
    return values[1], values[4], values[5]


def _finite(array: np.ndarray) -> bool:
    return bool(np.isfinite(array).all())


def _as_float(array: np.ndarray) -> np.ndarray:
    if np.iscomplexobj(array):
        array = np.abs(array)
    return np.asarray(array, dtype=np.float64).reshape(-1)


def tensor_metrics(golden: np.ndarray, mine: np.ndarray) -> tuple[float, ...]:
    """The seven real-data metrics of two flat float64 arrays of equal size (no NaN/inf)."""
    g, m = golden, mine
    g_norm = float(np.linalg.norm(g))
    m_norm = float(np.linalg.norm(m))
    if not g.any() and not m.any():
        cosine = 1.0
    else:
        cosine = float(np.dot(g, m)) / (max(g_norm, COSINE_EPS) * max(m_norm, COSINE_EPS))
        cosine = round(cosine, 10)
    mask = np.abs(g) > EPS
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(mask, np.abs(m / np.where(mask, g, 1.0) - 1.0), 0.0)
    absolute = np.where(mask, np.abs(m - g), 0.0)
    log_p = g - _logsumexp(g)
    log_q = m - _logsumexp(m)
    kl = max(0.0, float(np.sum(np.exp(log_p) * (log_p - log_q))))
    red = 0.0 if g_norm <= EPS else math.sqrt(float(np.sum((m - g) ** 2)) / float(np.sum(g**2)))
    return (
        cosine, float(rel.max()), float(rel.mean()), float(absolute.max()),
        float(absolute.mean()), kl, red,
    )


def _logsumexp(x: np.ndarray) -> float:
    top = float(x.max())
    return top + math.log(float(np.sum(np.exp(x - top))))


def _shape_reason(golden: Loaded, mine: Loaded) -> list[str]:
    if golden.shape is None or mine.shape is None:
        return []
    if math.prod(golden.shape) != math.prod(mine.shape):
        return [SHAPE_MISMATCH]
    return []


def compare_tensor(golden: Loaded, mine: Loaded) -> Outcome:
    """Real-data mode: seven metrics; PASS iff cosine >= 0.99 and max relative error < 0.01."""
    empty = (NA,) * len(TENSOR_COLUMNS)
    reasons = _shape_reason(golden, mine)
    g = _as_float(golden.array) if golden.array is not None else None
    m = _as_float(mine.array) if mine.array is not None else None
    if g is None or m is None:
        return Outcome(empty, reasons + ["real data missing (statistics only)."], NA)
    golden_bad = not _finite(g)
    mine_bad = not _finite(m)
    if golden_bad:
        reasons.append(GOLDEN_NAN)
    if mine_bad:
        reasons.append(MY_NAN)
    if reasons:
        # A target NaN/inf or a shape mismatch is a failure; a golden NaN alone cannot be judged.
        result = FAIL if (mine_bad or SHAPE_MISMATCH in reasons) else NA
        return Outcome(empty, reasons, result)
    if g.size == 0 or m.size == 0:
        return Outcome(empty, ["empty tensor."], NA)
    values = tensor_metrics(g, m)
    passed = values[0] >= COSINE_PASS and values[1] < MAX_REL_PASS
    return Outcome(values, [], PASS if passed else FAIL, documented_metrics(g, m))


def _relative(diff: float, golden: float) -> float:
    if diff == 0:
        return 0.0
    if golden == 0:
        return math.inf
    return abs(diff) / abs(golden)


def compare_statistics(golden: Loaded, mine: Loaded) -> Outcome:
    """Statistics mode: differences of max/min/mean; PASS iff every relative one < 0.01."""
    reasons = _shape_reason(golden, mine)
    diffs: list[object] = []
    rels: list[object] = []
    bad_mine = False
    bad_golden = False
    for name in ("maximum", "minimum", "mean"):
        g = getattr(golden, name)
        m = getattr(mine, name)
        if g is None or m is None:
            diffs.append(NA)
            rels.append(NA)
            continue
        bad_golden |= not math.isfinite(g)
        bad_mine |= not math.isfinite(m)
        diff = m - g
        diffs.append(diff)
        rels.append(_relative(diff, g) if math.isfinite(diff) else math.nan)
    if bad_golden:
        reasons.append(GOLDEN_NAN)
    if bad_mine:
        reasons.append(MY_NAN)
    values = tuple(diffs + rels)
    if all(v == NA for v in rels):
        return Outcome(values, reasons + ["no statistics to compare."], NA)
    if reasons:
        result = FAIL if (bad_mine or SHAPE_MISMATCH in reasons) else NA
        return Outcome(values, reasons, result)
    passed = all(v < STAT_REL_PASS for v in rels if v != NA)
    return Outcome(values, [], PASS if passed else FAIL)


def md5_of(loaded: Loaded) -> str:
    """MD5 of the decoded tensor bytes (C order)."""
    import hashlib  # loads OpenSSL (~7 ms): imported when a torchair md5 compare needs it, not at start-up

    assert loaded.array is not None
    return hashlib.md5(np.ascontiguousarray(loaded.array).tobytes()).hexdigest()


def compare_md5(golden: Loaded, mine: Loaded) -> Outcome:
    """md5 mode: PASS iff the decoded bytes and shapes are identical."""
    if golden.array is None or mine.array is None:
        return Outcome((NA, NA), ["real data missing (statistics only)."], NA)
    g, m = md5_of(golden), md5_of(mine)
    reasons = _shape_reason(golden, mine)
    same = g == m and golden.shape == mine.shape
    return Outcome((g, m), reasons, PASS if same else FAIL)


COMPARERS = {"tensor": compare_tensor, "statistics": compare_statistics, "md5": compare_md5}
