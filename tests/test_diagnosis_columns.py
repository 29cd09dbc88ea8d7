"""The diagnosis judged a column at a time answers byte for byte as the node-by-node ranking
(``diagnosis_plain``), and its column helpers equal the one-value functions they stand for."""

from __future__ import annotations

import math
import statistics

import numpy as np
import orjson
from diagnosis_plain import plain_diagnose_facts, plain_kind_gains
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.diagnosis.facts import NodeFacts, RankFacts, _kind, op_of
from probe.diagnosis.floor import group_gains, kind_gains, local_floor, local_floors, unit_roundoff
from probe.diagnosis.columns import backward_calls, finite_or_none
from probe.diagnosis.rank import MAX_SCORE, _rounded, diagnose_facts, forward_of
from probe.diagnosis.report import POINT_KEYS, Diagnosis, Points, Suspect, _as_written

_ENTRY = st.one_of(
    st.builds("{}.{}.{}".format, st.sampled_from(["Functional.linear", "Torch.exp", "Tensor.add"]),
              st.integers(0, 2), st.sampled_from(["forward", "backward"])),
    st.builds("Module.{}.{}.{}".format, st.sampled_from(["a.Linear", "b.Block"]),
              st.sampled_from(["forward", "backward"]), st.integers(0, 1)),
    st.sampled_from(["Module.a.Linear.parameters_grad", "backward", "backward.0", "x.backward.y.z", "mybackward.0"]),
)
_DEV = st.one_of(st.sampled_from([0.0, 1e-9, 2.0 ** -24, 2.0 ** -8, 1e-3, 0.05, 0.5, 1.0, 10.0, 1e308, 5e-324,
                                  math.inf, math.nan]),
                 st.floats(0.0, 1e3))
_DTYPE = st.sampled_from(["float32", "bfloat16", "float16", "", "int64", "weird"])
_WORST = st.sampled_from(["", ".input.0", ".output.0", "elsewhere.output.1"])


@st.composite
def _node(draw: st.DrawFn, order: int, modules: list[str]) -> NodeFacts:
    entry = draw(_ENTRY)
    kind = draw(st.one_of(st.just(_kind(entry)), st.sampled_from(["api", "module", "parameters_grad"])))
    names = {name: entry + tail if tail.startswith(".") else tail
             for name, tail in zip(("worst_in", "worst_out", "worst_param", "worst_leaf", "worst_reduced"),
                                   draw(st.lists(_WORST, min_size=5, max_size=5)))}
    return NodeFacts(
        entry, draw(st.one_of(st.just(order), st.integers(0, 9))), kind,
        draw(st.one_of(st.just(op_of(entry, kind)), st.sampled_from(["Functional.linear", "x"]))),
        draw(st.one_of(st.just(".backward" in entry or kind == "parameters_grad"), st.booleans())),
        draw(_DEV), draw(_DEV), draw(_DEV), draw(_DEV), nan_in=draw(st.booleans()), nan_out=draw(st.booleans()),
        argument=draw(st.sampled_from(["", "", "x.input.2 is 1.0 instead of 0.5"])),
        unmatched=draw(st.integers(0, 2)), matched=draw(st.integers(0, 2)), reduced_dev=draw(_DEV),
        width=draw(st.sampled_from([1, 24, 4096, 1 << 20, 1 << 70])), dtype=draw(_DTYPE), exact=draw(st.booleans()),
        module=draw(st.sampled_from(modules)), **names)


@st.composite
def _rank(draw: st.DrawFn, first: int = 0) -> RankFacts:
    modules = ["", "", "Module.a.Linear.forward.0", "Module.b.Block.forward.1", "Module.a.Linear.backward.0"]
    count = draw(st.integers(0, 14))
    nodes = [draw(_node(first + i, modules)) for i in range(count)]
    return RankFacts(rank=draw(st.integers(0, 1)), step=draw(st.integers(0, 1)), label="r", nodes=nodes,
                     golden_only=draw(st.integers(0, 1)))


@settings(max_examples=600, deadline=None)
@given(ranks=st.lists(_rank(), min_size=1, max_size=3), batch=st.integers(1, 6))
def test_column_wise_diagnosis_writes_the_bytes_of_the_node_by_node_one(ranks: list[RankFacts], batch: int) -> None:
    found = diagnose_facts(ranks)
    plain = plain_diagnose_facts(ranks)
    assert found.verdict == plain.verdict
    assert b"".join(found.json_pieces(batch)) == orjson.dumps(plain.to_dict(), option=orjson.OPT_APPEND_NEWLINE)
    assert orjson.dumps(found.to_dict()) == orjson.dumps(plain.to_dict())


@settings(max_examples=100, deadline=None)
@given(ranks=st.lists(_rank(first=(1 << 63) - 7), min_size=1, max_size=3))
def test_suspects_whose_orders_pass_64_bits_rank_as_sort_key_ranks_them(ranks: list[RankFacts]) -> None:
    """The ranking sorts the suspects' keys as numpy columns; orders too large for them take ``sorted``."""
    assert orjson.dumps(diagnose_facts(ranks).to_dict()) == orjson.dumps(plain_diagnose_facts(ranks).to_dict())


def test_diagnosis_of_many_ordinary_nodes_equals_the_node_by_node_one() -> None:
    """A few thousand nodes with the usual names, shapes of deviation and module links."""
    rng = np.random.default_rng(7)
    nodes = []
    for i in range(3000):
        op = ["Functional.linear", "Torch.exp", "Tensor.add", "Functional.gelu"][i % 4]
        entry = f"{op}.{i // 8}.{'backward' if i > 2000 else 'forward'}"
        module = f"Module.layers.{i // 50}.Block.forward.0" if i % 3 else ""
        dev = float(rng.choice([0.0, rng.random() * 1e-6, rng.random() * 1e-3, rng.random()]))
        nodes.append(NodeFacts(entry, i, "api", op, i > 2000, in_dev=dev, out_dev=dev * float(rng.random() * 8),
                               param_dev=float(rng.random() * 1e-6), leaf_dev=float(rng.random() * 1e-5),
                               width=int(rng.integers(1, 5000)), dtype=["float32", "bfloat16"][i % 2],
                               exact=False, module=module, worst_out=entry + ".output.0"))
    ranks = [RankFacts(rank=0, step=0, label="r", nodes=nodes)]
    found, plain = diagnose_facts(ranks), plain_diagnose_facts(ranks)
    assert found.suspects and found.to_dict() == plain.to_dict()
    assert b"".join(found.json_pieces()) == orjson.dumps(plain.to_dict(), option=orjson.OPT_APPEND_NEWLINE)


_RATIO = st.one_of(st.floats(0.0, 1e6), st.sampled_from([0.0, 1.0, 4.0, math.inf]))
_FINITE = st.one_of(st.floats(0.0, 1e6), st.sampled_from([0.0, 1.0, 4.0]))


@settings(max_examples=300, deadline=None)
@given(samples=st.lists(st.tuples(st.sampled_from("abcd"), _FINITE, _FINITE, _DTYPE, st.integers(1, 1 << 17)),
                        max_size=30))
def test_kind_gains_are_the_clamped_medians(samples: list) -> None:
    """Over finite deviations (the diagnosis samples no others)."""
    assert kind_gains(samples) == plain_kind_gains(samples)


@settings(max_examples=300, deadline=None)
@given(groups=st.lists(st.integers(0, 4), max_size=40), data=st.data())
def test_group_gains_take_each_groups_median(groups: list[int], data: st.DataObject) -> None:
    ratios = data.draw(st.lists(_RATIO, min_size=len(groups), max_size=len(groups)))
    gains = group_gains(np.array(groups, np.intp), np.array(ratios, float), 5).tolist()
    for group in range(5):
        mine = [r for g, r in zip(groups, ratios) if g == group]
        assert gains[group] == (2.0 if len(mine) < 3 else min(4.0, max(1.0, statistics.median(mine))))


@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(_DTYPE, st.one_of(st.integers(0, 1 << 18), st.just(1 << 70))), max_size=20))
def test_local_floors_equal_local_floor(pairs: list) -> None:
    units = np.array([unit_roundoff(d) for d, _ in pairs], float)
    assert local_floors(units, [w for _, w in pairs]).tolist() == [local_floor(d, w) for d, w in pairs]


_POINT_VALUES = st.tuples(st.text(max_size=4), st.integers(0, 9), st.one_of(st.none(), st.floats()),
                          st.one_of(st.none(), st.floats()), st.text(max_size=3),
                          st.sampled_from(["forward", "backward"]), st.sampled_from(["api", "module"]),
                          st.one_of(st.none(), st.integers(1, 9)))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(_POINT_VALUES, max_size=12), start=st.integers(0, 13), stop=st.integers(0, 13))
def test_points_read_and_write_as_a_list_of_dicts(rows: list, start: int, stop: int) -> None:
    points = Points(*(list(column) for column in zip(*rows))) if rows else Points(*([] for _ in POINT_KEYS))
    plain = [dict(zip(POINT_KEYS, row)) for row in rows]
    assert len(points) == len(plain) and orjson.dumps(list(points)) == orjson.dumps(plain)
    assert orjson.dumps(points[start:stop]) == orjson.dumps(plain[start:stop])
    batch = max(stop, 1)
    assert list(points.json_batches(batch)) == [orjson.dumps(plain[i:i + batch])[1:-1] for i in range(0, len(plain), batch)]
    line = {"rank": 0, "step": 0, "label": "x", "points": points}
    diagnosis = Diagnosis(verdict="noise", series=[line])
    assert b"".join(diagnosis.json_pieces(3)) == orjson.dumps(
        {"verdict": "noise", "noise_floor": {}, "suspects": [], "series": [{**line, "points": plain}]},
        option=orjson.OPT_APPEND_NEWLINE)


@settings(max_examples=500, deadline=None)
@given(names=st.lists(st.lists(st.sampled_from(["backward", "forward", "Module", "0", "", "xbackward", "backwardx"]),
                               max_size=5).map(".".join), max_size=6))
def test_backward_calls_read_with_their_forward_names(names: list[str]) -> None:
    saved, forward = backward_calls(names)
    expected = [(i, forward_of(name) or "") for i, name in enumerate(names) if "backward" in name]
    assert list(zip(saved, forward)) == expected


_NUMBER = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=300, deadline=None)
@given(suspects=st.lists(st.builds(Suspect, st.text(max_size=8), st.integers(0, 3), st.integers(0, 3),
                                   st.text(max_size=8), st.floats(allow_nan=True, allow_infinity=True),
                                   st.text(max_size=20), st.sampled_from(["forward", "backward"]),
                                   st.integers(0, 10 ** 6), _NUMBER, _NUMBER), max_size=6),
       extra=st.booleans())
def test_suspects_written_as_dataclasses_are_their_dicts(suspects: list[Suspect], extra: bool) -> None:
    """The diagnosis JSON writes plain suspects through orjson's dataclass support: the bytes of ``to_dict``."""
    if extra and suspects:
        suspects[-1].note = "not a field"  # type: ignore[attr-defined]
    diagnosis = Diagnosis(verdict="divergent", suspects=suspects)
    assert b"".join(diagnosis.json_pieces()) == orjson.dumps(diagnosis.to_dict(), option=orjson.OPT_APPEND_NEWLINE)
    assert (_as_written(suspects) is suspects) == (not extra or not suspects)


_DEVIATION = st.one_of(st.floats(0.0), st.sampled_from([0.0, 1.0, 1e6, math.inf, math.nan]))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_DEVIATION, max_size=30))
def test_finite_or_none_is_each_value_or_none(values: list[float]) -> None:
    """Whichever side (finite or not) is the smaller one is filled in."""
    assert finite_or_none(np.array(values, float)) == [v if v < math.inf else None for v in values]


@settings(max_examples=300, deadline=None)
@given(scores=st.lists(st.one_of(st.floats(0.0), st.sampled_from([1.0, 2.5, 0.0005, 1e6, 123456.7894, math.inf,
                                                                   math.nan])),
                       max_size=30))
def test_rounded_scores_are_those_round_gives(scores: list[float]) -> None:
    capped = np.minimum(np.array(scores, float), MAX_SCORE)
    assert repr(_rounded(capped)) == repr([round(min(score, MAX_SCORE), 3) for score in scores])


@settings(max_examples=500, deadline=None)
@given(thousandths=st.integers(-10 ** 12, 10 ** 12), ulps=st.integers(-4, 4), big=st.floats(-1e300, 1e300))
def test_rounded_near_halves_is_round(thousandths: int, ulps: int, big: float) -> None:
    """Scores a few ulps from a half of a thousandth (where numpy's product could fall on the wrong side), and any
    finite score, round as ``round(score, 3)``."""
    half = (thousandths + 0.5) / 1000
    scores = [half, big, -half, float(np.nextafter(half, math.copysign(math.inf, ulps)))]
    for _ in range(abs(ulps)):
        scores.append(float(np.nextafter(scores[-1], math.copysign(math.inf, ulps))))
    assert repr(_rounded(np.array(scores, float))) == repr([round(score, 3) for score in scores])
