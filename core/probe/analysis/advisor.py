"""The advisor: the first row whose precision fails, where the difference starts, and why.

For one rank it finds the first row whose Result is ``warning`` or ``error``, then walks the
nodes up to that row to find where a difference first appears (the *culprit*) and classifies
it: introduced here (inputs match, outputs differ), inherited from input (inputs already
differ), NaN/inf source vs propagation, dtype / shape / requires_grad mismatch, or unmatched
structure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from probe.analysis.nodes import Node, build_nodes, has_nan_inf, is_ignored, portable, restored, row_deviation
from probe.diagnosis.rank import forward_of
from probe.errors import NotStreamable
from probe.model import ERROR, WARNING
from probe.modes import common
from probe.result import UNMATCHED, CompareResult, RowResult

DIFF_THRESHOLD = 0.01
"""A row whose deviation (see :func:`probe.analysis.nodes.row_deviation`) reaches this differs."""
AMPLIFY = 10.0
"""An output that differs this many times more than its inputs is a new error, not an inherited one."""

INTRODUCED = "introduced here"
INHERITED = "inherited from input"
NAN_SOURCE = "NaN/inf source"
NAN_PROPAGATED = "NaN/inf propagated from input"
DTYPE = "dtype mismatch"
SHAPE = "shape mismatch"
REQUIRES_GRAD = "requires_grad mismatch"
UNMATCHED_STRUCTURE = "unmatched structure"
SMALL = "small difference"

NONDETERMINISTIC = frozenset({"conv2d", "conv3d", "matmul", "nll_loss", "layer_norm", "lstm"})

ADVICE = {
    INTRODUCED: "Its inputs match the golden run but its output does not: suspect this operator on the "
                "target side (kernel, precision, fused path). Reproduce it alone with the dumped inputs.",
    INHERITED: "Its inputs already differ and no earlier dumped node produced the difference: compare "
               "the weights or checkpoint, the data fed to the network, random seeds, or widen the dump "
               "scope to the ops that were not dumped.",
    NAN_SOURCE: "It turns finite inputs into NaN/inf: look for overflow (float16/bfloat16 range), division "
                "by zero, log or sqrt of non-positive values.",
    NAN_PROPAGATED: "NaN/inf is already in its input: follow the input back to the op that produced it.",
    DTYPE: "The two runs use different dtypes here: check autocast/AMP settings and explicit casts.",
    SHAPE: "The shapes differ: the two runs do not compute the same thing here; check the model "
           "configuration and how tensors are split across ranks.",
    REQUIRES_GRAD: "requires_grad differs: a parameter is frozen in one run and trained in the other.",
    UNMATCHED_STRUCTURE: "Target rows have no golden counterpart: the networks differ in structure. "
                         "Try -fm (fuzzy match), -dm/-cm mappings, or align the models.",
    SMALL: "No row before it differs by 1% or more: a rule fired on a relative ratio of small numbers. "
           "This is usually the precision noise of another device or dtype; check the values before acting.",
}


@dataclass
class NodeFacts:
    """How one node differs: worst input/output rows and their deviations."""

    node: Node
    in_dev: float = 0.0
    out_dev: float = 0.0
    worst_in: RowResult | None = None
    worst_out: RowResult | None = None
    nan_in: bool = False
    nan_out: bool = False
    structural: tuple[str, RowResult] | None = None

    @property
    def differs(self) -> bool:
        return bool(
            self.structural or self.nan_in or self.nan_out
            or self.in_dev >= DIFF_THRESHOLD or self.out_dev >= DIFF_THRESHOLD
        )

    @property
    def amplifies(self) -> bool:
        """Whether the output differs at least :data:`AMPLIFY` times more than the (finite) inputs."""
        return math.isfinite(self.in_dev) and self.out_dev >= AMPLIFY * max(self.in_dev, DIFF_THRESHOLD)

    def cause(self) -> str:
        """The cause of this node's difference, assuming it is the first node that differs."""
        if self.structural:
            return self.structural[0]
        if self.nan_out or self.nan_in:
            return NAN_PROPAGATED if self.nan_in else NAN_SOURCE
        if self.in_dev >= DIFF_THRESHOLD and not self.amplifies:
            return INHERITED
        if not self.differs:
            return SMALL
        return INTRODUCED

    def relation(self) -> str:
        """``introduced here``, ``inherited from input``, ``small difference`` or a structure
        difference (shape, dtype...) for a node after the culprit."""
        if self.structural:
            return self.structural[0]
        if self.nan_in or (self.in_dev >= DIFF_THRESHOLD and not self.amplifies):
            return INHERITED
        if not self.differs:
            return SMALL
        return INTRODUCED


def node_facts(node: Node, md5: bool, forward: Node | None = None, saved: Any = None) -> NodeFacts:
    """Deviation, NaN/inf and structural facts of one node.

    For a backward node, ``forward`` is its forward node: the tensors saved by the forward
    pass are inputs of the backward pass, so their differences count as input differences.
    ``saved`` gives the forward node's facts instead of the node.
    """
    facts = NodeFacts(node)
    if forward is not None:
        saved = node_facts(forward, md5)
    if saved is not None:
        facts.in_dev = max(saved.in_dev, saved.out_dev)
        facts.worst_in = saved.worst_out if saved.out_dev >= saved.in_dev else saved.worst_in
        facts.nan_in = saved.nan_in or saved.nan_out
    for record in node.records:
        t, g = record.pair.target, record.pair.golden
        if g is None:
            if facts.structural is None:
                facts.structural = (UNMATCHED_STRUCTURE, record)
            continue
        for message in record.messages:
            if facts.structural is None:
                if message == common.MSG_DTYPE:
                    facts.structural = (DTYPE, record)
                elif message == common.MSG_SHAPE:
                    facts.structural = (SHAPE, record)
                elif message == common.MSG_REQUIRES_GRAD:
                    facts.structural = (REQUIRES_GRAD, record)
        output = t.state == "output"
        nan = has_nan_inf(t.stats) and not has_nan_inf(g.stats)
        dev = row_deviation(record, md5)
        if output:
            facts.nan_out = facts.nan_out or nan
            if dev > facts.out_dev or facts.worst_out is None and dev > 0:
                facts.out_dev, facts.worst_out = dev, record
        else:
            facts.nan_in = facts.nan_in or nan
            if dev > facts.in_dev or facts.worst_in is None and dev > 0:
                facts.in_dev, facts.worst_in = dev, record
    return facts


@dataclass
class Advice:
    """The advisor's answer for one rank."""

    label: str
    rank: int | None
    failing: RowResult | None = None
    failing_node: Node | None = None
    failing_relation: str | None = None
    culprit: NodeFacts | None = None
    cause: str | None = None
    unmatched: int = 0
    first_unmatched: str | None = None
    md5: bool = False
    not_compared: int = 0
    first_not_compared: RowResult | None = None
    failing_facts: NodeFacts | None = None
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        parts = [self.label]
        if self.failing is not None:
            parts.append(f"first failing {self.failing.name} ({self.failing.verdict})")
        if self.culprit is not None:
            parts.append(f"{self.cause} at {self.culprit.node.entry}")
        if self.unmatched:
            parts.append(f"{self.unmatched} unmatched")
        if self.not_compared:
            parts.append(f"{self.not_compared} not compared")
        if len(parts) == 1:
            parts.append("ok")
        return f"Advice({', '.join(parts)})"

    def __str__(self) -> str:
        return "\n".join(f"{head}: {text}" for head, text in explain(self))

    @property
    def ok(self) -> bool:
        return self.failing is None and self.culprit is None and not self.unmatched and not self.not_compared

    def advice(self) -> str:
        """The advice paragraph for the cause."""
        text = ADVICE.get(self.cause or "", "")
        if self.culprit is not None and self.culprit.node.api in NONDETERMINISTIC and self.cause == INTRODUCED:
            text += f" {self.culprit.node.api} can be non-deterministic on accelerators: rerun both sides " \
                    "with deterministic algorithms to rule that out."
        return text


def advise(result: CompareResult, nodes: list[Node] | None = None) -> Advice:
    """Find the first failing row of ``result`` and the node where its difference starts."""
    nodes = nodes if nodes is not None else build_nodes(result, judge=False)  # -da verdicts are not used here
    builder = AdviceBuilder(result, {node.entry: node for node in nodes})
    builder.add(nodes)
    return builder.finish()


@dataclass
class _Saved:
    """What a backward node takes from its forward node's facts (kept without the forward's rows)."""

    in_dev: float
    out_dev: float
    worst_in: Any
    worst_out: Any
    nan_in: bool
    nan_out: bool


@dataclass(frozen=True)
class _Name:
    """A row named in an advice whose row itself is no longer kept (a streamed compare)."""

    name: str


def _saved(facts: NodeFacts) -> _Saved:
    return _saved_of(_saved_values(facts))


class AdviceBuilder:
    """:func:`advise` over nodes given in order, a window at a time.

    The first failing row is looked for while the culprit (the first node, up to the failing
    one, whose facts differ) is looked for alongside. A backward node's facts need its forward
    node: from ``by_entry`` (every node of the rank) when given, else from the facts of the
    forward nodes met so far, kept without their rows until the failing row is found. A
    forward node met after a backward node that looked for it raises :class:`NotStreamable`.
    """

    def __init__(self, result: CompareResult, by_entry: dict[str, Node] | None = None) -> None:
        self.md5 = result.mode.name == "md5"
        self.rank = result.rank or 0
        self.stack = result.stack or {}
        self.phase = _SEARCH
        """(A copy making parts) what its own windows told of the real builder's search."""
        self.advice = Advice(label=result.label, rank=result.rank, md5=self.md5)
        self.by_entry = by_entry
        self.saved: dict[str, _Saved] = {}
        self.missing: set[str] = set()

    def _facts(self, node: Node) -> NodeFacts:
        forward = forward_of(node.entry)
        if forward is None:
            return node_facts(node, self.md5)
        if self.by_entry is not None:
            return node_facts(node, self.md5, self.by_entry.get(forward))
        saved = self.saved.get(forward)
        if saved is None:
            self.missing.add(forward)
        return node_facts(node, self.md5, saved=saved)

    def add(self, nodes: list[Node], counted: bool = True) -> None:
        """Look through ``nodes`` (the next ones in dump order); with ``counted`` false their
        unmatched and not compared rows are left for :meth:`count`."""
        advice = self.advice
        streamed = self.by_entry is None
        for node in nodes:
            if streamed and self.missing and node.entry in self.missing:
                raise NotStreamable(f"{node.entry} comes after a backward node that needs it")
            searching = advice.failing is None
            facts = None
            if searching and advice.culprit is None and not node.is_ignored:
                facts = self._facts(node)
                if facts.differs:
                    advice.culprit = facts
            if searching and streamed and ".forward" in node.entry:
                plain = facts if facts is not None and forward_of(node.entry) is None else node_facts(node, self.md5)
                self.saved[node.entry] = _saved(plain)
            for record in node.records:
                verdict = record.verdict
                if verdict == UNMATCHED:
                    if not counted:
                        continue
                    if record.pair.golden is not None:
                        advice.not_compared += 1
                        advice.first_not_compared = advice.first_not_compared or record
                    else:
                        advice.unmatched += 1
                        advice.first_unmatched = advice.first_unmatched or record.name
                elif searching and (verdict == WARNING or verdict == ERROR):
                    advice.failing, advice.failing_node = record, node
                    advice.failing_facts = facts if facts is not None else self._facts(node)
                    self.saved.clear()
                    searching = False

    def part(self, window: CompareResult) -> AdvicePart:
        """What :meth:`merge` needs of a window (whole entries), made by a copy of this builder taken before
        the first window (another process) that has made the parts of its own windows only.

        The copy knows only what its windows say: once a node of its own differs, the real builder
        has its culprit; once a row of its own fails, it has its failing row. Before that a node is
        kept whole when it may be the culprit or holds the failing row; of another node only its
        name and, for a forward call, what a backward call takes from it (:class:`_Saved`), since a
        node whose own rows do not differ differs only through a forward call that was never looked
        at (an ignored op). The rest of the window after the failing row is only counted."""
        phase = start = self.phase
        items: list[tuple[str, Any, Any]] = []
        rest = 0
        if phase != _OVER:
            md5 = self.md5
            for node in build_nodes(window, judge=False):
                entry = node.entry
                rest += len(node.records)
                failing = any(r.verdict == WARNING or r.verdict == ERROR for r in node.records)
                whole = failing
                facts = None
                if phase == _SEARCH and not node.is_ignored:
                    facts = node_facts(node, md5)
                    forward = forward_of(entry)
                    if facts.differs:
                        whole, phase = True, _CULPRIT
                    elif forward is not None and is_ignored(forward):  # its saved tensors were never looked at
                        whole = True
                if whole:
                    items.append((entry, None, portable([node])[0]))
                elif ".forward" in entry:
                    plain = facts if facts is not None and forward_of(entry) is None else node_facts(node, md5)
                    items.append((entry, _saved_values(plain), None))
                elif "forward" in entry or phase == _SEARCH and forward_of(entry) is not None:
                    items.append((entry, None, None))  # a name the missing forward calls may hold, or add
                if failing:
                    phase = _OVER
                    break
        self.phase = phase
        records = window.records
        return start, items, tally(records, rest) if records else None

    def merge(self, part: AdvicePart) -> bool:
        """Add a window's :meth:`part`, windows in order. ``False``, nothing changed, when the part
        assumed a culprit or a failing row this builder has not found (never, windows in order)."""
        start, items, counted = part
        advice = self.advice
        if advice.failing is None and (start == _OVER or start == _CULPRIT and advice.culprit is None):
            return False
        for entry, saved, whole in items:
            if whole is not None:
                self.add(restored([whole], self.rank, self.stack), counted=False)
                continue
            if self.missing and entry in self.missing:
                raise NotStreamable(f"{entry} comes after a backward node that needs it")
            if advice.failing is None:
                if advice.culprit is None and not is_ignored(entry):  # what _facts() adds; the node does not differ
                    forward = forward_of(entry)
                    if forward is not None and forward not in self.saved:
                        self.missing.add(forward)
                if saved is not None:
                    self.saved[entry] = _saved_of(saved)
        if counted is not None:
            self.count(counted)
        return True

    def count(self, tally: Tally) -> None:
        """Add the :func:`tally` of a window whose nodes were added uncounted."""
        unmatched, first_unmatched, not_compared, first_not_compared, forwards = tally
        missing = self.missing
        if missing:
            for entry in forwards:
                if entry in missing:
                    raise NotStreamable(f"{entry} comes after a backward node that needs it")
        advice = self.advice
        advice.unmatched += unmatched
        advice.first_unmatched = advice.first_unmatched or first_unmatched
        advice.not_compared += not_compared
        advice.first_not_compared = advice.first_not_compared or first_not_compared

    def finish(self) -> Advice:
        """The advice once every node was added."""
        advice = self.advice
        if advice.failing is None:
            if advice.unmatched:
                advice.cause = UNMATCHED_STRUCTURE
            return advice
        failing_facts, advice.failing_facts = advice.failing_facts, None
        if advice.culprit is None:
            # the failing row's node is judged by a rule but differs less than the threshold
            advice.culprit = failing_facts
        advice.cause = advice.culprit.cause()
        if advice.culprit.node is advice.failing_node:
            advice.failing_relation = advice.cause if advice.cause in (INTRODUCED, INHERITED) else None
        else:
            advice.failing_facts = failing_facts
            advice.failing_relation = failing_facts.relation()
        return advice


Tally = tuple[int, "str | None", int, "RowResult | None", list[str]]
"""What :meth:`AdviceBuilder.add` keeps of a window's rows besides the search: the unmatched rows'
count and first name, the not compared rows' count and first row, and the names of the entries
after the first failing row that may be forward calls (a backward node may have looked for them)."""


def tally(records: list[RowResult], rest: int = 0) -> Tally:
    """The :data:`Tally` of ``records`` (whole entries, in order), entry names from ``records[rest:]``."""
    unmatched = not_compared = 0
    first_unmatched = first_not_compared = entry = None
    forwards = []
    for index, record in enumerate(records):
        if record.verdict == UNMATCHED:
            if record.pair.golden is not None:
                not_compared += 1
                first_not_compared = first_not_compared or record
            else:
                unmatched += 1
                first_unmatched = first_unmatched or record.name
        if index >= rest:
            name = record.pair.target.entry
            if name != entry:
                entry = name
                if "forward" in name:  # every forward_of() result holds it
                    forwards.append(name)
    return unmatched, first_unmatched, not_compared, first_not_compared, forwards


_SEARCH, _CULPRIT, _OVER = 0, 1, 2
"""What a copy of an :class:`AdviceBuilder` knows of the real one from its own windows: nothing yet,
that the culprit is found, that the failing row is found (:meth:`AdviceBuilder.part`)."""

AdvicePart = tuple[int, list[tuple[str, Any, Any]], "Tally | None"]
"""A window's part for the advisor (:meth:`AdviceBuilder.part`): what the copy knew before it, the
nodes up to the failing row as ``(entry, saved facts, whole node)`` (only the entry when neither),
and the :func:`tally` of its rows."""


def _saved_values(facts: NodeFacts) -> tuple[Any, ...]:
    """:func:`_saved` of ``facts`` as plain values (:func:`_saved_of` makes it)."""
    def name(record: Any) -> str | None:
        return None if record is None else record.name

    return facts.in_dev, facts.out_dev, name(facts.worst_in), name(facts.worst_out), facts.nan_in, facts.nan_out


def _saved_of(values: tuple[Any, ...]) -> _Saved:
    in_dev, out_dev, worst_in, worst_out, nan_in, nan_out = values
    return _Saved(in_dev, out_dev, None if worst_in is None else _Name(worst_in),
                  None if worst_out is None else _Name(worst_out), nan_in, nan_out)


def _pct(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value * 100:.3g}%"


def _row_text(record: RowResult | None) -> str:
    if record is None:
        return ""
    t, g = record.pair.target, record.pair.golden
    return f"{t.name} [{t.dtype} {t.shape}" + (f" vs {g.dtype} {g.shape}]" if g is not None else "]")


def explain(advice: Advice) -> list[tuple[str, str]]:
    """``(heading, text)`` lines describing one rank's advice, for the file and the panel."""
    lines: list[tuple[str, str]] = []
    where = f"rank {advice.rank}" if advice.rank is not None else advice.label
    if advice.not_compared:
        first = advice.first_not_compared
        lines.append(("Not compared", f"{advice.not_compared} matched rows could not be compared (first: "
                                      f"{first.name}: {(first.notes or ['no reason'])[-1]})"))
    if advice.failing is None:
        if advice.not_compared:
            return lines
        if advice.unmatched:
            lines.append(("Result", f"{where}: every matched row passes"))
            lines.append(("Cause", f"{UNMATCHED_STRUCTURE}: {advice.unmatched} target rows have no golden "
                                   f"counterpart (first: {advice.first_unmatched})"))
            lines.append(("Advice", ADVICE[UNMATCHED_STRUCTURE]))
        else:
            lines.append(("Result", f"{where}: all data in the comparison meets the precision rules"))
        return lines
    failing = advice.failing
    message = "; ".join(failing.messages) or failing.verdict
    lines.append(("First failing row", f"{failing.name} ({where}, {message})"))
    culprit = advice.culprit
    if culprit is not None:
        node = culprit.node
        lines.append(("Suspect node", f"{node.entry} ({where})"))
        lines.append(("Cause", f"{advice.cause}: {_cause_detail(advice)}"))
        if node is not advice.failing_node and advice.failing_relation:
            lines.append(("Failing row", f"{advice.failing_relation}: {advice.failing_node.entry} runs after "
                                         f"{node.entry}; {_relation_detail(advice)}"))
        stack = node.stack_line()
        if stack:
            lines.append(("Stack", stack))
    if advice.unmatched:
        lines.append(("Note", f"{advice.unmatched} target rows have no golden counterpart "
                              f"(first: {advice.first_unmatched})"))
    lines.append(("Advice", advice.advice()))
    return lines


def _relation_detail(advice: Advice) -> str:
    facts = advice.failing_facts
    assert facts is not None
    if facts.structural and advice.failing_relation == facts.structural[0]:
        return f"{_row_text(facts.structural[1])}, a structure difference, not a precision one"
    if advice.failing_relation == SMALL:
        return f"it differs by only {_pct(max(facts.in_dev, facts.out_dev))}"
    if advice.failing_relation == INHERITED:
        return f"its inputs already differ by {_pct(facts.in_dev)}, its outputs by {_pct(facts.out_dev)}"
    if facts.in_dev >= DIFF_THRESHOLD:
        return f"it amplifies an input difference of {_pct(facts.in_dev)} to {_pct(facts.out_dev)}"
    return f"its inputs match, its outputs differ by {_pct(facts.out_dev)}: a second, independent source"


def _cause_detail(advice: Advice) -> str:
    facts = advice.culprit
    assert facts is not None
    cause = advice.cause
    if cause == UNMATCHED_STRUCTURE and facts.structural:
        return f"{facts.structural[1].name} has no golden counterpart"
    if cause in (DTYPE, SHAPE, REQUIRES_GRAD) and facts.structural:
        return _row_text(facts.structural[1])
    if cause == SMALL:
        worst = facts.worst_out or facts.worst_in
        name = worst.name if worst else "its rows"
        return f"{name} differs by only {_pct(max(facts.in_dev, facts.out_dev))}"
    if cause == NAN_SOURCE:
        return "its inputs are finite, its output holds NaN/inf"
    if cause == NAN_PROPAGATED:
        return "an input already holds NaN/inf"
    if cause == INHERITED:
        worst = facts.worst_in.name if facts.worst_in else "an input"
        return f"{worst} already differs by {_pct(facts.in_dev)} before this node runs"
    worst = facts.worst_out.name if facts.worst_out else "its output"
    if facts.in_dev >= DIFF_THRESHOLD:
        return f"inputs differ by {_pct(facts.in_dev)}, {worst} by {_pct(facts.out_dev)} (amplified here)"
    if facts.nan_in or facts.nan_out:
        return f"{worst} holds NaN/inf"
    return f"inputs match (within {_pct(max(facts.in_dev, 0.0))}), {worst} differs by {_pct(facts.out_dev)}"


def advisor_text(advices: list[Advice], lines: Callable[[Advice], list[tuple[str, str]]] = explain) -> str:
    """The whole ``advisor_{ts}.txt`` document (``lines`` renders one rank, :func:`explain` by default)."""
    parts = []
    for advice in advices:
        title = f"rank {advice.rank}" if advice.rank is not None else advice.label
        body = "\n".join(f"{head}: {text}" for head, text in lines(advice))
        parts.append(f"== {title} ==\n{body}\n")
    return "\n".join(parts)
