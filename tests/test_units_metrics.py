"""Metric formulas on the spec's hand-made vectors (compare-core.md sections 7.1 and 7.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from probe.modes.statistics import stat_difference
from probe.modes.tensor_metrics import compare_arrays


@pytest.mark.parametrize("npu,bench,diff,rel", [
    (1.0, 0.0, "1.0", "inf"),
    (0.0, 0.0, "0", "0"),
    (math.inf, 1.0, "inf", "inf"),
    (1.0, math.inf, "-inf", "-inf"),
    (-math.inf, 1.0, "-inf", "-inf"),
    (math.nan, 1.0, "Nan", "Nan"),
    (-0.5, 2.0, "-2.5", "125.0%"),
    (1e20, 1e-20, "1e+20", "1e+42%"),
    (3, 3.0, "0.0", "0.0%"),
    (7, 7, "0", "0"),
    (0.0, 0.001, "-0.001", "100.0%"),
    (True, False, "Diff", "Diff"),
    (None, 2.0, "Diff", "Diff"),
    ("npu:0", "cpu", "N/A", "N/A"),
    ("constant", "reflect", "Diff", "Diff"),
    (1.0, "N/A", "N/A", "N/A"),
])
def test_statistic_difference(npu, bench, diff, rel):
    assert stat_difference(npu, bench) == (diff, rel)


def test_statistic_difference_real_dump_example():
    d, r = stat_difference(0.029206663370132446, 0.03920665383338928)
    assert d == "-0.009999990463256836"
    assert float(r[:-1]) == pytest.approx(25.50585037364402, rel=1e-12)


def _metrics(n, b):
    return compare_arrays(np.squeeze(np.asarray(n)), np.squeeze(np.asarray(b)))[0]


@pytest.mark.parametrize("n,b,expected", [
    (np.array([1, 2, 3, 4, 5]), np.array([2, 3, 4, 5, 6]),
     (0.994936676326, 2.23606797749979, 1.0, 0.5, 0.0, 0.0)),
    (np.float32([0, 1, 2, 3]), np.float32([0, 0, 2, 3.003]),
     (0.963624009165, 1.0000045000528175, 1.0, 8388608.0, 0.75, 0.75)),
    (np.zeros(4, np.float32), np.ones(4, np.float32), ("Nan", 2.0, 1.0, 1.0, 0.0, 0.0)),
    (np.ones(4, np.float32), np.zeros(4, np.float32), ("Nan", 2.0, 1.0, 8388608.0, 0.0, 0.0)),
    (np.zeros(4, np.float32), np.zeros(4, np.float32), (1.0, 0.0, 0.0, 0.0, 1.0, 1.0)),
    (np.float32([1, 2, 3]), np.float32([1, 2, 3.0001]),
     (1.0, 9.989738464355469e-05, 9.9897385e-05, 3.329802e-05, 1.0, 1.0)),
    (np.float32(2.0), np.float32(2.5),
     ("unsupported", "unsupported", 0.5, 0.20000000298, "unsupported", "unsupported")),
    (np.ones((1, 4), np.float32), np.ones(4, np.float32), (1.0, 0.0, 0.0, 0.0, 1.0, 1.0)),
    (np.zeros((8, 16), np.float32), np.zeros((16, 8), np.float32), ("shape unmatched",) * 6),
    (np.float32(np.nan), np.float32(np.nan), ("unsupported", "unsupported", "Nan", "Nan", "unsupported", "unsupported")),
])
def test_tensor_metrics(n, b, expected):
    got = _metrics(n, b)
    for value, want in zip(got, expected):
        if isinstance(want, str):
            assert value == want
        else:
            assert float(value) == pytest.approx(want, rel=1e-6, abs=1e-12)


def test_nan_positions_must_agree():
    n = np.ones((2, 2), np.float32)
    b = n.copy()
    n[0, 0] = np.nan
    b[0, 1] = np.nan
    assert _metrics(n, b) == ("N/A",) * 6
    b = n.copy()
    got = _metrics(n, b)  # same positions: compared on the rest
    assert got[0] == 1.0 and got[2] == 0.0


def test_cosine_rounding_above_09999():
    n = np.array([1.0, 2.0, 3.0, 4.0])
    b = n + np.array([0.0, 0.0, 0.0, 0.02])
    cos = _metrics(n, b)[0]
    assert cos == round(cos, 6)
