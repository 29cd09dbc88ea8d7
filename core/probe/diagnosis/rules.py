"""The rules of the diagnosis ranking as names and numbers (see :mod:`probe.diagnosis.rank`), shared by
the ranking and its column-wise judge (:mod:`probe.diagnosis.columns`)."""

from __future__ import annotations

from probe.diagnosis.report import ARGUMENT, INTRODUCED, NAN_SOURCE, PARAMETER, STRUCTURE

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
"""Scores are capped here; a NaN/inf source, or a parameter holding NaN/inf, scores it."""

# The rules a call is judged by, first match wins (the evidence of each is written by
# probe.diagnosis.rank._suspects).
NO_RULE, BY_STRUCTURE, BY_NAN_SOURCE, BY_NAN_INPUT, NAN_PROPAGATED, BY_PARAMETER, BY_LEAF, BY_ARGUMENT, \
    BY_OUTPUT, BY_REDUCTION = range(-1, 9)
RULE_KIND = {BY_STRUCTURE: STRUCTURE, BY_NAN_SOURCE: NAN_SOURCE, BY_NAN_INPUT: PARAMETER, BY_PARAMETER: PARAMETER,
             BY_LEAF: PARAMETER, BY_ARGUMENT: ARGUMENT, BY_OUTPUT: INTRODUCED, BY_REDUCTION: INTRODUCED}


def forward_of(entry: str) -> str | None:
    """The forward call whose saved tensors a backward call uses (``X.0.backward`` -> ``X.0.forward``,
    ``Module.m.Linear.backward.0`` -> ``Module.m.Linear.forward.0``), else ``None``."""
    if entry.endswith("backward") and (len(entry) == 8 or entry[-9] == "."):  # the last name part
        return entry[:-8] + "forward"
    head, dot, tail = entry.rpartition(".")
    if dot and head.endswith("backward") and (len(head) == 8 or head[-9] == "."):  # the one before it
        return head[:-8] + "forward." + tail
    return None
