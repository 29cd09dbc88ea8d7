"""md5 mode's fast paths equal the plain rules: the checksum judge, rule hits kept as shared
tuples until a caller reads the messages, the Err_message and extra-value columns, and the
collective digest's window nodes."""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from probe.analysis.analyzers import _CollectiveStream, _shares_output, _window_nodes
from probe.analysis.nodes import build_nodes
from probe.cells import SafeCsvWriter
from probe.csvtext import csv_lines
from probe.exporters import CSV_INF
from probe.judge import judge_records
from probe.model import ERROR, NA, PASS, VERDICT_RANK, WARNING, Pair, Row
from probe.modes import common
from probe.modes.md5 import MSG_CRC, MSG_PARAMETER, Md5Mode
from probe.modes.md5_lines import row_lines
from probe.result import UNMATCHED, CompareResult, RowResult, extra_values, raise_all, text_keys

_CHECKSUM = st.one_of(st.none(), st.sampled_from(["", "N/A", "Nan", "abcd1234", "00000000", "ABCD1234"]),
                      st.integers(0, 2), st.just(["a", "b"]), st.floats(allow_nan=True))
_MESSAGE = st.sampled_from([MSG_CRC, MSG_PARAMETER, "error: x", "warning: y, \"quoted\"", "=1+1"])
_VERDICT = st.sampled_from([PASS, WARNING, ERROR])


def _row(name: str, entry: str, md5: Any = None) -> Row:
    return Row(name, entry, "input", "torch.float32", "[2]", (1.0, 0.0, 0.5, 2.0), "True", md5, "-1")


def _plain_raise_to(row: dict[str, Any], verdict: str, message: str) -> None:
    """RowResult.raise_to as it was: a plain list of messages, the verdict raised by rank."""
    if row["verdict"] == UNMATCHED:
        row["verdict"] = PASS
    if VERDICT_RANK[verdict] > VERDICT_RANK[row["verdict"]]:
        row["verdict"] = verdict
    row["messages"].append(message)


def _plain_md5_judge(rows: list[dict[str, Any]]) -> None:
    """Md5Mode.judge as it was, on plain records."""
    for r in rows:
        if not r["matched"]:
            r["notes"].append(common.MSG_UNMATCHED)
            continue
        npu, bench = r["metrics"]
        if npu != bench:
            if npu in (NA, "Nan", "", None) or bench in (NA, "Nan", "", None):
                _plain_raise_to(r, WARNING, MSG_PARAMETER)
            else:
                _plain_raise_to(r, ERROR, MSG_CRC)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_CHECKSUM, st.booleans(), _CHECKSUM), max_size=8))
def test_md5_judge_equals_the_plain_rules(cases: list[tuple[Any, bool, Any]]) -> None:
    entry = "Functional.f.0.forward"
    pairs = [Pair(_row(f"{entry}.input.{i}", entry, t), _row(f"{entry}.input.{i}", entry, g) if matched else None)
             for i, (t, matched, g) in enumerate(cases)]
    mode = Md5Mode()
    records = mode.compute(pairs, type("Context", (), {"progress": None})())
    plain = [{"matched": r.matched, "metrics": r.metrics, "verdict": r.verdict, "messages": [], "notes": []}
             for r in records]
    mode.judge(records)
    _plain_md5_judge(plain)
    assert [(r.verdict, r.messages, r.notes) for r in records] == [(p["verdict"], p["messages"], p["notes"])
                                                                     for p in plain]
    assert common.err_message_column(records) == [json.dumps(p["messages"] + p["notes"]) if p["messages"] or p["notes"]
                                                  else "[]" for p in plain]


_STEP = st.one_of(
    st.tuples(st.just("raise"), _VERDICT, _MESSAGE),
    st.tuples(st.just("append"), _MESSAGE),
    st.tuples(st.just("note"), _MESSAGE),
    st.tuples(st.just("read"), st.sampled_from(["messages", "notes", "extra"])),
    st.tuples(st.just("set"), st.lists(_MESSAGE, max_size=2)),
    st.tuples(st.just("extra"), st.sampled_from(["stack", "problem"]), st.integers(0, 3)),
    st.tuples(st.just("verdict"), st.sampled_from([PASS, WARNING, ERROR, NA])),
)


def _apply(row: RowResult, plain: dict[str, Any], step: tuple) -> None:
    kind = step[0]
    if kind == "raise":
        row.raise_to(step[1], step[2])
        _plain_raise_to(plain, step[1], step[2])
    elif kind == "append":
        row.messages.append(step[1])
        plain["messages"].append(step[1])
    elif kind == "note":
        row.notes.append(step[1])
        plain["notes"].append(step[1])
    elif kind == "read":
        getattr(row, step[1])
    elif kind == "set":
        row.messages = list(step[1])
        plain["messages"] = list(step[1])
    elif kind == "verdict":  # set by a caller
        row.verdict = plain["verdict"] = step[1]
    else:
        row.extra[step[1]] = step[2]
        plain["extra"][step[1]] = step[2]


def _stepped(i: int, matched: bool, steps: list[tuple]) -> tuple[RowResult, dict[str, Any]]:
    """Row ``i`` of a test after ``steps`` (see :func:`_apply`), and what plain lists hold after them."""
    entry = f"Functional.f.{i}.forward"
    row = _row(entry + ".input.0", entry, "abcd")
    record = RowResult(Pair(row, row if matched else None), ("abcd", "abcd"))
    plain = {"verdict": record.verdict, "messages": [], "notes": [], "extra": {}}
    for step in steps:
        _apply(record, plain, step)
    return record, plain


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(_STEP, max_size=5)), max_size=6))
def test_rule_hits_and_columns_equal_plain_lists(rows: list[tuple[bool, list[tuple]]]) -> None:
    """Whatever a caller does with a row (rule hits, reading or changing its lists), its messages,
    notes and verdict are those of plain lists, and the column helpers read every row as it reads."""
    records, plains = zip(*(_stepped(i, matched, steps) for i, (matched, steps) in enumerate(rows))) if rows else ((), ())
    keys = text_keys(records)
    column = common.err_message_column(records)  # read before the rows' lists are made by the checks below
    for record, plain, key, text in zip(records, plains, keys, column):
        expected = plain["messages"] + plain["notes"]
        assert (key or ()) == tuple(expected)
        assert text == (json.dumps(expected) if expected else "[]")
        assert text == common.err_message(record)
        assert record.has_text == bool(expected)
        assert (record.verdict, record.messages, record.notes) == (plain["verdict"], plain["messages"], plain["notes"])
    assert extra_values(records, "stack", NA) == [p["extra"].get("stack", NA) for p in plains]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(_STEP, max_size=4)), min_size=1, max_size=6),
       st.lists(st.integers(0, 5), max_size=10), _VERDICT, st.one_of(_MESSAGE, st.just(["not", "text"])))
@example([(True, [("verdict", ERROR)])], [0], WARNING, MSG_CRC)  # a verdict set without a message is not lowered
@example([(False, []), (True, [("raise", WARNING, "w")])], [0, 1, 0], ERROR, MSG_CRC)
def test_raising_rows_together_equals_raising_each(rows: list[tuple[bool, list[tuple]]], picks: list[int],
                                                   verdict: str, message: Any) -> None:
    """raise_all on some rows (whatever rules hit them before, a row picked twice) leaves each row as
    raise_to one row at a time does."""
    together = [_stepped(i, matched, steps)[0] for i, (matched, steps) in enumerate(rows)]
    each = [_stepped(i, matched, steps)[0] for i, (matched, steps) in enumerate(rows)]
    picked = [i % len(rows) for i in picks]
    raise_all([together[i] for i in picked], verdict, message)
    for i in picked:
        each[i].raise_to(verdict, message)
    assert text_keys(together) == text_keys(each)
    assert [(r.verdict, r.messages, r.notes) for r in together] == [(r.verdict, r.messages, r.notes) for r in each]


def test_a_rule_hit_read_as_messages_is_a_list_of_its_own() -> None:
    """Rows failing the same rule share one kept message until one of them is read and changed."""
    entry = "Functional.f.0.forward"
    a, b = (RowResult(Pair(_row(entry + ".input.0", entry), _row(entry + ".input.0", entry)), ()) for _ in range(2))
    a.raise_to(ERROR, MSG_CRC)
    b.raise_to(ERROR, MSG_CRC)
    a.messages.append("more")
    assert a.messages == [MSG_CRC, "more"] and b.messages == [MSG_CRC]
    b.raise_to(WARNING, "w")
    assert b.messages == [MSG_CRC, "w"] and b.verdict == ERROR


_ENTRY_NAMES = ["Distributed.all_reduce.0.forward", "Distributed.broadcast.0.forward", "Functional.relu.0.forward",
                "Distributed.all_gather.0.forward", "Tensor.add.0.forward", "Distributed.all_reduce.1.forward",
                "Distributed.send.0.forward", "Distributed.reduce_scatter.0.forward", "Communication.x.0.forward"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_ENTRY_NAMES), st.integers(1, 3)), max_size=12))
def test_window_nodes_equal_build_nodes(entries: list[tuple[str, int]]) -> None:
    """The collective digest's nodes of a window (and its entry count) are those build_nodes keeps,
    whichever entries run together or repeat."""
    records = [RowResult(Pair(_row(f"{entry}.input.{i}", entry), _row(f"{entry}.input.{i}", entry)), ())
               for entry, rows in entries for i in range(rows)]
    window = CompareResult(label="w", mode=Md5Mode(), records=records, rank=1)
    nodes, count = _window_nodes(window)
    expected = build_nodes(window, keep=_shares_output, judge=False)
    assert count == len(_runs(records))
    assert [(n.entry, n.index, n.records, n.peers, n.rank) for n in nodes] == [
        (n.entry, n.index, n.records, n.peers, n.rank) for n in expected]
    stream = _CollectiveStream(window)
    stream.merge(stream.part(window))
    assert [(n.entry, n.index) for n in stream.nodes] == [(n.entry, n.index) for n in expected]


def _runs(records: list[RowResult]) -> list[str]:
    runs: list[str] = []
    for r in records:
        if not runs or runs[-1] != r.pair.target.entry:
            runs.append(r.pair.target.entry)
    return runs


class _ByEntry:
    """Md5Mode judged entry by entry, as modes without ``judge_entries`` are."""

    def __init__(self) -> None:
        self.mode = Md5Mode()

    def judge(self, group: list[RowResult]) -> None:
        self.mode.judge(group)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_ENTRY_NAMES), st.integers(1, 3), _CHECKSUM, st.booleans()), max_size=10),
       st.one_of(st.none(), st.dictionaries(st.sampled_from(_ENTRY_NAMES), st.lists(st.text(max_size=3), max_size=2))))
def test_judging_rows_at_once_equals_judging_each_entry(entries: list[tuple], stack: dict | None) -> None:
    """A mode that judges rows on their own gets every entry in one call: verdicts, messages and
    the stack text of each entry's first row are those of a call per entry."""
    from probe.judge import judge_records

    def records() -> list[RowResult]:
        pairs = [Pair(_row(f"{entry}.input.{i}", entry, "abcd"), _row(f"{entry}.input.{i}", entry, golden)
                      if matched else None)
                 for entry, rows, golden, matched in entries for i in range(rows)]
        return Md5Mode().compute(pairs, type("Context", (), {"progress": None})())

    at_once, by_entry = records(), records()
    judge_records(Md5Mode(), at_once, stack)
    judge_records(_ByEntry(), by_entry, stack)
    assert [(r.verdict, r.messages, r.notes, r.extra_value("stack")) for r in at_once] == [
        (r.verdict, r.messages, r.notes, r.extra_value("stack")) for r in by_entry]


_PLAIN_OR_NOT = st.one_of(st.sampled_from(["abcd1234", "N/A", "[0]", "", "a.b_c", "x,y", 'q"q', "=1+1", "-1", " a",
                                           "\tx", "a\rb", "é1", "0x1F", "[0, 1]", "A/B"]),
                          st.text(alphabet="ab09./_[],=-\" \r\né", max_size=6))


_FLAG = st.sampled_from(["True", "False", "N/A", "=x", None])
_MOSTLY_PLAIN = st.one_of(st.just("abcd1234"), st.just("a.b_c"), st.just("N/A"), _PLAIN_OR_NOT)
_CELL = st.sampled_from(["torch.float32", "N/A", "[2, 3]", "[]", "=cmd", "<class 'int'>"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_MOSTLY_PLAIN, st.one_of(_MOSTLY_PLAIN, st.integers(1, 9)), st.one_of(_MOSTLY_PLAIN, _CHECKSUM),
                          st.booleans(),
                          st.one_of(_MOSTLY_PLAIN, _CHECKSUM), _FLAG, _FLAG, _CELL, _CELL),
                min_size=1, max_size=8),
       st.booleans())
@example([("a", "a", "abcd", True, "abcd", "True", "N/A", "torch.float32", "[2]"),  # a golden flag N/A: consistent
          ("b", "b", "abcd", False, "abcd", "True", "True", "torch.float32", "[2]")], False)  # and N/A, unmatched
@example([("a", 7, "abcd", True, "abcd", "True", "True", "torch.float32", "[2]")], True)  # a name that is not text
def test_csv_columns_equal_the_rows_csv_writer_writes(rows: list[tuple], with_stack: bool) -> None:
    """md5's CSV (each row's line in one pass, or its columns) gives the bytes csv.writer gives for the
    rendered rows; rows without a golden row and golden cells reading N/A are kept apart."""
    pairs = []
    for i, (name, golden_name, target, matched, golden, flag, golden_flag, dtype, shape) in enumerate(rows):
        entry = f"Functional.f.{i % 3}.forward"
        t = Row(name or entry, entry, "input", dtype, shape, (1.0, 0.0, 0.5, 2.0), flag, target, "-1")
        g = Row(golden_name or entry, entry, "input", dtype if i % 2 else "N/A", shape if i % 2 else "N/A",
                (1.0, 0.0, 0.5, 2.0), golden_flag, golden, "-1")
        pairs.append(Pair(t, g if matched else None))
    mode = Md5Mode()
    records = mode.compute(pairs, type("Context", (), {"progress": None})())
    stack = {f"Functional.f.{i}.forward": ["File a, line 1", 'q"'] for i in range(0, 3, 2)}
    judge_records(mode, records, stack if with_stack else None)
    rendered = [mode.render(r, with_stack) for r in records]
    buffer = io.StringIO()
    SafeCsvWriter(buffer).writerows(rendered)
    assert csv_lines(mode.csv_columns(records, with_stack, CSV_INF)) == buffer.getvalue()
    assert mode.render_columns(records, with_stack) == [list(c) for c in zip(*rendered)]


def test_a_usual_window_is_written_line_by_line() -> None:
    """Plain names and checksums, rows with and without a golden row: the one-pass lines serve."""
    entry = "Functional.f.0.forward"
    pairs = [Pair(_row(f"{entry}.input.{i}", entry, "abcd1234"),
                  _row(f"{entry}.input.{i}", entry, "abcd1234" if i % 2 else "00ff00ff") if i < 3 else None)
             for i in range(4)]
    mode = Md5Mode()
    records = mode.compute(pairs, type("Context", (), {"progress": None})())
    judge_records(mode, records, {entry: ["File a, line 1"]})
    for with_stack in (True, False):
        lines = row_lines(records, with_stack)
        assert lines is not None and csv_lines([lines]) == csv_lines(mode.render_columns(records, with_stack))
    records[0].pair.target.name = "a,b"
    assert row_lines(records, True) is None
    records[0].pair.target.name = "a"
    records[1].pair.golden.name = None  # not text: csv.writer writes an empty field, not "None"
    assert row_lines(records, True) is None
