"""Flattening names/fields and matching rules (compare-core.md sections 4 and 5)."""

from __future__ import annotations

import pytest

from probe.errors import InputError
from probe.formats.msprobe.flatten import crc32_hex, flatten_entries
from probe.match import assign_keys, backward_renames, fuzzy_key, match_exact, match_fuzzy
from probe.model import Row


def _rows(data: dict) -> list[Row]:
    rows, skipped, _ = flatten_entries(data.items())
    return rows


def test_row_names_and_order():
    data = {
        "Module.conv.Conv2d.forward.0": {
            "output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2]}],
            "parameters": {"weight": {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [1]}},
            "input_kwargs": {"k": {"type": "int", "value": 1}},
            "input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": []},
                           [{"type": "int", "value": 1}, {"type": "int", "value": 1}], None],
        },
        "Module.fc.Linear.parameters_grad.0": {"weight": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [8, 16]}]},
        "foo": {"input_args": []},
    }
    rows, skipped, count = flatten_entries(data.items())
    assert [r.name for r in rows] == [
        "Module.conv.Conv2d.forward.0.input.0",
        "Module.conv.Conv2d.forward.0.input.1.0",
        "Module.conv.Conv2d.forward.0.input.1.1",
        "Module.conv.Conv2d.forward.0.input.2",
        "Module.conv.Conv2d.forward.0.input.k",
        "Module.conv.Conv2d.forward.0.parameters.weight",
        "Module.conv.Conv2d.forward.0.output.0",
        "Module.fc.Linear.parameters_grad.0.weight",
    ]
    assert skipped == ["foo"] and count == 3
    none_row = rows[3]
    assert (none_row.dtype, none_row.shape, none_row.requires_grad, none_row.md5) == ("N/A", "N/A", "N/A", None)


@pytest.mark.parametrize("leaf,name,dtype,shape,stat,md5", [
    ({"type": "torch.Size", "value": [3, 2]}, "x", "torch.Size", "[3, 2]", None, "1b09b49f"),
    ({"type": "slice", "value": [1, 3, None]}, "x", "slice", "(3,)", None, "c7249af0"),
    ({"type": "ellipsis", "value": "..."}, "x", "ellipsis", "[]", "...", "1a43b61b"),
    ({"type": "int", "value": 0}, "src", "int", "[]", "0", "0"),
    ({"type": "torch.ProcessGroup", "group_ranks": [0, 1]}, "x", "torch.ProcessGroup", "[]", "[0, 1]", "[0, 1]"),
    ({"type": "int", "value": 1}, "x", "<class 'int'>", "[]", 1, "83dcefb7"),
    ({"type": "bool", "value": True}, "x", "<class 'bool'>", "[]", True, "5dcee3b3"),
    ({"type": "torch.dtype", "value": "torch.float16"}, "x", "<class 'str'>", "[]", "torch.float16", "ed9130d3"),
])
def test_non_tensor_leaves(leaf, name, dtype, shape, stat, md5):
    rows = _rows({"Torch.f.0.forward": {"input_kwargs": {name: leaf}}})
    row = rows[0]
    assert (row.dtype, row.shape, row.stats[0], row.md5) == (dtype, shape, stat, md5)


def test_crc32_of_empty_text():
    assert crc32_hex("") == "00000000"


def test_data_name_gives_the_row_name_and_may_not_leave_the_directory():
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [1], "data_name": "A.f.0.forward.input.0.pt"}
    assert _rows({"A.f.0.forward": {"input_args": [leaf]}})[0].name == "A.f.0.forward.input.0"
    with pytest.raises(InputError, match="outside"):
        _rows({"A.f.0.forward": {"input_args": [{**leaf, "data_name": "../x.pt"}]}})


def test_backward_renumbering_pairs_by_order():
    renames = backward_renames(["Functional.relu.0.backward", "Functional.relu.2.backward",
                                "Module.layer1.Linear.backward.1"])
    assert renames == {"Functional.relu.0.backward": "Functional.relu.0.backward",
                       "Functional.relu.2.backward": "Functional.relu.1.backward",
                       "Module.layer1.Linear.backward.1": "Module.layer1.Linear.backward.0"}


def _leaf_rows(names: list[str], dtype: str = "torch.float32") -> list[Row]:
    rows = [Row(n, n.rsplit(".", 2)[0], "input", dtype, "[1]", (1, 1, 1, 1), "False", None, "-1") for n in names]
    assign_keys(rows, renumber=True)
    return rows


def test_exact_matching_keeps_target_order_and_drops_golden_only():
    target = _leaf_rows(["F.a.0.forward.input.0", "F.a.0.forward.input.1", "F.b.0.forward.input.0"])
    golden = _leaf_rows(["F.d.0.forward.input.0", "F.a.0.forward.input.0"])
    pairs, golden_only = match_exact(target, golden)
    assert [(p.target.name, p.golden.name if p.golden else None) for p in pairs] == [
        ("F.a.0.forward.input.0", "F.a.0.forward.input.0"),
        ("F.a.0.forward.input.1", None),
        ("F.b.0.forward.input.0", None),
    ]
    assert golden_only == 1


def test_dtype_gate():
    target = _leaf_rows(["F.a.0.forward.input.0"], "torch.float32")
    assert match_exact(target, _leaf_rows(["F.a.0.forward.input.0"], "torch.float16"))[0][0].golden is not None
    assert match_exact(target, _leaf_rows(["F.a.0.forward.input.0"], "torch.int64"))[0][0].golden is None


def test_fuzzy_key_drops_the_call_index_only():
    assert fuzzy_key("Functional.relu.3.forward.input.0") == "Functional.relu.forward.input.0"
    assert fuzzy_key("Module.layer1.Linear.forward.2.output.0") == "Module.layer1.Linear.forward.output.0"
    assert fuzzy_key("Module.feed_forward.Linear.forward.0.output.0") == "Module.feed_forward.Linear.forward.output.0"


def test_fuzzy_matching_spec_example_and_no_dropped_rows():
    target = _leaf_rows(["F.relu.0.forward.output.0", "F.relu.1.forward.output.0", "F.gelu.0.forward.output.0",
                         "F.add.3.forward.output.0"])
    golden = _leaf_rows(["F.relu.5.forward.output.0", "F.gelu.7.forward.output.0", "F.relu.6.forward.output.0",
                         "F.add.0.forward.output.0"])
    pairs, _ = match_fuzzy(target, golden)
    got = [(p.target.name.split(".")[1:3], p.golden.name.split(".")[2] if p.golden else None) for p in pairs]
    assert got == [(["relu", "0"], "5"), (["relu", "1"], None), (["gelu", "0"], "7"), (["add", "3"], "0")]
    # more target rows than golden rows: nothing vanishes
    many = _leaf_rows([f"F.relu.{i}.forward.output.0" for i in range(4)])
    pairs, _ = match_fuzzy(many, _leaf_rows(["F.relu.9.forward.output.0"]))
    assert [p.target.name for p in pairs] == [r.name for r in many]
