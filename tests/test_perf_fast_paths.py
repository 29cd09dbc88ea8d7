"""Fast paths must give exactly what the general code gives."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from probe.modes.statistics import stat_difference
from probe.modes.tensor_metrics import compare_arrays


@pytest.mark.parametrize(
    ("npu", "bench", "expected"),
    [
        (1.5, 1.5, ("0", "0")),
        (2, 2, ("0", "0")),
        (0.0, 0.0, ("0", "0")),
        (0.0, -0.0, ("0.0", "inf")),  # equal numbers, different text: msProbe computes
        (1, 1.0, ("0.0", "0.0%")),  # int vs float: texts differ
        (3.0, 2.0, ("1.0", "50.0%")),
        (-1.0, 4.0, ("-5.0", "125.0%")),
        (1.0, 0.0, ("1.0", "inf")),
        (math.nan, math.nan, ("0", "0")),
        (1.0, math.nan, ("Nan", "Nan")),
        (math.inf, 1.0, ("inf", "inf")),
        (True, True, ("0", "0")),
        (True, False, ("Diff", "Diff")),
        (None, 1.0, ("Diff", "Diff")),
    ],
)
def test_stat_difference(npu, bench, expected) -> None:
    assert stat_difference(npu, bench) == expected


def _reference(n: np.ndarray, b: np.ndarray) -> tuple:
    """The metrics from their definitions, in float64 (msProbe's formulas)."""
    n64, b64 = n.astype(np.float64), b.astype(np.float64)
    cos = float(np.dot(n64, b64) / (np.linalg.norm(n64) * np.linalg.norm(b64)))
    diff = n64 - b64
    rel = np.abs((n.astype(np.float32) - b.astype(np.float32)) / b.astype(np.float32))
    return (cos, float(np.linalg.norm(diff)), float(np.abs(diff).max()), float(rel.max()),
            float(np.mean(rel < 0.001)), float(np.mean(rel < 0.005)))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("size", [2, 5000, 70000])
def test_float32_metrics_match_their_definitions(dtype, size) -> None:
    rng = np.random.default_rng(size)
    n = rng.standard_normal(size).astype(dtype)
    b = (n.astype(np.float32) + 0.01 * rng.standard_normal(size)).astype(dtype)
    b[b == 0] = 1  # keep the plain relative-error formula of the reference
    metrics, messages = compare_arrays(n, b)
    assert messages == []
    for got, want in zip(metrics, _reference(n, b)):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-12)


def test_float32_metrics_with_nan_take_the_general_path() -> None:
    n = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    b = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    metrics, messages = compare_arrays(n, b)
    assert metrics == ("N/A",) * 6 and messages


def test_pt_zip_reader_matches_torch_load(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from probe_pytorch.ptzip import read_pt
    from probe_pytorch.tensors import load_pt

    tensors = {
        "f32": torch.randn(4, 5),
        "bf16": torch.randn(3, 7).to(torch.bfloat16),
        "f16": torch.randn(9).half(),
        "i64": torch.arange(6, dtype=torch.int64).reshape(2, 3),
        "bool": torch.tensor([True, False, True]),
        "zero_d": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
    }
    for name, tensor in tensors.items():
        path = tmp_path / f"{name}.pt"
        torch.save(tensor, path)
        array = read_pt(path)
        assert array is not None, name
        want = tensor.float().numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
        assert array.dtype == want.dtype and array.shape == want.shape and np.array_equal(array, want), name
    view = tmp_path / "view.pt"
    torch.save(torch.arange(20.0).reshape(4, 5)[:, 1:3], view)
    assert read_pt(view) is None  # a view: left to torch.load
    assert np.array_equal(load_pt(view), np.arange(20.0, dtype=np.float32).reshape(4, 5)[:, 1:3])
    other = tmp_path / "dict.pt"
    torch.save({"a": torch.ones(2)}, other)
    assert read_pt(other) is None


_EDGE = [0.0, -0.0, 1.0, -1.0, 1e-300, -1e-300, 5e-324, 1e308, -1e308, 2.5, 3.0, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("inf_counts", [False, True])
def test_norm_fraction_equals_the_cell_text_path(inf_counts: bool) -> None:
    from probe.model import Pair, Row
    from probe.modes.statistics import StatRowResult, norm_fraction, relative_fraction, stat_difference

    rng = np.random.default_rng(7)
    values: list = _EDGE + rng.standard_normal(300).tolist() + (rng.standard_normal(100) * 1e-30).tolist()
    values += [1, 0, "1.5", None, True]  # other types take the text path
    for n in values:
        for b in values[:20] + values[-40:]:
            row = StatRowResult(Pair(_row(Row, n), _row(Row, b)))
            want = relative_fraction(stat_difference(n, b)[1], inf_counts)
            got = norm_fraction(row, inf_counts)
            assert got == want or (got != got and want != want), (n, b)


def _row(row_type, norm):
    return row_type("x", "e", "output", "torch.float32", "[2]", (1.0, 0.0, 0.5, norm), "N/A", None, "-1")
