"""Order-preserving alignment of two call sequences (a heaviest common subsequence).

Long sequences are cut at anchors first: calls whose structure key occurs exactly once
on each side, kept in increasing order on both (patience diff). The pieces between anchors
are aligned by dynamic programming when small enough, else greedily in order.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence

MAX_CELLS = 1_000_000
"""Largest piece (target calls x golden calls) aligned by dynamic programming."""

TIE = 0.02
"""A pair must beat the best alignment without it by this much: near ties keep the earlier call."""

Score = Callable[[int, int], float]


def align(keys_t: Sequence[Hashable], keys_g: Sequence[Hashable], score: Score,
          same: Callable[[int, int], bool] | None = None,
          names: tuple[Sequence[str], Sequence[str]] | None = None) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` increasing in both, maximising the summed ``score`` of pairs.

    Only calls with equal keys may pair; ``score(i, j) <= 0`` forbids a pair. ``same(i, j)``
    (optional) recognises calls that obviously correspond, to strip common runs cheaply;
    with ``names`` (unique call names of each side) a piece too large for dynamic
    programming is first cut at calls of equal name that ``same`` confirms.
    """
    out: list[tuple[int, int]] = []
    golden_at = {name: j for j, name in enumerate(names[1])} if names is not None and same is not None else None
    _align(keys_t, keys_g, score, same, 0, len(keys_t), 0, len(keys_g), out,
           (names[0], golden_at) if golden_at is not None else None)
    out.sort()
    return out


def _align(kt, kg, score, same, t0, t1, g0, g1, out, names=None) -> None:
    # common head and tail
    if same is not None:
        while t0 < t1 and g0 < g1 and kt[t0] == kg[g0] and same(t0, g0):
            out.append((t0, g0))
            t0 += 1
            g0 += 1
        while t0 < t1 and g0 < g1 and kt[t1 - 1] == kg[g1 - 1] and same(t1 - 1, g1 - 1):
            out.append((t1 - 1, g1 - 1))
            t1 -= 1
            g1 -= 1
    if t0 >= t1 or g0 >= g1:
        return
    if (t1 - t0) * (g1 - g0) <= MAX_CELLS:
        _dp(kt, kg, score, t0, t1, g0, g1, out)
        return
    anchors = _name_anchors(kt, kg, same, names, t0, t1, g0, g1) if names is not None else []
    if not anchors:
        anchors = _anchors(kt, kg, score, t0, t1, g0, g1)
    if not anchors:
        _greedy(kt, kg, score, t0, t1, g0, g1, out)
        return
    pt, pg = t0, g0
    for i, j in anchors:
        _align(kt, kg, score, same, pt, i, pg, j, out, names)
        out.append((i, j))
        pt, pg = i + 1, j + 1
    _align(kt, kg, score, same, pt, t1, pg, g1, out, names)


def _name_anchors(kt, kg, same, names, t0, t1, g0, g1) -> list[tuple[int, int]]:
    """Calls of equal name on both sides that ``same`` confirms, longest increasing run."""
    names_t, golden_at = names
    cands = []
    for i in range(t0, t1):
        j = golden_at.get(names_t[i], -1)
        if g0 <= j < g1 and kt[i] == kg[j] and same(i, j):
            cands.append((i, j))
    return _increasing(cands)


def _anchors(kt, kg, score, t0, t1, g0, g1) -> list[tuple[int, int]]:
    """Unique-on-both-sides keys, longest increasing run of their golden positions."""
    count_t: dict = {}
    count_g: dict = {}
    for i in range(t0, t1):
        count_t[kt[i]] = -1 if kt[i] in count_t else i
    for j in range(g0, g1):
        count_g[kg[j]] = -1 if kg[j] in count_g else j
    cands = []
    for key, i in count_t.items():
        j = count_g.get(key, -1)
        if i >= 0 and j >= 0 and score(i, j) > 0.5:
            cands.append((i, j))
    cands.sort()
    return _increasing(cands)


def _increasing(cands: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``cands`` (sorted by i) increasing in j (patience sorting), deterministic."""
    tails: list[int] = []
    tails_idx: list[int] = []
    prev = [-1] * len(cands)
    for n, (_, j) in enumerate(cands):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tails_idx.append(n)
        else:
            tails[k] = j
            tails_idx[k] = n
        prev[n] = tails_idx[k - 1] if k else -1
    seq = []
    n = tails_idx[-1] if tails_idx else -1
    while n >= 0:
        seq.append(cands[n])
        n = prev[n]
    seq.reverse()
    return seq


def _greedy(kt, kg, score, t0, t1, g0, g1, out, window: int = 64) -> None:
    """In-order pairing for pieces too large for dynamic programming and without anchors:
    each target call takes the best-scoring golden call of its key among the next ``window``."""
    j = g0
    for i in range(t0, t1):
        best, best_k = 0.5, -1
        for k in range(j, min(g1, j + window)):
            if kt[i] == kg[k]:
                s = score(i, k)
                if s > best + TIE:
                    best, best_k = s, k
        if best_k >= 0:
            out.append((i, best_k))
            j = best_k + 1


def _dp(kt, kg, score, t0, t1, g0, g1, out) -> None:
    n, m = t1 - t0, g1 - g0
    positions: dict = {}
    for j in range(m):
        positions.setdefault(kg[g0 + j], []).append(j)
    prev = [0.0] * (m + 1)
    back = []  # per target row: {j: True} for cells reached through a pair
    for i in range(n):
        cur = [0.0] * (m + 1)
        diag: dict[int, float] = {}
        for j in positions.get(kt[t0 + i], ()):
            s = score(t0 + i, g0 + j)
            if s > 0:
                diag[j + 1] = prev[j] + s
        took: set[int] = set()
        for j in range(1, m + 1):
            best = prev[j] if prev[j] >= cur[j - 1] else cur[j - 1]
            v = diag.get(j)
            if v is not None and v > best + TIE:
                best = v
                took.add(j)
            cur[j] = best
        back.append((took, cur))
        prev = cur
    # trace back
    i, j = n, m
    zero = [0.0] * (m + 1)
    while i > 0 and j > 0:
        took, cur = back[i - 1]
        if j in took:
            out.append((t0 + i - 1, g0 + j - 1))
            i -= 1
            j -= 1
            continue
        above = back[i - 2][1] if i >= 2 else zero
        if above[j] >= cur[j - 1]:
            i -= 1
        else:
            j -= 1
