"""Pair the calls and rows of two dumps whose names differ.

1. Forward calls (APIs and modules, in dump order) are aligned as two sequences: only
   calls of the same structure (op, output and parameter shapes) may pair; a pair scores by
   how alike the statistics of its tensors are (inputs, parameters, outputs: the data flow
   of the step), by the names, and order is kept.
2. Every pair gets a confidence from its data, its neighbours (are the calls before and
   after paired with each other too?) and its names; pairs below ``min_confidence`` are
   dropped: a wrong pair is worse than none.
3. Backward calls follow their forward call, ``parameters_grad`` its module.
4. Inside a call pair, rows pair by their suffix (``.input.0``, ``.parameters.weight``) when
   their shapes agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from probe.automatch.align import align
from probe.automatch.calls import Call, build_calls
from probe.automatch.similarity import data_similarity, name_bonus, structure_key
from probe.model import Row

MIN_CONFIDENCE = 0.55
"""Pairs below this confidence are not made."""
MIN_NAMED_CONFIDENCE = 0.4
"""Pairs whose names agree and whose neighbours pair alike need only this much (their data
may differ: the divergence a compare is looking for)."""
REVIEW_CONFIDENCE = 0.8
"""Pairs below this confidence are marked for review."""


@dataclass(frozen=True, slots=True)
class RowMatch:
    """One target row and the golden row chosen for it (``None``: no counterpart)."""

    target: str
    golden: str | None
    confidence: float
    why: str

    @property
    def needs_review(self) -> bool:
        """A pair whose confidence is below :data:`REVIEW_CONFIDENCE`."""
        return self.golden is not None and self.confidence < REVIEW_CONFIDENCE

    def to_dict(self) -> dict[str, object]:
        return {"target": self.target, "golden": self.golden, "confidence": self.confidence, "why": self.why}


@dataclass(frozen=True, slots=True)
class CallMatch:
    """Two paired calls (dump entries) and how sure the pairing is."""

    target: str
    golden: str
    confidence: float
    why: str


@dataclass
class MatchResult:
    """Everything automatic matching decided for one pair of dumps."""

    calls: list[CallMatch]
    rows: list[RowMatch]

    def row_map(self) -> dict[str, str]:
        """``{target row name: golden row name}`` of the rows that were paired."""
        return {r.target: r.golden for r in self.rows if r.golden is not None}


class _Scorer:
    """Pair scores of forward calls, cached (the alignment asks for a cell more than once)."""

    def __init__(self, ts: Sequence[Call], gs: Sequence[Call]) -> None:
        self.ts, self.gs = ts, gs
        self.cache: dict[tuple[int, int], tuple[float, float | None, float, float]] = {}

    def parts(self, i: int, j: int) -> tuple[float, float | None, float, float]:
        got = self.cache.get((i, j))
        if got is None:
            t, g = self.ts[i], self.gs[j]
            sim, coverage = data_similarity(t, g)
            names = name_bonus(t, g)
            data = 0.5 if sim is None else sim
            # an API's call index only breaks exact ties (indices shift with one extra call),
            # a module's class and path words count more (they survive wrappers and shifts)
            score = 0.05 + data * coverage + (0.25 * names if t.kind == "module" else 0.01 * names)
            got = self.cache[(i, j)] = (score, sim, coverage, names)
        return got

    def score(self, i: int, j: int) -> float:
        return self.parts(i, j)[0]

    def same(self, i: int, j: int) -> bool:
        t, g = self.ts[i], self.gs[j]
        if t.entry != g.entry:
            return False
        sim = self.parts(i, j)[1]
        return sim is None or sim >= 0.9


def _confidence(sim: float | None, coverage: float, names: float, context: float) -> float:
    data = 0.6 if sim is None else sim
    value = 0.55 * data * coverage + 0.3 * context + 0.15 * names
    return round(min(1.0, value), 3)


def _why(t: Call, g: Call, sim: float | None, context: float) -> str:
    parts = []
    if t.kind == "api":
        parts.append(f"same op {t.op}" if t.op == g.op else f"op {t.op} ~ {g.op}, alone between paired calls")
    else:
        parts.append("same class" if t.op == g.op else f"class {t.op} ~ {g.op}")
    parts.append("same shapes")
    if sim is not None:
        parts.append(f"statistics {sim:.0%} alike")
    if context >= 1.0:
        parts.append("neighbours paired alike")
    elif context > 0:
        parts.append("one neighbour paired alike")
    return ", ".join(parts)


def match_forward(ts: Sequence[Call], gs: Sequence[Call]) -> list[CallMatch]:
    """Align the forward calls of both sides and keep the confident pairs."""
    kt = [structure_key(c) for c in ts]
    kg = [structure_key(c) for c in gs]
    scorer = _Scorer(ts, gs)
    pairs = align(kt, kg, scorer.score, scorer.same, ([c.entry for c in ts], [c.entry for c in gs]))
    pairs = sorted(pairs + _renamed_ops(ts, gs, pairs, scorer))
    partner = dict(pairs)
    by_entry = {ts[i].entry: gs[j].entry for i, j in pairs}
    matches = []
    for i, j in pairs:
        _, sim, coverage, names = scorer.parts(i, j)
        context = 0.5 * (partner.get(i - 1) == j - 1 if i > 0 else 1) + 0.5 * (
            partner.get(i + 1) == j + 1 if i + 1 < len(ts) else 1)
        confidence = _confidence(sim, coverage, names, context)
        why = _why(ts[i], gs[j], sim, context)
        parent_t, parent_g = ts[i].parent, gs[j].parent
        if parent_t is not None and by_entry.get(parent_t, parent_g) != parent_g:
            confidence = round(confidence * TREE_PENALTY, 3)
            why += ", but its module is paired with another one"
        if confidence >= MIN_CONFIDENCE or (confidence >= MIN_NAMED_CONFIDENCE and names >= 0.99 and context >= 1):
            matches.append(CallMatch(ts[i].entry, gs[j].entry, confidence, why))
    return matches


TREE_PENALTY = 0.7
"""Confidence factor of a pair whose parent modules (construct.json) are paired elsewhere."""
RENAMED_OP_SIMILARITY = 0.95
"""Statistics similarity two calls of different op names need to pair (see :func:`_renamed_ops`)."""


def _renamed_ops(ts: Sequence[Call], gs: Sequence[Call], pairs: Sequence[tuple[int, int]],
                 scorer: _Scorer) -> list[tuple[int, int]]:
    """Pairs of APIs whose op names differ (MindSpore's ``bias_add`` vs PyTorch's ``add``).

    Only a call left alone between two aligned pairs on each side qualifies, and only when
    the outputs agree in shape (the structure key without the op), at least half of all
    tensors have a partner of the same shape and their statistics all but agree.
    """
    found = []
    bounds = [(-1, -1), *sorted(pairs), (len(ts), len(gs))]
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
        if i1 - i0 != 2 or j1 - j0 != 2:
            continue
        i, j = i0 + 1, j0 + 1
        t, g = ts[i], gs[j]
        if t.kind != "api" or g.kind != "api" or t.direction != g.direction:
            continue
        if structure_key(t)[3:] != structure_key(g)[3:]:
            continue
        sim, coverage = data_similarity(t, g)
        if sim is not None and sim >= RENAMED_OP_SIMILARITY and coverage >= 0.5 and t.group("output"):
            scorer.cache[(i, j)] = (sim, sim, coverage, 0.0)
            found.append((i, j))
    return found


def _follow_backward(calls_t: Sequence[Call], calls_g: Sequence[Call], forward: Sequence[CallMatch]) -> list[CallMatch]:
    """Backward calls and ``parameters_grad`` entries, from the forward pairs."""
    g_entries = {c.entry for c in calls_g}
    by_forward = {m.target: m for m in forward}
    out = []
    first_module_pair: dict[tuple[str, str], CallMatch] = {}
    for c in calls_t:
        if c.direction == "forward" and c.kind == "module" and c.entry in by_forward:
            first_module_pair.setdefault((c.path, c.op), by_forward[c.entry])
    golden_modules = {c.entry: c for c in calls_g if c.kind == "module"}
    pgrad_g = {(c.path, c.op, c.number): c.entry for c in calls_g if c.direction == "parameters_grad"}
    for c in calls_t:
        if c.direction == "backward":
            fwd = _forward_name(c)
            m = by_forward.get(fwd)
            if m is None:
                continue
            g_name = _backward_name(m.golden)
            if g_name in g_entries:
                out.append(CallMatch(c.entry, g_name, m.confidence, "backward of " + m.golden))
        elif c.direction == "parameters_grad":
            m = first_module_pair.get((c.path, c.op))
            g_call = golden_modules.get(m.golden) if m is not None else None
            if g_call is None:
                continue
            g_name = pgrad_g.get((g_call.path, g_call.op, c.number))
            if g_name is not None:
                out.append(CallMatch(c.entry, g_name, m.confidence, "gradients of " + m.golden))
    return out


def _forward_name(call: Call) -> str:
    if call.kind == "api":
        return call.entry[: -len("backward")] + "forward"
    return call.entry.replace(".backward.", ".forward.")


def _backward_name(entry: str) -> str:
    if entry.endswith(".forward"):
        return entry[: -len("forward")] + "backward"
    return entry.replace(".forward.", ".backward.")


def _pair_rows(t: Call, g: Call, m: CallMatch) -> list[RowMatch]:
    """Rows of two paired calls pair by suffix (``.input.0``, ``.parameters.weight``) when their
    shapes agree; a row whose suffix the golden call lacks, or whose shape differs, stays unpaired
    (MindSpore's ``gamma`` is not PyTorch's ``weight`` by name, and a guess may be wrong)."""
    out = []
    cut = len(t.entry)
    find = g.by_suffix.get
    for row in t.rows:
        cand = find(row.name[cut:])
        if cand is None:
            out.append(RowMatch(row.name, None, 0.0, NO_SUCH_ROW + g.entry))
        elif cand.shape != row.shape:
            out.append(RowMatch(row.name, None, 0.0, OTHER_SHAPE + cand.name))
        else:
            out.append(RowMatch(row.name, cand.name, m.confidence, m.why))
    return out


NO_SUCH_ROW = "no row of this name in "
OTHER_SHAPE = "another shape in "
NO_CALL = "no call of the same structure and data"


def auto_match(target_rows: Sequence[Row], golden_rows: Sequence[Row],
               rename: Callable[[str], str] | None = None,
               trees: tuple[Mapping[str, str | None] | None, Mapping[str, str | None] | None] = (None, None),
               ) -> MatchResult:
    """Pair the rows of two dumps (rows in dump order) from structure and data.

    ``rename`` maps a target API name to the golden framework's spelling (an API table);
    ``trees`` are the module trees (construct.json) of both sides, when known: a pair whose
    parent modules are paired with other modules loses confidence.
    Deterministic: the same dumps give the same pairs.
    """
    calls_t = build_calls(target_rows, rename, trees[0])
    calls_g = build_calls(golden_rows, None, trees[1])
    fwd_t = [c for c in calls_t if c.direction == "forward"]
    fwd_g = [c for c in calls_g if c.direction == "forward"]
    forward = match_forward(fwd_t, fwd_g)
    call_matches = forward + _follow_backward(calls_t, calls_g, forward)
    by_target = {m.target: m for m in call_matches}
    golden_calls = {c.entry: c for c in calls_g}
    rows: list[RowMatch] = []
    for c in calls_t:
        m = by_target.get(c.entry)
        if m is None:
            rows.extend(RowMatch(r.name, None, 0.0, NO_CALL) for r in c.rows)
        else:
            rows.extend(_pair_rows(c, golden_calls[m.golden], m))
    order = {c.entry: c.order for c in calls_t}
    call_matches.sort(key=lambda m: order[m.target])
    return MatchResult(call_matches, rows)

