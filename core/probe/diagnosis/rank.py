"""Rank suspects: which calls introduced a difference the noise floor does not explain.

For every entry of every rank and step (see :mod:`probe.diagnosis.facts`):

* the *input deviation* is the worst deviation of its inputs; for a backward call the
  tensors its forward call saved count as inputs too;
* its *floor* is what the dtypes explain (:mod:`probe.diagnosis.floor`);
* it is a suspect when its outputs turn finite inputs into NaN/inf (``nan_source``), when a
  parameter or an input no earlier call produced differs beyond rounding (``parameter``),
  when a non-tensor argument differs (``argument``), when its output deviation is far
  above its floor (``introduced``), or when the call has no golden counterpart at all
  (``structure``).

Suspects are ranked by step, then forward before backward, numerical suspects before calls
with no golden counterpart, then in execution order: the first call that went wrong comes
before everything that may be its consequence. A module call whose own suspect lies
inside it is dropped: the inner call is the more precise answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from probe.diagnosis.facts import NodeFacts, RankFacts
from probe.diagnosis.floor import LOCAL, kind_gains, local_floor, parameter_floor, unit_roundoff
from probe.diagnosis.report import (
    ARGUMENT, DIVERGENT, IDENTICAL, INTRODUCED, NAN_SOURCE, NOISE, PARAMETER, STRUCTURE, Diagnosis, Suspect,
)

EXCESS = 4.0
"""An output deviation this many times its floor is a new error, not rounding."""
EXCESS_BACKWARD = 8.0
"""The same for the gradients a backward call passes on (they also carry the forward pass's
rounding through the saved tensors)."""
EXCESS_REDUCED = 64.0
"""The same for a backward call's reductions (weight and bias gradients): sums with heavy
cancellation, whose relative error the statistics cannot bound. A backward-only fault (a
scaled or wrong gradient) shows in the gradients passed on."""
MAX_SCORE = 1e6
KIND_TIER = {NAN_SOURCE: 0, PARAMETER: 1, ARGUMENT: 1, INTRODUCED: 2, STRUCTURE: 3}


def forward_of(entry: str) -> str | None:
    """The forward call whose saved tensors a backward call uses (``X.0.backward`` -> ``X.0.forward``,
    ``Module.m.Linear.backward.0`` -> ``Module.m.Linear.forward.0``), else ``None``."""
    if entry.endswith("backward") and (len(entry) == 8 or entry[-9] == "."):  # the last name part
        return entry[:-8] + "forward"
    head, dot, tail = entry.rpartition(".")
    if dot and head.endswith("backward") and (len(head) == 8 or head[-9] == "."):  # the one before it
        return head[:-8] + "forward." + tail
    return None


def _pct(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value * 100:.3g}%"


class _RankView:
    """One rank of one step with the derived numbers the ranking needs, one list entry per node
    (nodes of one entry, if an entry repeats, share the numbers of its last node)."""

    def __init__(self, facts: RankFacts) -> None:
        self.facts = facts
        nodes = facts.nodes
        self.by_entry = by_entry = {n.entry: n for n in nodes}
        count = len(nodes)
        in_eff = [0.0] * count
        nan_in = [False] * count
        prior = [0.0] * count  # the worst output deviation of the calls before each one
        nan_before = [False] * count
        running, nan_seen = 0.0, False
        isfinite = math.isfinite
        for i, node in enumerate(nodes):
            prior[i] = running
            nan_before[i] = nan_seen
            out_dev = node.out_dev
            if out_dev > running and node.kind != "parameters_grad" and isfinite(out_dev):
                running = out_dev
            nan_seen = nan_seen or node.nan_out
            dev, nan = node.in_dev, node.nan_in
            if "backward" in node.entry:
                fwd = by_entry.get(forward_of(node.entry) or "")
                if fwd is not None:
                    dev = max(dev, fwd.in_dev, fwd.out_dev, fwd.param_dev)
                    nan = nan or fwd.nan_in or fwd.nan_out
            in_eff[i] = dev
            nan_in[i] = nan
        if len(by_entry) != count:  # a repeated entry: every node of it reads its last node's numbers
            last = {n.entry: i for i, n in enumerate(nodes)}
            at = [last[n.entry] for n in nodes]
            in_eff, nan_in, prior, nan_before = ([values[j] for j in at] for values in (in_eff, nan_in, prior, nan_before))
        else:
            at = range(count)
        self.in_eff, self.nan_in, self.prior, self.nan_before = in_eff, nan_in, prior, nan_before
        shared: dict[tuple[str, bool], str] = {}  # one string per op and direction
        groups = [shared.get((n.op, n.backward)) or shared.setdefault((n.op, n.backward),
                                                                      f"{n.op}:{'b' if n.backward else 'f'}")
                  for n in nodes]
        samples = (  # one at a time: a list of them would hold a tuple per node
            (group, dev, n.out_dev, n.dtype, n.width)
            for n, group, dev in zip(nodes, groups, in_eff)
            if n.kind != "parameters_grad" and isfinite(n.out_dev) and isfinite(dev)
        )
        gains = self.gains = kind_gains(samples)
        floors = [
            gains.get(group, 2.0) * dev + local_floor(n.dtype, n.width) if isfinite(dev) else math.inf
            for n, group, dev in zip(nodes, groups, in_eff)
        ]
        self.floors = [floors[j] for j in at] if count != len(by_entry) else floors


def _suspect(view: _RankView, node: NodeFacts, i: int) -> Suspect | None:
    """The suspect node ``i`` of the view (``node``) is, if any."""
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
        return None  # NaN/inf propagated from an input
    local = local_floor(node.dtype, node.width)
    out_excess = node.out_dev / floor if floor > 0 else (math.inf if node.out_dev > 0 else 0.0)
    cast = parameter_floor(node.dtype)
    if node.param_dev > cast:
        return _make(view, node, floor, PARAMETER, node.param_dev / cast,
                     f"parameter {node.worst_param} differs by {_pct(node.param_dev)} "
                     f"(a cast to {node.dtype or 'its dtype'} explains {_pct(cast)})")
    # an input no dumped call produced is a parameter or buffer when it differs by more than a cast
    # AND more than anything before it (else it may be a slice or cast of an earlier output)
    if node.leaf_dev > max(cast, view.prior[i]) and node.leaf_dev >= view.in_eff[i] * 0.999 \
            and not node.backward:
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


def _make(view: _RankView, node: NodeFacts, floor: float, kind: str, score: float, evidence: str) -> Suspect:
    facts = view.facts
    return Suspect(node=node.entry, rank=facts.rank, step=facts.step, kind=kind,
                   score=round(min(score, MAX_SCORE), 3), evidence=evidence,
                   direction="backward" if node.backward else "forward", order=node.order, error=node.out_dev,
                   floor=floor)


def _explained_modules(view: _RankView, suspects: list[Suspect]) -> set[str]:
    """Module calls that contain a suspect (through construct.json's parent links)."""
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


def sort_key(suspect: Suspect) -> tuple[Any, ...]:
    """Earlier steps first, forward before backward, numerical suspects before calls with no golden
    counterpart (mapping gaps are common and say nothing about precision), then in execution order:
    what follows the first call that went wrong may be its consequence (NaN/inf propagation, a
    parameter read by later ops)."""
    return (suspect.step, suspect.direction != "forward", suspect.kind == STRUCTURE, suspect.order,
            KIND_TIER.get(suspect.kind, 9), suspect.rank)


def diagnose_facts(ranks: Sequence[RankFacts]) -> Diagnosis:
    """The diagnosis over every rank and step of a compare."""
    suspects: list[Suspect] = []
    series: list[dict[str, Any]] = []
    identical = True
    floor_stats: dict[str, dict[str, Any]] = {}
    for facts in sorted(ranks, key=lambda f: (f.step, f.rank)):
        view = _RankView(facts)
        found = [s for s in (_suspect(view, n, i) for i, n in enumerate(facts.nodes)) if s is not None]
        explained = _explained_modules(view, [s for s in found if s.kind != STRUCTURE])
        found = [s for s in found if s.node not in explained]
        suspects.extend(found)
        if facts.golden_only or any(not n.exact or n.unmatched for n in facts.nodes):
            identical = False
        flagged = {s.node for s in found}
        isfinite = math.isfinite
        for node in facts.nodes:
            dtype = node.dtype
            if not dtype or node.kind == "parameters_grad" or node.entry in flagged:
                continue
            entry = floor_stats.get(dtype)
            if entry is None:
                entry = floor_stats[dtype] = {"unit_roundoff": unit_roundoff(dtype), "local_floor": local_floor(dtype),
                                              "calls": 0, "max_error_within_floor": 0.0}
            entry["calls"] += 1
            out_dev = node.out_dev
            if out_dev > entry["max_error_within_floor"] and isfinite(out_dev):
                entry["max_error_within_floor"] = out_dev
        series.append(_series(view, found))
    suspects.sort(key=sort_key)
    points = {(line["step"], line["rank"], p["node"]): p for line in series for p in line["points"]}
    for position, suspect in enumerate(suspects, 1):
        point = points.get((suspect.step, suspect.rank, suspect.node))
        if point is not None:
            point["suspect"] = position
    for dtype, entry in floor_stats.items():
        entry["why"] = (f"{dtype} rounds to {entry['unit_roundoff']:.3g} (unit roundoff); a call may add "
                        f"{LOCAL:g} of those and amplify its inputs' deviation as calls of its kind typically do")
    verdict = DIVERGENT if suspects else IDENTICAL if identical else NOISE
    return Diagnosis(verdict=verdict, suspects=suspects if verdict == DIVERGENT else [],
                     noise_floor=floor_stats, series=series)


def _series(view: _RankView, found: list[Suspect]) -> dict[str, Any]:
    facts = view.facts
    inf = math.inf
    points = [
        {
            "node": node.entry,
            "order": node.order,
            "error": node.out_dev if node.out_dev < inf else None,
            "floor": floor if floor < inf else None,
            "module": node.module,
            "direction": "backward" if node.backward else "forward",
            "kind": node.kind,
            "suspect": None,
        }
        for node, floor in zip(facts.nodes, view.floors)
        if node.kind != "parameters_grad"
    ]
    return {"rank": facts.rank, "step": facts.step, "label": f"step{facts.step}/rank{facts.rank}", "points": points}
