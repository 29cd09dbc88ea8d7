"""The diagnosis facts' inline judgement of the usual row (finite float statistics, the same
dtype and shape on both sides) equals the plain rules on every row: NaN, inf, None, text, ints,
bools, dtype and shape mismatches, unmatched rows, md5 and tensor modes, backward reductions."""

from __future__ import annotations

import math
from collections.abc import Iterable
from operator import attrgetter

from hypothesis import given, settings
from hypothesis import strategies as st

from probe.diagnosis.facts import (
    REDUCTION, TINY, NodeFacts, _fingerprint, _last_dim, _numel, _portable, _row_dev, _short, _tail, _PAIR,
    benign_argument, dtype_info, lower_dtype, node_facts, op_of, stats_deviation, _kind, _DTYPES, _LAST_DIMS,
)
from probe.model import Pair, Row
from probe.numbers import as_number
from probe.result import RowResult

_SLOTS = attrgetter(*NodeFacts.__slots__)


def _plain_node_facts(entry: str, order: int, records: Iterable[RowResult], tensor_mode: bool, produced: set,
                      backward: bool, md5: bool = False, leaf_inputs: list | None = None) -> NodeFacts:
    """:func:`node_facts` as it was before its usual row was judged inline: every row through
    :func:`stats_deviation`, :func:`_fingerprint`, :func:`lower_dtype` and ``NodeFacts.__init__``."""
    kind = _kind(entry)
    backward = backward or kind == "parameters_grad" or ".backward" in entry
    leaves = kind == "api" and not backward
    in_dev = out_dev = param_dev = leaf_dev = reduced_dev = 0.0
    worst_in = worst_out = worst_param = worst_leaf = worst_reduced = argument = dtype = ""
    in_numel = 0
    in_norm = 0.0
    nan_in = nan_out = False
    exact = True
    width = 1
    matched = unmatched = 0
    outputs = []
    dtypes, last_dims = _DTYPES, _LAST_DIMS
    for record in records:
        pair = record.pair
        t, g = pair.target, pair.golden
        state = t.state
        if g is None:
            unmatched += 1
            if state != "output" and not argument:
                argument = f"{t.name} has no golden counterpart"
            continue
        matched += 1
        t_dtype = t.dtype
        tensor, t_float = dtypes.get(t_dtype) or dtype_info(t_dtype)
        if t_float and t_float != dtype:
            dtype = lower_dtype(dtype, t_float)
        if g.dtype == t_dtype:  # the usual row: the golden dtype adds nothing
            g_tensor = tensor
        else:
            g_tensor, g_float = dtypes.get(g.dtype) or dtype_info(g.dtype)
            if g_float and g_float != dtype:
                dtype = lower_dtype(dtype, g_float)
        if not tensor or not g_tensor:
            if g_tensor != tensor or list(map(str, t.stats)) != list(map(str, g.stats)):
                exact = False
                if state != "output" and not argument and not benign_argument(t.stats[0], g.stats[0]):
                    argument = f"{t.name} is {_short(t.stats[0])} instead of {_short(g.stats[0])}"
            continue
        shape = t.shape
        if shape != g.shape:  # a structure difference: no precision deviation between different shapes
            if state != "output" and not argument:
                argument = f"{t.name} has shape {shape} instead of {g.shape}"
            dev, nan, exact = 0.0, False, False
        elif md5:
            dev, nan = (0.0 if t.md5 == g.md5 else math.inf), False
            exact = exact and dev == 0.0
        elif tensor_mode:
            exact = False
            dev, t_bad, g_bad = _row_dev(record, tensor_mode)
            nan = t_bad and not g_bad
        else:
            ts, gs = t.stats, g.stats
            if ts == gs:
                dev, nan = 0.0, False  # identical statistics (a NaN never compares equal, so it takes the long way)
            else:
                exact = False
                dev, t_bad, g_bad = stats_deviation(ts, gs)
                nan = t_bad and not g_bad
        if state == "output":
            nan_out = nan_out or nan
            if backward and _numel(t.shape) * REDUCTION < in_numel:
                norm = as_number(g.stats[3])
                if norm is not None and norm < TINY * in_norm:
                    dev = 0.0  # a sum that cancels to about zero (a bias before a norm layer): no relative error
                if dev > reduced_dev or not worst_reduced:
                    reduced_dev, worst_reduced = dev, t.name
            elif dev > out_dev or not worst_out:
                out_dev, worst_out = dev, t.name
            outputs.append(t)
        elif state == "input":
            last = last_dims.get(shape) or _last_dim(shape)
            if last > width:
                width = last
            if backward:
                in_numel = max(in_numel, _numel(t.shape))
                norm = as_number(g.stats[3])
                if norm is not None and norm > in_norm:
                    in_norm = norm
            nan_in = nan_in or nan
            if dev > in_dev or not worst_in:
                in_dev, worst_in = dev, t.name
            if leaves and (dev > leaf_dev or leaf_inputs is not None and dev > 0.0):
                fp = _fingerprint(t)
                if fp is not None and fp not in produced:
                    if dev > leaf_dev:
                        leaf_dev, worst_leaf = dev, t.name
                    if leaf_inputs is not None:
                        tail = _tail(entry, t.name)
                        leaf_inputs.append((dev, fp if fp.__class__ is bytes else _portable(fp),
                                            t.name if tail is None else tail, tail is not None))
        elif state == "parameters":
            if dev > param_dev or not worst_param:
                param_dev, worst_param = dev, t.name
    pack = _PAIR.pack
    for t in outputs:
        high, low = t.stats[0], t.stats[1]
        if high.__class__ is float and low.__class__ is float and high == high and low == low and high != low:
            produced.add(pack(high or 0.0, low or 0.0))  # _fingerprint(t) of the usual output, inline
            continue
        fp = _fingerprint(t)
        if fp is not None:
            produced.add(fp)
    return NodeFacts(entry, order, kind, op_of(entry, kind), backward, in_dev, out_dev, param_dev, leaf_dev,
                     worst_in, worst_out, worst_param, worst_leaf, nan_in, nan_out, argument, unmatched, matched,
                     reduced_dev, worst_reduced, width, dtype, exact)



_ENTRIES = ["Functional.linear.0.forward", "Functional.linear.0.backward", "Module.m.Linear.forward.0",
            "Module.m.Linear.backward.0", "Module.m.weight.parameters_grad", "Tensor.add", "plain",
            "Cell.a.Dense.forward.0"]
_DTYPES_SEEN = ["torch.float32", "torch.float32", "torch.bfloat16", "torch.float16", "torch.int64", "torch.bool",
                "<class 'int'>", "<class 'str'>", "N/A", "Float32", "Int8", "slice"]
_SHAPES = ["[2, 3]", "[2, 3]", "[6]", "[]", "[64, 1024]", "[1024]", "(2, 3)", "odd"]
_SPECIAL = st.sampled_from([0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, True, False,
                            0, 1, -2, 2 ** 60 + 1, None, "nan", "inf", "1.5", "x", ""])
_FLOAT = st.floats(-1e3, 1e3, allow_nan=False)
_STAT = st.one_of(_FLOAT, _FLOAT, _SPECIAL, st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3))
_STATS = st.tuples(_STAT, _STAT, _STAT, _STAT)


@st.composite
def _row(draw: st.DrawFn, entry: str) -> RowResult:
    state = draw(st.sampled_from(["input", "input", "output", "output", "parameters", "parameters_grad", "kwargs"]))
    index = draw(st.integers(0, 3))
    name = draw(st.sampled_from([f"{entry}.{state}.{index}", f"{entry}.{state}.{index}", f"other.{state}.{index}",
                                 f"{entry}x.{index}", entry]))
    t_dtype = draw(st.sampled_from(_DTYPES_SEEN))
    g_dtype = t_dtype if draw(st.integers(0, 3)) else draw(st.sampled_from(_DTYPES_SEEN))
    shape = draw(st.sampled_from(_SHAPES))
    g_shape = shape if draw(st.integers(0, 4)) else draw(st.sampled_from(_SHAPES))
    stats = draw(_STATS)
    kind = draw(st.integers(0, 3))
    if kind == 0:
        g_stats = stats  # identical
    elif kind == 1:  # a little off, the usual row
        g_stats = tuple(v * (1 + draw(st.floats(-0.01, 0.01))) if type(v) is float and math.isfinite(v) else v
                        for v in stats)
    else:
        g_stats = draw(_STATS)
    md5s = st.sampled_from(["00ff", "00fe", None])
    target = Row(name, entry, state, t_dtype, shape, stats, "False", draw(md5s), "-1")
    golden = None if not draw(st.integers(0, 6)) else Row(name, entry, state, g_dtype, g_shape, g_stats, "False",
                                                           draw(md5s), "-1")
    metrics = tuple(draw(st.lists(st.sampled_from([0.5, 1e-3, 0.0, math.nan, math.inf, None, "N/A", "0.25"]),
                                  max_size=3)))
    return RowResult(Pair(target, golden), metrics)


@st.composite
def _entry(draw: st.DrawFn) -> tuple[str, list[RowResult]]:
    entry = draw(st.sampled_from(_ENTRIES))
    return entry, draw(st.lists(_row(entry), min_size=0, max_size=7))


def _same(a: object, b: object) -> bool:
    return repr(a) == repr(b)  # tells -0.0 from 0.0 and compares NaN as text


@settings(max_examples=1500, deadline=None)
@given(case=_entry(), mode=st.sampled_from(["statistics", "statistics", "md5", "tensor"]), backward=st.booleans(),
       earlier=st.lists(_STATS, max_size=4), leaves=st.booleans(), order=st.integers(0, 9))
def test_node_facts_equal_the_plain_rules(case: tuple, mode: str, backward: bool, earlier: list, leaves: bool,
                                          order: int) -> None:
    entry, records = case
    outputs = [Row("e.output.0", "e", "output", "torch.float32", "[2]", stats, "False", None, "-1")
               for stats in earlier]
    seed = {fp for fp in map(_fingerprint, outputs) if fp is not None}
    fast_produced, plain_produced = set(seed), set(seed)
    fast_leaves: list | None = [] if leaves else None
    plain_leaves: list | None = [] if leaves else None
    fast = node_facts(entry, order, iter(records), mode == "tensor", fast_produced, backward, mode == "md5",
                      fast_leaves)
    plain = _plain_node_facts(entry, order, iter(records), mode == "tensor", plain_produced, backward, mode == "md5",
                              plain_leaves)
    assert _same(_SLOTS(fast), _SLOTS(plain))
    assert sorted(map(repr, fast_produced)) == sorted(map(repr, plain_produced))
    assert _same(fast_leaves, plain_leaves)


@settings(max_examples=1500, deadline=None)
@given(t=_STATS, g=_STATS)
def test_one_row_deviation_equals_stats_deviation(t: tuple, g: tuple) -> None:
    """One tensor input per entry: its deviation is the entry's ``in_dev`` as it is."""
    entry = "Functional.linear.0.forward"
    target = Row(entry + ".input.0", entry, "input", "torch.float32", "[2]", t, "False", None, "-1")
    golden = Row(entry + ".input.0", entry, "input", "torch.float32", "[2]", g, "False", None, "-1")
    facts = node_facts(entry, 0, [RowResult(Pair(target, golden), ())], False, set(), False)
    try:
        dev, t_bad, g_bad = stats_deviation(t, g) if t != g else (0.0, False, False)
    except OverflowError:
        return
    assert repr(facts.in_dev) == repr(dev) and facts.nan_in == (t_bad and not g_bad)


def _plain_op_of(entry: str, kind: str) -> str:
    """op_of as it was: the entry split at every dot."""
    parts = entry.split(".")
    if kind == "api":
        return ".".join(parts[:2])
    for marker in ("forward", "backward", "parameters_grad"):
        if marker in parts:
            i = parts.index(marker)
            return f"{parts[0]}.{parts[i - 1]}" if i >= 2 else parts[0]
    return parts[0]


_PART = st.sampled_from(["Module", "Cell", "layers", "0", "12", "mlp", "SwiGLU", "forward", "backward",
                         "parameters_grad", "forwardx", "xbackward", "", "weight", "Linear"])


@settings(max_examples=1500, deadline=None)
@given(parts=st.lists(_PART, min_size=1, max_size=8), kind=st.sampled_from(["module", "parameters_grad", "api"]))
def test_op_of_equals_splitting_the_name(parts: list[str], kind: str) -> None:
    entry = ".".join(parts)
    assert op_of(entry, kind) == _plain_op_of(entry, kind)
