"""Real-data metrics of one pair of arrays (msProbe's definitions and special values)."""

from __future__ import annotations

import threading
from math import isfinite, isnan, sqrt
from typing import Any

import numpy as np

UNSUPPORTED = "unsupported"
SHAPE_UNMATCHED = "shape unmatched"
NAN_TEXT = "Nan"
NA = "N/A"

METRIC_NAMES = (
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
)
EPS64 = float(np.finfo(np.float64).eps)

MSG_EMPTY = "This is empty data, can not compare."
MSG_SHAPE = "Shape of NPU and bench tensor do not match. Skipped."
MSG_ZERO_D = (
    "This is type of 0-d tensor, can not calculate 'Cosine', 'EucDist', "
    "'One Thousandth Err Ratio' and 'Five Thousandths Err Ratio'."
)
MSG_NAN_POS = "The position of inf or nan in NPU and bench Tensor do not match."
MSG_DTYPE = "Dtype of NPU and bench tensor do not match."
MSG_COS_NPU_ZERO = "Cannot compare by Cosine Similarity, All the data is Zero in npu dump data."
MSG_COS_BENCH_ZERO = "Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data."


def _round(value: float) -> Any:
    value = float(value)
    if isnan(value):
        return NAN_TEXT
    return round(value, 12)


def cosine(n64: np.ndarray, b64: np.ndarray, messages: list[str], dot: Any = np.dot) -> Any:
    """Cosine similarity of flattened float64 arrays, rounded as msProbe rounds it."""
    if n64.size <= 1:
        return UNSUPPORTED
    nn = float(np.sqrt(dot(n64, n64)))
    nb = float(np.sqrt(dot(b64, b64)))
    if nn <= EPS64 and nb <= EPS64:
        return 1.0
    if nn <= EPS64:
        messages.append(MSG_COS_NPU_ZERO)
        return NAN_TEXT
    if nb <= EPS64:
        messages.append(MSG_COS_BENCH_ZERO)
        return NAN_TEXT
    value = float(dot(n64, b64)) / (nn * nb)
    if np.isnan(value):
        return NAN_TEXT
    value = round(value, 12)
    return round(value, 6) if value > 0.9999 else value


def relative_errors(n: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise ``|n - b| / |b|`` with eps added to both sides where ``b == 0``."""
    given_n, given_b = n, b
    if not (np.issubdtype(n.dtype, np.floating) and np.issubdtype(b.dtype, np.floating)):
        n = n.astype(np.float64) if not np.issubdtype(n.dtype, np.floating) else n
        b = b.astype(np.float64) if not np.issubdtype(b.dtype, np.floating) else b
    dtype = np.result_type(n, b, np.float32)
    n = n.astype(dtype, copy=False)
    b = b.astype(dtype, copy=False)
    zero = b == 0
    if zero.any():  # eps added in place where this function made its own copy
        eps = np.finfo(dtype).eps
        n = n.copy() if n is given_n else n
        np.add(n, eps, out=n, where=zero)
        b = b.copy() if b is given_b else b
        np.add(b, eps, out=b, where=zero)
    rel = np.subtract(n, b)
    np.divide(rel, b, out=rel)
    return np.abs(rel, out=rel)


def compare_arrays(n: np.ndarray, b: np.ndarray) -> tuple[tuple[Any, ...], list[str]]:
    """The six metrics of one pair of (squeezed) arrays and the messages explaining them."""
    messages: list[str] = []
    if n.size == 0:
        return (UNSUPPORTED,) * 6, [MSG_EMPTY]
    if n.shape != b.shape:
        return (SHAPE_UNMATCHED,) * 6, [MSG_SHAPE]
    if n.ndim == 0:
        messages.append(MSG_ZERO_D)
        n64 = np.asarray(n, dtype=np.float64)
        b64 = np.asarray(b, dtype=np.float64)
        max_abs = _round(float(np.abs(n64 - b64)))
        rel = relative_errors(n.reshape(1), b.reshape(1))
        max_rel = _round(float(rel.max()))
        return (UNSUPPORTED, UNSUPPORTED, max_abs, max_rel, UNSUPPORTED, UNSUPPORTED), messages
    if n.dtype == b.dtype and n.dtype in _FAST_DTYPES:
        fast = _compare_float32(n.reshape(-1), b.reshape(-1), messages)
        if fast is not None:
            return fast, messages
    elif n.dtype == b.dtype and n.dtype.kind in "biu":
        return _compare_integers(n.reshape(-1), b.reshape(-1), messages), messages
    return _compare_general(n, b, messages), messages


def _compare_general(n: np.ndarray, b: np.ndarray, messages: list[str]) -> tuple[Any, ...]:
    """The six metrics of any two arrays of one shape (NaN and inf masked where both have them)."""
    if n.dtype.kind in "fc" or b.dtype.kind in "fc":
        nan_n, nan_b = np.isnan(n), np.isnan(b)
        inf_n, inf_b = np.isinf(n), np.isinf(b)
        if nan_n.any() or nan_b.any() or inf_n.any() or inf_b.any():
            if not (np.array_equal(nan_n, nan_b) and np.array_equal(inf_n, inf_b)):
                messages[:] = [MSG_NAN_POS]
                return (NA,) * 6
            bad = nan_n | inf_n
            n = np.where(bad, 0, n)
            b = np.where(bad, 0, b)
    if n.dtype != b.dtype:
        messages.append(MSG_DTYPE)
    n64 = n.reshape(-1).astype(np.float64)
    b64 = b.reshape(-1).astype(np.float64)
    dot = _dot if _exact_sums(n, b, n64, b64) else np.dot
    cos = cosine(n64, b64, messages, dot)
    diff = n64 - b64
    euc = float(np.sqrt(dot(diff, diff)))
    max_abs = _round(float(np.max(np.abs(diff))))
    rel = relative_errors(n.reshape(-1), b.reshape(-1))
    max_rel = _round(float(rel.max()))
    one = _round(float(np.count_nonzero(rel < 0.001)) / rel.size)
    five = _round(float(np.count_nonzero(rel < 0.005)) / rel.size)
    return (cos, euc, max_abs, max_rel, one, five)


def _compare_integers(n: np.ndarray, b: np.ndarray, messages: list[str]) -> tuple[Any, ...]:
    """:func:`_compare_general` of two flat integer or bool arrays of one dtype, in the
    buffers kept between pairs (fresh float64 copies of every step cost more in page
    faults than the arithmetic). Every operation is the general path's, in its order."""
    size = n.size
    n64, b64, _, mask = _BUFFERS.take(size)
    np.copyto(n64, n)
    np.copyto(b64, b)
    dot = _dot if _exact_sums(n, b, n64, b64) else np.dot
    cos = cosine(n64, b64, messages, dot)
    diff = np.subtract(n64, b64, out=n64)
    euc = sqrt(dot(diff, diff))
    max_abs = _round(np.abs(diff, out=diff).max())
    rel = n64  # relative_errors(n, b): both sides as float64, eps where b is zero
    np.copyto(rel, n)
    if np.equal(b64, 0, out=mask).any():  # + eps where b is zero, + 0.0 (no change) elsewhere:
        eps = np.multiply(mask, EPS64, out=_BUFFERS.take_third(size))  # an integer is never -0.0
        np.add(rel, eps, out=rel)
        np.add(b64, eps, out=b64)
    np.subtract(rel, b64, out=rel)
    np.divide(rel, b64, out=rel)
    np.abs(rel, out=rel)
    max_rel = _round(rel.max())
    one = _round(np.count_nonzero(np.less(rel, 0.001, out=mask)) / size)
    five = _round(np.count_nonzero(np.less(rel, 0.005, out=mask)) / size)
    return (cos, euc, max_abs, max_rel, one, five)


_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))
REUSE_ELEMENTS = 1 << 20
"""Tensors up to this many elements are measured in buffers kept between pairs (about 21
bytes per element, 29 once an integer tensor with zeros has been met: at most ~29 MB per
thread); larger ones get fresh arrays."""


class _Buffers(threading.local):
    """Scratch arrays of the float32 and integer paths, kept per thread and reused from pair
    to pair.

    Allocating and freeing fresh arrays for every pair costs more than the arithmetic: the
    allocator hands the pages back to the system and every new array faults them in again.
    """

    def __init__(self) -> None:
        self.size = 0
        self.wide = (np.empty(0), np.empty(0))
        self.rel = np.empty(0, dtype=np.float32)
        self.mask = np.empty(0, dtype=bool)
        self.third = np.empty(0)

    def take(self, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Two float64 arrays, a float32 and a bool array of ``size`` elements."""
        if size > REUSE_ELEMENTS:
            return np.empty(size), np.empty(size), np.empty(size, dtype=np.float32), np.empty(size, dtype=bool)
        if size > self.size:
            self.size = max(size, 4096)
            self.wide = (np.empty(self.size), np.empty(self.size))
            self.rel = np.empty(self.size, dtype=np.float32)
            self.mask = np.empty(self.size, dtype=bool)
        return self.wide[0][:size], self.wide[1][:size], self.rel[:size], self.mask[:size]

    def take_third(self, size: int) -> np.ndarray:
        """A third float64 array of ``size`` elements (made on first use: only integer
        tensors with zeros need it)."""
        if size > REUSE_ELEMENTS:
            return np.empty(size)
        if size > self.third.size:
            self.third = np.empty(max(size, self.size))
        return self.third[:size]


_BUFFERS = _Buffers()


def _exact_sums(n: np.ndarray, b: np.ndarray, n64: np.ndarray, b64: np.ndarray) -> bool:
    """Whether every dot product of the general path is a sum of small integers.

    True for integer and bool tensors whose products and partial sums all stay below
    2**53: every partial sum is then exact, so the order of the additions cannot change
    the result and numpy's own loop gives what BLAS gives, without waking its threads.
    """
    if n.dtype.kind not in "biu" or b.dtype.kind not in "biu" or not n64.size:
        return False
    top = max(float(n64.max()), -float(n64.min()), float(b64.max()), -float(b64.min()))
    return (2 * top) ** 2 * n64.size <= 2.0**53


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` with numpy's own loop: BLAS would wake its thread pool for every
    call, which costs more than the arithmetic on a shared, busy machine."""
    return float(np.einsum("i,i->", a, b))


def _compare_float32(n: np.ndarray, b: np.ndarray, messages: list[str]) -> tuple[Any, ...] | None:
    """The six metrics of two flat float32/float16 arrays of one dtype, in a few passes.

    Dot products run in float64 (exact products of float32 values), element-wise errors
    in float32 as in the general path. Returns ``None`` when an array holds NaN or inf
    (the general path handles those).
    """
    size = n.size
    n64, b64, rel, mask = _BUFFERS.take(size)
    # the float32 errors first, while both arrays are still in the cache from reading
    max_rel, one, five = _relative_shares(n, b, rel, mask, (b64, n64))
    np.copyto(n64, n)
    np.copyto(b64, b)
    nn = _dot(n64, n64)
    bb = _dot(b64, b64)
    if not (isfinite(nn) and isfinite(bb)):
        return None  # NaN or inf somewhere: the general path masks them
    if size <= 1:
        cos: Any = UNSUPPORTED
    else:
        norm_n, norm_b = sqrt(nn), sqrt(bb)  # correctly rounded, as np.sqrt
        if norm_n <= EPS64 and norm_b <= EPS64:
            cos = 1.0
        elif norm_n <= EPS64:
            messages.append(MSG_COS_NPU_ZERO)
            cos = NAN_TEXT
        elif norm_b <= EPS64:
            messages.append(MSG_COS_BENCH_ZERO)
            cos = NAN_TEXT
        else:
            value = _dot(n64, b64) / (norm_n * norm_b)
            if isnan(value):
                cos = NAN_TEXT
            else:
                value = round(value, 12)
                cos = round(value, 6) if value > 0.9999 else value
    diff = np.subtract(n64, b64, out=n64)
    euc = sqrt(_dot(diff, diff))
    max_abs = _round(max(float(diff.max()), -float(diff.min())))
    return (cos, euc, max_abs, max_rel, one, five)


def _relative_shares(n: np.ndarray, b: np.ndarray, rel: np.ndarray, mask: np.ndarray,
                     spare: tuple[np.ndarray, np.ndarray]) -> tuple[Any, Any, Any]:
    """MaxRelativeErr and the shares of errors below 0.001 and 0.005 of two float32/float16
    arrays, as :func:`relative_errors` gives them; ``rel``, ``mask`` and the two float64
    ``spare`` arrays are scratch space of ``n.size`` elements."""
    if n.dtype != np.float32:
        n = n.astype(np.float32)
        b = b.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero in b: redone below
        top = _relative_top(n, b, rel)
    # only a zero in b (x / 0, 0 / 0), an overflow, NaN or inf makes the largest error inf
    # or NaN: b is scanned for zeros only then
    if not isfinite(top) and np.equal(b, 0, out=mask).any():  # eps where b is zero
        size = n.size
        n32, b32 = spare[0].view(np.float32)[:size], spare[1].view(np.float32)[:size]
        np.copyto(n32, n)
        np.add(n32, _EPS32, out=n32, where=mask)
        np.copyto(b32, b)
        np.add(b32, _EPS32, out=b32, where=mask)
        with np.errstate(invalid="ignore"):  # inf - inf of inputs the general path takes
            top = _relative_top(n32, b32, rel)
    return _round(top), _share_below(rel, top, _ONE_K, mask), _share_below(rel, top, _FIVE_K, mask)


def _relative_top(n: np.ndarray, b: np.ndarray, rel: np.ndarray) -> np.float32:
    """``rel = |n - b| / |b|`` of two float32 arrays (``b`` without zeros: the caller's job),
    written into ``rel``; returns its largest value."""
    np.subtract(n, b, out=rel)
    np.divide(rel, b, out=rel)
    np.abs(rel, out=rel)
    return rel.max()


_EPS32 = np.finfo(np.float32).eps
_ONE_K = np.float32(0.001)
_FIVE_K = np.float32(0.005)


def _share_below(rel: np.ndarray, top: np.float32, limit: np.float32, mask: np.ndarray) -> Any:
    """The rounded share of float32 relative errors below ``limit`` (numpy compares a float32
    array with a Python float in float32); no pass over ``rel`` when its largest value
    ``top`` is already below."""
    if top < limit:
        return 1.0
    return _round(np.count_nonzero(np.less(rel, limit, out=mask)) / rel.size)
