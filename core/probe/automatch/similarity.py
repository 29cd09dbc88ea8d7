"""How alike two calls are: structure (op, shapes, dtypes) and data (statistics fingerprints)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from probe.automatch.calls import Call, Tensor

STAT_SCALE = 0.02
"""Relative statistics difference at which a tensor counts as e^-1 alike."""


def structure_key(call: Call) -> tuple:
    """What two calls must share to be paired at all.

    APIs: the neutral op name and the output shapes/dtype kinds. Modules: the output shapes
    (classes may be renamed). Inputs and parameters may differ between frameworks (MindSpore's
    BatchNorm holds its moving statistics as parameters), so they count in the score.
    """
    outputs = tuple((t.shape, t.kind) for t in call.tensors if t.state == "output")
    if call.kind == "api":
        return ("api", call.direction, call.op, outputs)
    return ("module", call.direction, outputs)


def tensor_similarity(a: Tensor, b: Tensor) -> float | None:
    """1 for equal statistics, falling towards 0 as they drift apart; ``None`` without statistics."""
    if a.stats is None or b.stats is None:
        if a.row.md5 is not None and b.row.md5 is not None:
            return 1.0 if a.row.md5 == b.row.md5 else 0.5
        return None
    amax, amin, amean, anorm = a.stats
    bmax, bmin, bmean, bnorm = b.stats
    scale = max(abs(amax), abs(amin), abs(bmax), abs(bmin), 1e-30)
    diff = max(abs(amax - bmax), abs(amin - bmin), abs(amean - bmean)) / scale
    norm_scale = max(abs(anorm), abs(bnorm), 1e-30)
    diff = max(diff, abs(anorm - bnorm) / norm_scale)
    return math.exp(-diff / STAT_SCALE)


def _align_tensors(ta: Sequence[Tensor], tb: Sequence[Tensor]) -> list[tuple[Tensor, Tensor]]:
    """Tensors of one group paired in order, skipping ones whose shape differs (greedy, in order)."""
    pairs = []
    j = 0
    for a in ta:
        for k in range(j, len(tb)):
            if tb[k].shape == a.shape and tb[k].kind == a.kind:
                pairs.append((a, tb[k]))
                j = k + 1
                break
    return pairs


def data_similarity(t: Call, g: Call) -> tuple[float | None, float]:
    """``(similarity of the statistics, share of tensors that found a partner of equal shape)``.

    The similarity is the mean over paired tensors (inputs, parameters, outputs); ``None``
    when neither call holds statistics.
    """
    sims: list[float] = []
    paired = 0
    total = 0
    for state in ("input", "parameters", "output"):
        ta = [x for x in t.tensors if x.state == state]
        tb = [x for x in g.tensors if x.state == state]
        total += max(len(ta), len(tb))
        for a, b in _align_tensors(ta, tb):
            paired += 1
            sim = tensor_similarity(a, b)
            if sim is not None:
                sims.append(sim)
    coverage = paired / total if total else 1.0
    if not sims:
        return None, coverage
    return sum(sims) / len(sims), coverage


def name_tokens(call: Call) -> set[str]:
    """Words of a call's path and class, for a small tie-breaking bonus."""
    words = set()
    for part in call.path.replace("_", ".").split("."):
        if part and not part.isdigit():
            words.add(part.lower())
    words.add(call.op.lower())
    return words


def name_bonus(t: Call, g: Call) -> float:
    """0..1: how much the names agree (equal class, shared path words, equal index)."""
    if t.kind == "api":
        return 1.0 if t.number == g.number else 0.0
    score = 0.5 if t.op == g.op else 0.0
    score += 0.1 if t.number == g.number else 0.0
    tw, gw = name_tokens(t), name_tokens(g)
    if tw or gw:
        score += 0.4 * len(tw & gw) / len(tw | gw)
    return score
