"""The diagnosis facts kept a column at a time (:class:`FactColumns`) read back as the
:class:`NodeFacts` objects they replace, field for field, and judge the same."""

from __future__ import annotations

import copy
import pickle

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_diagnosis_columns import _node

from probe.diagnosis.columns import _COMBINED, _columns, _Table
from probe.diagnosis.factcolumns import _FLOATS, _SLOTS, FactColumns
from probe.diagnosis.facts import NodeFacts, RankFacts, _restored
from probe.diagnosis.rank import diagnose_facts

_MODULES = ["", "", "Module.a.Linear.forward.0", "Module.b.Block.forward.1"]


def _values(node: NodeFacts) -> tuple:
    return tuple(getattr(node, name) for name in NodeFacts.__slots__)


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[NodeFacts], dict[str, str], list[int]]:
    """Nodes in dump order (``order`` their position, ``module`` their entry's parent), the parents, and window cuts."""
    nodes = [draw(_node(i, _MODULES)) for i in range(draw(st.integers(0, 14)))]
    parents = {n.entry: n.module for n in reversed(nodes)}
    for i, n in enumerate(nodes):
        n.order, n.module = i, parents.get(n.entry, "")
    return nodes, parents, draw(st.lists(st.integers(0, 14), max_size=4))


def _stored(nodes: list[NodeFacts], parents: dict[str, str], cuts: list[int]) -> FactColumns:
    store = FactColumns(_restored)
    bounds = [0] + sorted(c for c in set(cuts) if 0 < c < len(nodes)) + [len(nodes)]
    for lo, hi in zip(bounds, bounds[1:]):  # a window's rows, ``order`` counted in the window, no module
        rows = [(v[0], k, *v[2:18], "", *v[19:]) for k, v in enumerate(map(_values, nodes[lo:hi]))]
        store.extend(rows, lambda entries: [parents.get(entry, "") for entry in entries])
    return store


def test_slots_are_those_of_node_facts() -> None:
    assert _SLOTS == NodeFacts.__slots__


@settings(max_examples=120, deadline=None)
@given(case=_case())
def test_columns_read_back_as_the_nodes(case: tuple) -> None:
    nodes, parents, cuts = case
    store = _stored(nodes, parents, cuts)
    assert len(store) == len(nodes)
    assert repr(list(store)) == repr(nodes)  # repr: NaN deviations compare unequal to themselves
    assert [repr(store[i]) for i in range(-len(nodes), len(nodes))] == [repr(n) for n in nodes + nodes]
    assert repr(store[1:-1]) == repr(nodes[1:-1])
    assert repr(list(pickle.loads(pickle.dumps(store)))) == repr(nodes)
    assert repr(list(copy.deepcopy(store))) == repr(nodes)
    # every field's values, made without a node (deviations as float64 arrays, the others by combination)
    assert repr(_per_node(_columns(store))) == repr(_per_node(_columns(nodes)))


def _per_node(table: _Table) -> list[list]:
    """Each column of ``table`` as one value a node."""
    return [list(table.entries), list(table.modules), list(table.orders),
            *([list(table.deviations[name]) for name in _FLOATS]),
            *([table.combos[name][code] for code in table.codes.tolist()] for name in _COMBINED)]


@settings(max_examples=100, deadline=None)
@given(case=_case(), leaves=st.lists(st.tuples(st.integers(0, 13), st.sampled_from([0.0, 0.25, 3.0]),
                                                st.sampled_from(["", ".input.1", "other.input.0"])), max_size=4))
def test_a_leaf_set_later_is_the_one_a_node_would_hold(case: tuple, leaves: list) -> None:
    nodes, parents, cuts = case
    store = _stored(nodes, parents, cuts)
    for index, dev, name in leaves:
        if index < len(nodes):
            tail = name.startswith(".")
            store.set_leaf(index, dev, name, tail)
            node = nodes[index]
            node.leaf_dev, node.worst_leaf = dev, node.entry + name if tail else name
    assert repr(list(store)) == repr(nodes)


@settings(max_examples=80, deadline=None)
@given(case=_case())
def test_facts_kept_as_columns_diagnose_as_the_nodes(case: tuple) -> None:
    nodes, parents, cuts = case
    as_nodes = RankFacts(rank=0, step=0, label="r", nodes=nodes)
    as_columns = RankFacts(rank=0, step=0, label="r", nodes=_stored(nodes, parents, cuts))
    assert orjson.dumps(diagnose_facts([as_columns]).to_dict()) == orjson.dumps(diagnose_facts([as_nodes]).to_dict())


@settings(max_examples=100, deadline=None)
@given(case=_case(), picked=st.lists(st.integers(0, 13), max_size=8))
def test_row_names_are_those_the_nodes_give(case: tuple, picked: list[int]) -> None:
    nodes, parents, cuts = case
    store = _stored(nodes, parents, cuts)
    positions = [i for i in picked if i < len(nodes)]
    for name in ("worst_in", "worst_out", "worst_param", "worst_leaf", "worst_reduced"):
        assert store.row_names(name, positions) == [getattr(nodes[i], name) for i in positions]


def test_nodes_differing_only_in_names_and_deviations_share_one_combination() -> None:
    nodes = [NodeFacts(f"Functional.relu.{i}.forward", i, "api", "Functional.relu", in_dev=i / 7, out_dev=i / 3,
                       worst_in=f"Functional.relu.{i}.forward.input.0", dtype="float32") for i in range(50)]
    store = _stored(nodes, {}, [10, 30])
    assert len(store.combos) == 1 and len(store.codes) == 50
    store.set_leaf(7, 0.5, ".input.0", True)
    assert len(store.combos) == 2 and store[7].worst_leaf == "Functional.relu.7.forward.input.0"
    assert repr(store[8]) == repr(nodes[8])


def test_whole_columns_are_the_kept_ones_read_only() -> None:
    nodes = [NodeFacts(f"Functional.relu.{i}.forward", i, "api", "Functional.relu", in_dev=i / 7, out_dev=i / 3)
             for i in range(20)]
    store = _stored(nodes, {}, [5])
    table = _columns(store)
    assert table.entries is store.entries and table.modules is store.modules  # no copy of a list per entry
    in_dev, out_dev = table.deviations["in_dev"], table.deviations["out_dev"]
    assert in_dev.tolist() == [i / 7 for i in range(20)] and out_dev.tolist() == [i / 3 for i in range(20)]
    for column in (in_dev, out_dev):  # views of the kept deviations, which the ranking cannot change
        assert column.base is not None and not column.flags.writeable
        with pytest.raises(ValueError):
            column[0] = 1.0
