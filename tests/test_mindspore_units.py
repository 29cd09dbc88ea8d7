"""Unit tests of the MindSpore plugin's building blocks."""

from __future__ import annotations

import numpy as np

from probe_mindspore.api_table import builtin_table
from probe_mindspore.kernel_dump import NPY_NAME, locate
from probe_mindspore.kernel_modes import shape_text


def test_builtin_table_translations():
    table = builtin_table()
    assert "table" not in vars(table)  # not read until a name is translated
    assert (table.target_framework, table.golden_framework) == (table.table.target_framework,
                                                                 table.table.golden_framework)
    assert len(table.apis) == 399
    assert table.translate("Mint.abs.0.forward.output.0") == "Torch.abs.0.forward.output.0"
    assert table.translate("MintFunctional.relu.0.backward.input.0") == "Functional.relu.0.backward.input.0"
    assert table.translate("Functional.dense.1.forward.input.0") == "Functional.linear.1.forward.input.0"
    assert table.translate("Functional.add.0.forward.input.0") == "Torch.add.0.forward.input.0"
    assert table.translate("Tensor.swapaxes.0.forward.input.0") == "Tensor.transpose.0.forward.input.0"
    assert table.translate("Cell.fc1.Dense.forward.0.input.0") == "Cell.fc1.Dense.forward.0.input.0"
    # only the leading prefix is renamed (msProbe replaces every "Mint" substring)
    assert table.translate("Mint.MintLike.0.forward.input.0") == "Torch.MintLike.0.forward.input.0"
    assert table.normalize("Mint.abs.0.forward.output.0", "golden") == "Mint.abs.0.forward.output.0"


def test_kernel_file_names_with_and_without_dtype():
    with_dtype = NPY_NAME.match("MatMul.Default_network-Net_MatMul-op1.2.0.1700000000000100.input.0.DefaultFormat.float32.npy")
    without = NPY_NAME.match("MatMul.Default_network-Net_MatMul-op1.2.0.1700000000000100.input.0.DefaultFormat.npy")
    for match in (with_dtype, without):
        assert (match["op_name"], match["io"], match["slot"]) == ("Default_network-Net_MatMul-op1", "input", "0")


def test_locate_rank_step_graph(tmp_path):
    for rel, expected in [
        ("rank_3/Net/1/7", (3, 7, "1")),
        ("20250101120000/5/Net/2/4", (5, 4, "2")),
        ("rank_1/20250101120000/step_2", (1, 2, "")),
        ("rank_0/Net/0/constants", None),
    ]:
        directory = tmp_path / rel
        directory.mkdir(parents=True)
        assert locate(directory, tmp_path) == expected, rel


def test_shape_text_like_msprobe():
    assert shape_text((2, 3)) == "[2, 3]" and shape_text((1,)) == "[1,]" and shape_text(()) == "[]"


def test_raw_bfloat16_npy_is_widened(tmp_path):
    from probe.builtin.modes import load_npy

    values = np.array([1.5, -2.0, 0.099609375], dtype=np.float32)
    raw = (values.view(np.uint32) >> 16).astype(np.uint16).view("V2")
    np.save(tmp_path / "bf16.npy", raw)
    assert np.array_equal(load_npy(tmp_path / "bf16.npy"), values)
