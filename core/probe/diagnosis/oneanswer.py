"""One answer everywhere: ``-da`` and the advisor name the diagnosis's suspects.

``-da`` keeps msProbe's file format (``{"rank_N": [node info]}``) but lists, per rank, the
best suspect of the diagnosis in that step instead of the first node over a fixed
threshold; the advisor's "Suspect node" / "Cause" / "Advice" lines come from the diagnosis
too, while its "First failing row" line (msProbe's rule) stays, labelled as what it is.
"""

from __future__ import annotations

from typing import Any

from probe.diagnosis.report import (
    ARGUMENT, DIVERGENT, INTRODUCED, NAN_SOURCE, PARAMETER, STRUCTURE, Diagnosis, Suspect,
)

ADVICE = {
    INTRODUCED: "Its inputs match the golden run within the noise floor but its output does not: suspect this "
                "operator on the target side (kernel, precision, fused path, a changed attribute). Reproduce it "
                "alone with the dumped inputs.",
    NAN_SOURCE: "It turns finite inputs into NaN/inf: look for overflow (float16/bfloat16 range), division by "
                "zero, log or sqrt of non-positive values.",
    PARAMETER: "A parameter, buffer or input that no dumped call produced differs: compare the checkpoint, the "
               "weight loading and conversion, the optimizer (learning rate, update) of the previous step.",
    ARGUMENT: "A non-tensor argument differs between the runs (a scale, eps, probability, a missing operand): "
              "compare the configuration and the code path that computes it.",
    STRUCTURE: "This call has no golden counterpart: the networks differ in structure here. Try -fm (fuzzy "
               "match), -dm/-cm mappings, or align the models.",
}


def step_suspects(diagnosis: Diagnosis, step: int) -> list[Suspect]:
    """The suspects of one step, best first."""
    return [s for s in diagnosis.suspects if s.step == step]


def best_per_rank(diagnosis: Diagnosis, step: int) -> dict[int, Suspect]:
    """``{rank: best suspect}`` for the ranks of ``step`` that have one, ranks in ranking order."""
    out: dict[int, Suspect] = {}
    for suspect in step_suspects(diagnosis, step):
        out.setdefault(suspect.rank, suspect)
    return out


def diff_analyze_nodes(diagnosis: Diagnosis, step: int, by_rank: dict[int, list[Any]]) -> dict[int, list[Any]]:
    """The ``-da`` nodes of one step: per rank the node of its best suspect (first rank first)."""
    found: dict[int, list[Any]] = {}
    for rank, suspect in best_per_rank(diagnosis, step).items():
        nodes = {n.entry: n for n in by_rank.get(rank, [])}
        node = nodes.get(suspect.node)
        if node is not None:
            found[rank] = [node]
    return found


def advisor_lines(lines: list[tuple[str, str]], diagnosis: Diagnosis, step: int) -> list[tuple[str, str]]:
    """The advisor's ``(heading, text)`` lines with the diagnosis's answer in place of its own culprit."""
    kept = []
    for head, text in lines:
        if head in ("Suspect node", "Cause", "Failing row", "Stack", "Advice", "Result"):
            continue
        if head == "First failing row":
            head = "First failing row (msProbe rules)"
        kept.append((head, text))
    suspects = step_suspects(diagnosis, step)
    best = suspects[0] if suspects else None  # the step's best suspect
    first = diagnosis.first
    if diagnosis.verdict != DIVERGENT or first is None:
        kept.insert(0, ("Diagnosis", diagnosis.headline()))
        return kept
    if best is None:
        kept.insert(0, ("Diagnosis", f"no suspect in this step; the first suspect is {first.node} ({first.where()})"))
        return kept
    kept.insert(0, ("Suspect node", f"{best.node} ({best.where()})"))
    kept.insert(1, ("Cause", f"{best.kind}: {best.evidence}"))
    if best is not first:
        kept.insert(2, ("Note", f"the first suspect overall is {first.node} ({first.where()})"))
    kept.append(("Advice", ADVICE.get(best.kind, ADVICE[INTRODUCED])))
    return kept
