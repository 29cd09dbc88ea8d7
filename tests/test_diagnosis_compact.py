"""The compact diagnosis digest answers as the plain one: row names kept as tails, packed
fingerprints, and the diagnosis JSON written a batch of points at a time."""

from __future__ import annotations

import math
import pickle

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.diagnosis.facts import NodeFacts, _fingerprint, op_of
from probe.diagnosis.report import Diagnosis, Suspect
from probe.model import Row

_NAME = st.text(alphabet="ab.01", max_size=8)
_WORST = ("worst_in", "worst_out", "worst_param", "worst_leaf", "worst_reduced")


@settings(max_examples=200, deadline=None)
@given(entry=_NAME, names=st.lists(_NAME, min_size=5, max_size=5), tails=st.lists(st.booleans(), min_size=5, max_size=5))
def test_row_names_read_back_as_given(entry: str, names: list[str], tails: list[bool]) -> None:
    given_names = [entry + "." + name if tail else name for name, tail in zip(names, tails)]
    facts = NodeFacts(entry, 0, "api", op_of(entry, "api"), **dict(zip(_WORST, given_names)))
    assert [getattr(facts, name) for name in _WORST] == given_names
    facts.worst_out = "elsewhere.output.0"
    assert facts.worst_out == "elsewhere.output.0"
    assert [getattr(facts, name) for name in _WORST if name != "worst_out"] == \
        [n for n, name in zip(given_names, _WORST) if name != "worst_out"]
    again = pickle.loads(pickle.dumps(facts))
    assert again == facts and [getattr(again, name) for name in _WORST] == [getattr(facts, n) for n in _WORST]


def test_row_name_tails_are_shared() -> None:
    one = NodeFacts("Functional.linear.0.forward", 0, "api", "Functional.linear",
                    worst_in="Functional.linear.0.forward.input.0")
    two = NodeFacts("Functional.linear.1.forward", 1, "api", "Functional.linear",
                    worst_in="Functional.linear.1.forward.input.0")
    assert one.w_in is two.w_in and one.worst_in == "Functional.linear.0.forward.input.0"


def _old_fingerprint(stats: tuple) -> tuple | None:
    """The fingerprint as a tuple of floats (what the packed one must equal exactly when)."""
    from probe.numbers import as_number

    high, low = as_number(stats[0]), as_number(stats[1])
    if high is None or low is None:
        return None
    return (high, low, as_number(stats[3])) if high == low else (high, low)


_STAT = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1.0, -1.0, "nan", "inf"]),
                  st.integers(-3, 3), st.none(), st.text(max_size=2))


@settings(max_examples=500, deadline=None)
@given(a=st.tuples(_STAT, _STAT, _STAT, _STAT), b=st.tuples(_STAT, _STAT, _STAT, _STAT))
def test_packed_fingerprints_compare_as_the_numbers(a: tuple, b: tuple) -> None:
    def row(stats: tuple) -> Row:
        return Row("x.output.0", "x", "output", "torch.float32", "[2]", stats, False, None, "-1")

    old_a, old_b = _old_fingerprint(a), _old_fingerprint(b)
    new_a, new_b = _fingerprint(row(a)), _fingerprint(row(b))
    assert (old_a is None) == (new_a is None)
    if old_a is not None and old_b is not None:
        assert (old_a == old_b) == (new_a == new_b)
        assert (old_a in {old_b}) == (new_a in {new_b})


_NUMBER = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False), st.integers(-5, 5))
_POINT = st.fixed_dictionaries({"node": st.text(max_size=6), "order": st.integers(0, 9), "error": _NUMBER,
                                "floor": _NUMBER, "module": st.text(max_size=4), "direction": st.just("forward"),
                                "kind": st.just("api"), "suspect": st.none()})
_LINE = st.fixed_dictionaries({"rank": st.integers(0, 3), "step": st.integers(0, 3), "label": st.text(max_size=5),
                               "points": st.lists(_POINT, max_size=9)})


@settings(max_examples=200, deadline=None)
@given(series=st.lists(_LINE, max_size=3), batch=st.integers(1, 5), suspects=st.integers(0, 2))
def test_diagnosis_json_written_in_pieces_equals_one_dump(series: list, batch: int, suspects: int) -> None:
    found = [Suspect(node=f"n{i}", rank=0, step=0, kind="introduced", score=1.5, evidence="e", direction="forward",
                     order=i, error=math.inf, floor=0.1) for i in range(suspects)]
    diagnosis = Diagnosis(verdict="divergent" if found else "noise", suspects=found,
                          noise_floor={"float32": {"calls": 1}}, series=series)
    whole = orjson.dumps(diagnosis.to_dict(), option=orjson.OPT_APPEND_NEWLINE)
    assert b"".join(diagnosis.json_pieces(batch)) == whole


@settings(max_examples=300, deadline=None)
@given(entry=st.text(alphabet="ab.", max_size=8))
def test_api_op_type_is_the_first_two_name_parts(entry: str) -> None:
    assert op_of(entry, "api") == ".".join(entry.split(".")[:2])


_DTYPE = st.sampled_from(["torch.float32", "torch.bfloat16", "torch.float16", "torch.int64", "<class 'int'>", "N/A"])
_FACT_ROW = st.tuples(st.sampled_from(["input", "output", "parameters"]), _DTYPE, _DTYPE,
                      st.tuples(_STAT, _STAT, _STAT, _STAT), st.tuples(_STAT, _STAT, _STAT, _STAT), st.booleans())


@settings(max_examples=400, deadline=None)
@given(rows=st.lists(_FACT_ROW, min_size=1, max_size=6))
def test_node_facts_fingerprints_and_dtype_as_the_plain_rules(rows: list) -> None:
    """The inline fingerprint of outputs and the skipped golden dtype give what the helpers give."""
    from probe.diagnosis.facts import dtype_info, lower_dtype, node_facts
    from probe.model import Pair
    from probe.result import RowResult

    entry = "Functional.linear.0.forward"
    records, expected, dtype = [], set(), ""
    for i, (state, t_dtype, g_dtype, t_stats, g_stats, matched) in enumerate(rows):
        name = f"{entry}.{state}.{i}"
        target = Row(name, entry, state, t_dtype, "[2, 3]", t_stats, "False", None, "-1")
        golden = Row(name, entry, state, g_dtype, "[2, 3]", g_stats, "False", None, "-1") if matched else None
        records.append(RowResult(Pair(target, golden), ()))
        if golden is None:
            continue
        (tensor, t_float), (g_tensor, g_float) = dtype_info(t_dtype), dtype_info(g_dtype)
        dtype = lower_dtype(lower_dtype(dtype, t_float), g_float)
        if tensor and g_tensor and state == "output" and _fingerprint(target) is not None:
            expected.add(_fingerprint(target))
    produced: set = set()
    facts = node_facts(entry, 0, records, False, produced, False)
    assert facts.dtype == dtype
    assert produced == expected or (any(isinstance(fp, tuple) for fp in expected)
                                    and len(produced) == len(expected))  # NaN tuples equal nothing
