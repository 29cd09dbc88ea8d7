"""The diagnosis ranking computed node by node, as it was before it ran a column at a time: the
reference the column-wise :func:`probe.diagnosis.rank.diagnose_facts` must equal exactly."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from probe.diagnosis.facts import NodeFacts, RankFacts
from probe.diagnosis.floor import (
    DEFAULT_GAIN, LOCAL, MAX_GAIN, MIN_GAIN, local_floor, parameter_floor, unit_roundoff,
)
from probe.diagnosis.rank import EXCESS, EXCESS_BACKWARD, EXCESS_REDUCED, MAX_SCORE, forward_of, sort_key
from probe.diagnosis.report import (
    ARGUMENT, DIVERGENT, IDENTICAL, INTRODUCED, NAN_SOURCE, NOISE, PARAMETER, STRUCTURE, Diagnosis, Suspect,
)


def plain_kind_gains(samples: Iterable[tuple[str, float, float, str, int]]) -> dict[str, float]:
    ratios: dict[str, list[float]] = defaultdict(list)
    for kind, dev_in, dev_out, dtype, width in samples:
        ratios[kind].append(dev_out / (dev_in + local_floor(dtype, width)))
    return {kind: DEFAULT_GAIN if len(values) < 3 else min(MAX_GAIN, max(MIN_GAIN, statistics.median(values)))
            for kind, values in ratios.items()}


def _pct(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value * 100:.3g}%"


class _View:
    def __init__(self, facts: RankFacts) -> None:
        self.facts = facts
        nodes = facts.nodes
        self.by_entry = by_entry = {n.entry: n for n in nodes}
        count = len(nodes)
        in_eff, nan_in, prior, nan_before = [0.0] * count, [False] * count, [0.0] * count, [False] * count
        running, nan_seen = 0.0, False
        for i, node in enumerate(nodes):
            prior[i], nan_before[i] = running, nan_seen
            if node.out_dev > running and node.kind != "parameters_grad" and math.isfinite(node.out_dev):
                running = node.out_dev
            nan_seen = nan_seen or node.nan_out
            dev, nan = node.in_dev, node.nan_in
            if "backward" in node.entry:
                fwd = by_entry.get(forward_of(node.entry) or "")
                if fwd is not None:
                    dev = max(dev, fwd.in_dev, fwd.out_dev, fwd.param_dev)
                    nan = nan or fwd.nan_in or fwd.nan_out
            in_eff[i], nan_in[i] = dev, nan
        if len(by_entry) != count:
            last = {n.entry: i for i, n in enumerate(nodes)}
            at = [last[n.entry] for n in nodes]
            in_eff, nan_in, prior, nan_before = ([values[j] for j in at] for values in (in_eff, nan_in, prior, nan_before))
        self.in_eff, self.nan_in, self.prior, self.nan_before = in_eff, nan_in, prior, nan_before
        groups = [f"{n.op}:{'b' if n.backward else 'f'}" for n in nodes]
        gains = plain_kind_gains(
            (group, dev, n.out_dev, n.dtype, n.width) for n, group, dev in zip(nodes, groups, in_eff)
            if n.kind != "parameters_grad" and math.isfinite(n.out_dev) and math.isfinite(dev))
        floors = [gains.get(group, 2.0) * dev + local_floor(n.dtype, n.width) if math.isfinite(dev) else math.inf
                  for n, group, dev in zip(nodes, groups, in_eff)]
        self.floors = [floors[j] for j in at] if count != len(by_entry) else floors


def _suspect(view: _View, node: NodeFacts, i: int) -> Suspect | None:
    if node.kind == "parameters_grad":
        return None
    floor = view.floors[i]
    if node.matched == 0 and node.unmatched:
        return _make(view, node, floor, STRUCTURE, 1.0, f"{node.entry} has no golden counterpart")
    nan_in = view.nan_in[i]
    if node.nan_out and not nan_in:
        return _make(view, node, floor, NAN_SOURCE, MAX_SCORE,
                     f"its inputs are finite (worst {node.worst_in or 'none'} off by {_pct(view.in_eff[i])}) "
                     f"but {node.worst_out} holds NaN/inf that the golden run does not")
    if nan_in:
        if not view.nan_before[i] and not node.backward:
            return _make(view, node, floor, PARAMETER, MAX_SCORE,
                         f"input {node.worst_in} holds NaN/inf that the golden run does not, and no earlier call "
                         f"produced it (a parameter, buffer or data)")
        return None
    local = local_floor(node.dtype, node.width)
    out_excess = node.out_dev / floor if floor > 0 else (math.inf if node.out_dev > 0 else 0.0)
    cast = parameter_floor(node.dtype)
    if node.param_dev > cast:
        return _make(view, node, floor, PARAMETER, node.param_dev / cast,
                     f"parameter {node.worst_param} differs by {_pct(node.param_dev)} "
                     f"(a cast to {node.dtype or 'its dtype'} explains {_pct(cast)})")
    if node.leaf_dev > max(cast, view.prior[i]) and node.leaf_dev >= view.in_eff[i] * 0.999 and not node.backward:
        return _make(view, node, floor, PARAMETER, node.leaf_dev / cast,
                     f"input {node.worst_leaf} differs by {_pct(node.leaf_dev)} and no earlier call produced it "
                     f"(a parameter, buffer or data; a cast to {node.dtype or 'its dtype'} explains {_pct(cast)})")
    if node.argument and node.out_dev > local:
        return _make(view, node, floor, ARGUMENT, max(out_excess, 1.0),
                     f"{node.argument}; its output {node.worst_out} differs by {_pct(node.out_dev)}")
    if out_excess > (EXCESS_BACKWARD if node.backward else EXCESS):
        return _make(view, node, floor, INTRODUCED, out_excess,
                     f"inputs differ by {_pct(view.in_eff[i])}, {node.worst_out} by {_pct(node.out_dev)}: "
                     f"{out_excess:.3g}x the {_pct(floor)} its inputs and {node.dtype or 'dtype'} rounding explain")
    reduced_excess = node.reduced_dev / floor if floor > 0 else (math.inf if node.reduced_dev > 0 else 0.0)
    if reduced_excess > EXCESS_REDUCED:
        return _make(view, node, floor, INTRODUCED, reduced_excess,
                     f"inputs differ by {_pct(view.in_eff[i])}, the reduction {node.worst_reduced} by "
                     f"{_pct(node.reduced_dev)}: {reduced_excess:.3g}x the {_pct(floor)} its inputs and "
                     f"{node.dtype or 'dtype'} rounding explain")
    return None


def _make(view: _View, node: NodeFacts, floor: float, kind: str, score: float, evidence: str) -> Suspect:
    facts = view.facts
    return Suspect(node=node.entry, rank=facts.rank, step=facts.step, kind=kind,
                   score=round(min(score, MAX_SCORE), 3), evidence=evidence,
                   direction="backward" if node.backward else "forward", order=node.order, error=node.out_dev,
                   floor=floor)


def _explained_modules(view: _View, suspects: list[Suspect]) -> set[str]:
    explained: set[str] = set()
    for suspect in suspects:
        node = view.by_entry.get(suspect.node)
        seen = 0
        parent = node.module if node is not None else ""
        while parent and parent not in explained and seen < 1000:
            explained.add(parent)
            up = view.by_entry.get(parent)
            parent = up.module if up is not None else ""
            seen += 1
    return explained


def plain_diagnose_facts(ranks: Sequence[RankFacts]) -> Diagnosis:
    """The diagnosis over every rank and step, one node at a time."""
    suspects: list[Suspect] = []
    series: list[dict[str, Any]] = []
    identical = True
    floor_stats: dict[str, dict[str, Any]] = {}
    for facts in sorted(ranks, key=lambda f: (f.step, f.rank)):
        view = _View(facts)
        found = [s for s in (_suspect(view, n, i) for i, n in enumerate(facts.nodes)) if s is not None]
        explained = _explained_modules(view, [s for s in found if s.kind != STRUCTURE])
        found = [s for s in found if s.node not in explained]
        suspects.extend(found)
        if facts.golden_only or any(not n.exact or n.unmatched for n in facts.nodes):
            identical = False
        flagged = {s.node for s in found}
        for node in facts.nodes:
            dtype = node.dtype
            if not dtype or node.kind == "parameters_grad" or node.entry in flagged:
                continue
            entry = floor_stats.get(dtype)
            if entry is None:
                entry = floor_stats[dtype] = {"unit_roundoff": unit_roundoff(dtype), "local_floor": local_floor(dtype),
                                              "calls": 0, "max_error_within_floor": 0.0}
            entry["calls"] += 1
            if node.out_dev > entry["max_error_within_floor"] and math.isfinite(node.out_dev):
                entry["max_error_within_floor"] = node.out_dev
        points = [{"node": node.entry, "order": node.order, "error": node.out_dev if node.out_dev < math.inf else None,
                   "floor": floor if floor < math.inf else None, "module": node.module,
                   "direction": "backward" if node.backward else "forward", "kind": node.kind, "suspect": None}
                  for node, floor in zip(facts.nodes, view.floors) if node.kind != "parameters_grad"]
        series.append({"rank": facts.rank, "step": facts.step, "label": f"step{facts.step}/rank{facts.rank}",
                       "points": points})
    suspects.sort(key=sort_key)
    marks = {(line["step"], line["rank"], p["node"]): p for line in series for p in line["points"]}
    for position, suspect in enumerate(suspects, 1):
        point = marks.get((suspect.step, suspect.rank, suspect.node))
        if point is not None:
            point["suspect"] = position
    for dtype, entry in floor_stats.items():
        entry["why"] = (f"{dtype} rounds to {entry['unit_roundoff']:.3g} (unit roundoff); a call may add "
                        f"{LOCAL:g} of those and amplify its inputs' deviation as calls of its kind typically do")
    verdict = DIVERGENT if suspects else IDENTICAL if identical else NOISE
    return Diagnosis(verdict=verdict, suspects=suspects if verdict == DIVERGENT else [],
                     noise_floor=floor_stats, series=series)
