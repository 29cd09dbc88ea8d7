"""Pairing GE dump tensors with FX tensors or with fusion-off GE tensors, one token at a time."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from probe_torchair.fxdump import FxOp
from probe_torchair.gedump import GeFormatError, GeOpFile
from probe_torchair.graph import Graph
from probe_torchair.tensors import TensorRef

GOLDEN_MISSING = "golden data missing."


@dataclass
class PairSpec:
    """One row to compute: a target tensor and its golden counterpart (or a reason)."""

    sort_key: tuple
    target: TensorRef | None
    golden: TensorRef | None
    my_op_type: str
    golden_op_type: str
    target_label: str
    golden_label: str
    reason: str = ""
    problem_path: str = ""
    """The unreadable file this row stands for (pairing found it), and the problem."""
    problem: str = ""
    first_problem: bool = False
    """Whether this row is the first that met ``problem_path`` (it reports the problem)."""


class BadFile(Exception):
    """A dump file that cannot be read; carries the file and the problem."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


def split_fused(name: str, graph: Graph, dumped: Iterable[str] | set[str]) -> list[str]:
    """Split a (possibly fused) GE op name into graph op names: ``Mul_3Relu_4`` -> both ops.

    Repeatedly takes the whole remaining string if it is a graph op, else its longest
    prefix that is one. A prefix that is itself a dumped (non-graph) op stops the split.
    """
    parts: list[str] = []
    rest = name
    while rest:
        if rest in graph:
            parts.append(rest)
            break
        found = None
        for end in range(len(rest) - 1, 0, -1):
            prefix = rest[:end]
            if prefix in graph:
                found = prefix
                break
            if prefix in dumped:
                return parts
        if found is None:
            break
        parts.append(found)
        rest = rest[len(found):]
    return parts


def _key(op: GeOpFile, graph: Graph, parts: list[str], kind: str, index: int) -> tuple:
    order = graph.index_of(parts[0]) if parts else -1
    return (op.name.timestamp, order, op.op_name, 0 if kind == "inputs" else 1, index)


def _spec(op: GeOpFile, graph: Graph, parts: list[str], kind: str, index: int,
          golden: TensorRef | None, golden_type: str, reason: str = "") -> PairSpec:
    target = op.ref(kind, index)
    return PairSpec(
        _key(op, graph, parts, kind, index), target, golden, op.op_type, golden_type,
        target.path_label, golden.path_label if golden is not None else "N/A",
        reason if golden is not None or reason else GOLDEN_MISSING,
    )


def bad_file_spec(op: GeOpFile, problem: str) -> PairSpec:
    """A row standing for an unreadable target file."""
    return PairSpec((op.name.timestamp, -1, op.op_name, 2, 0), None, None, op.op_type, "",
                    op.real_path, "N/A", f"unreadable dump file: {problem}")


def _counts(op: GeOpFile) -> tuple[int, int]:
    try:
        return op.count("inputs"), op.count("outputs")
    except GeFormatError as exc:
        raise BadFile(op.real_path, str(exc)) from exc


def pair_with_fx(op: GeOpFile, graph: Graph, fx: dict[str, FxOp], dumped: set[str]) -> list[PairSpec]:
    """Rows of one GE op against the FX dump of the same token (see the matching rules)."""
    parts = split_fused(op.op_name, graph, dumped)
    if not parts:
        if "Cast" in op.op_type or "TransData" in op.op_type:
            n_in, n_out = _counts(op)
            return [
                _spec(op, graph, parts, "outputs", k, op.ref("inputs", k), op.op_type)
                for k in range(min(n_in, n_out))
            ]
        return []
    n_in, n_out = _counts(op)
    specs: list[PairSpec] = []
    if len(parts) == 1:
        gop = graph.ops[parts[0]]
        keys = gop.fx_keys
        present = [k for k in keys if k in fx]
        if not keys:
            return []
        if not present:
            return [_spec(op, graph, parts, kind, k, None, "", f"FX data of {keys[0]} missing.")
                    for kind, count in (("inputs", n_in), ("outputs", n_out)) for k in range(count)]
        first = fx[present[0]]
        for k, ref in zip(range(n_in), first.ordered("inputs")):
            specs.append(_spec(op, graph, parts, "inputs", k, ref, first.op_type))
        positional = first.ordered("outputs")
        for j in range(n_out):
            desc = gop.fx_outputs[j] if j < len(gop.fx_outputs) else None
            if desc and desc[0] in fx and desc[1] is not None:
                owner = fx[desc[0]]
                ref = owner.get("outputs", desc[1])
            else:
                owner = first
                ref = positional[j] if j < len(positional) else None
            if ref is not None:
                specs.append(_spec(op, graph, parts, "outputs", j, ref, owner.op_type))
        return specs
    # Fused op: inputs of the first constituent, outputs of the last (that have FX data).
    with_fx = [fx[k] for p in parts for k in graph.ops[p].fx_keys[:1] if k in fx]
    if not with_fx:
        return []
    head, tail = with_fx[0], with_fx[-1]
    for k, ref in zip(range(n_in), head.ordered("inputs")):
        specs.append(_spec(op, graph, parts, "inputs", k, ref, head.op_type))
    for k, ref in zip(range(n_out), tail.ordered("outputs")):
        specs.append(_spec(op, graph, parts, "outputs", k, ref, tail.op_type))
    return specs


def pair_with_ge(op: GeOpFile, graph: Graph, golden: dict[str, GeOpFile], dumped: set[str]) -> list[PairSpec]:
    """Rows of one fusion-on GE op against the fusion-off GE dump of the same token."""
    n_in, n_out = _counts(op)
    same = golden.get(op.op_name)
    if same is not None:
        g_in, g_out = _golden_counts(same)
        return [
            _spec(op, graph, [op.op_name], kind, k, same.ref(kind, k) if k < g_count else None,
                  same.op_type)
            for kind, count, g_count in (("inputs", n_in, g_in), ("outputs", n_out, g_out))
            for k in range(count)
        ]
    parts = split_fused(op.op_name, graph, dumped)
    if len(parts) < 2:
        return [_spec(op, graph, parts, kind, k, None, "")
                for kind, count in (("inputs", n_in), ("outputs", n_out)) for k in range(count)]
    inputs: list[tuple[TensorRef | None, str]] = []
    inside = set(parts)
    for name in parts:
        member = golden.get(name)
        g_in = _golden_counts(member)[0] if member is not None else 0
        for idx, source in enumerate(graph.ops[name].inputs):
            if source in inside:
                continue
            ref = member.ref("inputs", idx) if member is not None and idx < g_in else None
            inputs.append((ref, member.op_type if member is not None else ""))
    last = golden.get(parts[-1])
    g_out = _golden_counts(last)[1] if last is not None else 0
    specs = [_spec(op, graph, parts, "inputs", k, inputs[k][0] if k < len(inputs) else None,
                   inputs[k][1] if k < len(inputs) else "") for k in range(n_in)]
    specs += [_spec(op, graph, parts, "outputs", k,
                    last.ref("outputs", k) if last is not None and k < g_out else None,
                    last.op_type if last is not None else "") for k in range(n_out)]
    return specs


def _golden_counts(op: GeOpFile) -> tuple[int, int]:
    try:
        return op.count("inputs"), op.count("outputs")
    except GeFormatError:
        # The golden file is unreadable: pair by position anyway; loading reports it per row.
        return 1 << 30, 1 << 30
