"""The one-pass statistics judge gives the verdicts and messages of the rules applied one by one."""

from __future__ import annotations

import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from probe.model import ERROR, NA, WARNING, Pair, Row
from probe.modes import common
from probe.modes.statistics import (
    MSG_NORM_OUTPUT, MSG_NORM_RATIO, StatisticsMode, StatRowResult, judge_group, norm_fraction, structure_rules,
)
from probe.result import RowResult


def _reference_cross_rules(inputs: list[RowResult], outputs: list[RowResult]) -> tuple[list, list]:
    norm_in = max((norm_fraction(r, False) for r in inputs), default=0.0)
    early = [(r, ERROR, MSG_NORM_OUTPUT) for r in outputs if norm_in < 0.1 and norm_fraction(r, True) > 0.5]
    late = []
    if outputs:
        norms = [norm_fraction(r, False) for r in outputs]
        norm_out = max(norms)
        if (norm_in == 0 and norm_out > 0.1) or (norm_in > 0 and norm_out / norm_in > 10):
            late.append((outputs[norms.index(norm_out)], WARNING, MSG_NORM_RATIO))
    return early, late


def _reference_judge(group: list[RowResult]) -> None:
    """The rules in msProbe's order, each over every row it applies to (rules 3-6 on every checked row)."""
    for r in group:
        reason = common.not_compared_reason(r)
        if reason:
            r.mark_not_compared(reason)
    api = common.api_name(group[0].pair.target.entry)
    if api in common.SKIP_ALL_APIS:
        return
    output_only = api in common.OUTPUT_ONLY_APIS
    inputs, outputs = [], []
    for r in group:
        if r.pair.golden is None:
            r.notes.append(common.MSG_UNMATCHED)
        elif common.is_output(r.pair.target):
            outputs.append(r)
        else:
            inputs.append(r)
    checked = outputs if output_only else [r for r in group if r.pair.golden is not None]
    for r in checked:
        t, g = r.pair.target, r.pair.golden
        if not (common.is_nan_or_inf(g.stats[0]) or common.is_nan_or_inf(g.stats[1])):
            if common.is_nan_or_inf(t.stats[0]) or common.is_nan_or_inf(t.stats[1]):
                r.raise_to(ERROR, common.MSG_NAN_INF)
    early, late = ([], []) if output_only else _reference_cross_rules(inputs, outputs)
    for r, verdict, message in early:
        r.raise_to(verdict, message)
    for r in checked:  # every checked row, not only those where a rule can fire
        structure_rules(r)
    for r, verdict, message in late:
        r.raise_to(verdict, message)


_STATS = st.one_of(
    st.floats(), st.sampled_from([0.0, -0.0, 1.0, 2.0, 1e-3, math.inf, -math.inf, math.nan]),
    st.integers(-3, 3), st.none(), st.booleans(), st.sampled_from(["nan", "-inf", "abc", "1.5", NA]),
)
_ROW = st.tuples(
    st.sampled_from(["input", "output", "parameters", "kwargs"]),
    st.sampled_from(["<class 'int'>", "torch.float32", "float32", "torch.float16", "N/A"]),
    st.sampled_from(["[]", "[2, 3]", NA]),
    st.sampled_from(["True", "False", NA]),
    st.tuples(_STATS, _STATS, _STATS, _STATS),
)


def _row(entry: str, index: int, spec: tuple, name: str = "") -> Row:
    state, dtype, shape, grad, stats = spec
    return Row(name or f"{entry}.{state}.{index}", entry, state, dtype, shape, stats, grad, None, "-1")


_SCALAR = ("input", "<class 'int'>", "[]", NA, (1, 1, 1, 1))


@settings(max_examples=400, deadline=None)
@example(api="linear", rows=[(_SCALAR, _SCALAR[:4] + ((2, 2, 2, 2),), [True] * 4, False)])  # the scalar rule
@given(
    api=st.sampled_from(["linear", "relu", "to", "empty", "all_to_all_single", "_all_gather_base"]),
    rows=st.lists(st.tuples(_ROW, st.one_of(st.none(), _ROW), st.lists(st.booleans(), min_size=4, max_size=4),
                            st.booleans()), min_size=1, max_size=6),
)
def test_one_pass_judge_equals_the_rules_one_by_one(api: str, rows: list) -> None:
    entry = f"Functional.{api}.0.forward"
    mode = StatisticsMode()
    fused, fast, slow = [], [], []
    for i, (target, golden, same, qkv) in enumerate(rows):
        if golden is not None:  # mostly like the target (as in real dumps), so every rule can fire
            golden = tuple(t if keep else g for t, g, keep in zip(target, golden, same + [False]))
        pair = Pair(_row(entry, i, target), None if golden is None else _row(entry, i, golden, "qkv" if qkv else ""))
        for out in (fused, fast, slow):
            out.extend(mode.compute([pair], _Ctx()))
    mode.judge(fused)  # the NormRelativeErr rules taken in the judge's own pass
    judge_group(fast, StatisticsMode._cross_rules)
    _reference_judge(slow)
    for a, b, c in zip(fused, fast, slow):
        assert (a.verdict, a.messages, a.notes) == (b.verdict, b.messages, b.notes) == (c.verdict, c.messages, c.notes)


@settings(max_examples=200, deadline=None)
@given(norms=st.lists(st.tuples(st.floats(0.5, 2.0), st.sampled_from(["input", "output"]),
                                st.one_of(st.none(), st.sampled_from(["75.0%", "5.0%", "inf", "0", "N/A"]))),
                      min_size=1, max_size=6))
def test_fused_judge_reads_stored_metrics(norms: list) -> None:
    """A row whose metrics were assigned is judged on its stored NormRelativeErr text."""
    entry = "Functional.linear.0.forward"
    mode = StatisticsMode()
    fused, fast = [], []
    for i, (norm, state, stored) in enumerate(norms):
        target = _row(entry, i, (state, "torch.float32", "[2]", NA, (1.0, 0.0, 0.5, norm)))
        golden = _row(entry, i, (state, "torch.float32", "[2]", NA, (1.0, 0.0, 0.5, 1.0)))
        for out in (fused, fast):
            row = mode.compute([Pair(target, golden)], _Ctx())[0]
            if stored is not None:
                row.metrics = ("0",) * 7 + (stored,)
            out.append(row)
    mode.judge(fused)
    judge_group(fast, StatisticsMode._cross_rules)
    for a, b in zip(fused, fast):
        assert (a.verdict, a.messages, a.notes) == (b.verdict, b.messages, b.notes)


class _Ctx:
    progress = None


def _slots(record: RowResult) -> dict[str, object]:
    return {name: RowResult.__dict__[name].__get__(record, RowResult) for name in RowResult.__slots__}


@given(st.booleans())
def test_a_stat_row_result_starts_as_a_row_result(matched: bool) -> None:
    """StatRowResult sets RowResult's slots itself: every slot as RowResult(pair, None) sets it."""
    row = Row("A.f.0.forward.input.0", "A.f.0.forward", "input", "torch.float32", "[2]", (1.0, 0.0, 0.5, 2.0),
              "True", None, "-1")
    pair = Pair(row, row if matched else None)
    assert _slots(StatRowResult(pair)) == _slots(RowResult(pair, None))


_checksum = st.one_of(st.none(), st.sampled_from(["", "N/A", "Nan", "abcd1234", "00000000"]), st.integers(0, 2))


@given(st.lists(st.tuples(_checksum, st.booleans(), _checksum), max_size=6))
def test_md5_compute_gives_the_checksum_cells(rows: list[tuple[object, bool, object]]) -> None:
    """md5 mode's metrics: each side's md5, N/A for a null one (and for the golden of an unmatched row)."""
    from probe.modes.md5 import Md5Mode

    def row(md5: object) -> Row:
        return Row("A.f.0.forward.input.0", "A.f.0.forward", "input", "torch.float32", "[2]", (None,) * 4,
                   "True", md5, "-1")

    pairs = [Pair(row(t), row(g) if matched else None) for t, matched, g in rows]
    results = Md5Mode().compute(pairs, type("Context", (), {"progress": None})())
    assert [(r.pair, r.metrics, r.verdict) for r in results] == [
        (p, (NA if p.target.md5 is None else p.target.md5,
             NA if p.golden is None or p.golden.md5 is None else p.golden.md5), RowResult(p, ()).verdict)
        for p in pairs]


_FLOATS = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([0.0, -0.0, 1.0, 2.0, 1e-3, 1e308, -1e308, 5e-324]))
_WINDOW_STATS = st.one_of(_FLOATS, _FLOATS, _FLOATS, _STATS, st.none(), st.integers(-2**60, 2**60), st.just(2**53))


_TENSOR_IN = ("input", "torch.float32", "[2]", "True", (1.0,) * 4)
_TENSOR_OUT = ("output", "torch.float32", "[2]", "True", (1.0,) * 4)
_NONE_NORM_INPUT = (_TENSOR_IN, _TENSOR_IN, [True] * 4, False, (1.0, 0.0, 0.5, None) * 2, True, 9, False)
_FAILING_OUTPUT = (_TENSOR_OUT, _TENSOR_OUT, [True] * 4, False, (1.0, 0.0, 0.5, 3.0, 1.0, 0.0, 0.5, 1.0), True, 9, False)
_TEXT_SCALAR = ("input", "<class 'str'>", "[]", "N/A", ("nan",) * 4)
_SHARED_TEXT = (_TEXT_SCALAR, _TEXT_SCALAR, [True] * 4, False, (1.0,) * 8, False, 9, True)


@settings(max_examples=300, deadline=None)
@example(entries=[("linear", [_NONE_NORM_INPUT, _FAILING_OUTPUT])])  # a None norm on both sides: fraction 0
@example(entries=[("linear", [_SHARED_TEXT, _FAILING_OUTPUT])])  # one statistics tuple of text on both sides
@given(entries=st.lists(st.tuples(
    st.sampled_from(["linear", "relu", "to", "all_to_all_single", "linear", "relu"]),
    st.lists(st.tuples(_ROW, st.one_of(st.none(), _ROW, _ROW, _ROW), st.lists(st.booleans(), min_size=4, max_size=4),
                       st.booleans(), st.tuples(*[_WINDOW_STATS] * 8), st.booleans(), st.integers(0, 9), st.booleans()),
             min_size=1, max_size=5)), min_size=1, max_size=6))
def test_window_judge_equals_the_judge_of_each_entry(entries: list) -> None:
    """judge_entries over many entries (numpy columns) gives judge_group's verdicts, messages and notes."""
    from probe.judge import judge_records

    mode = StatisticsMode()
    window, single = [], []
    for number, (api, rows) in enumerate(entries):
        entry = f"Functional.{api}.{number}.forward"
        group_window, group_single = [], []
        for i, (target, golden, same, qkv, stats, numeric, stored, shared) in enumerate(rows):
            if numeric:  # statistics of real tensors: mostly finite floats
                target = target[:4] + (stats[:4],)
                golden = None if golden is None else golden[:4] + (stats[4:],)
            if golden is not None:
                # shared: the target's statistics tuple itself on both sides (as equal scalar leaves have it)
                golden = tuple(t if keep else g for t, g, keep in zip(target, golden, same + [shared]))
            pair = Pair(_row(entry, i, target),
                        None if golden is None else _row(entry, i, golden, "qkv" if qkv else ""))
            for out in (group_window, group_single):
                row = mode.compute([pair], _Ctx())[0]
                if stored == 0 and golden is not None:
                    row.metrics = ("0",) * 7 + ("75.0%",)
                out.append(row)
        window.extend(group_window)
        single.append(group_single)
    judge_records(mode, window, {"Functional.linear.0.forward": ["a.py"]})
    for group in single:
        judge_group(group)
    for a, b in zip(window, [r for group in single for r in group]):
        assert (a.verdict, a.messages, a.notes) == (b.verdict, b.messages, b.notes)
