"""The "error along the network" chart data: downsampling, suspects, series from a graph or a diagnosis."""

from __future__ import annotations

import math
import random

from probe.viewer.chart import DRAW_BUCKETS, chart_data, downsample, key_error


def test_downsample_keeps_every_suspect_and_each_bucket_maximum():
    rng = random.Random(7)
    n = 200_000
    errors = [rng.lognormvariate(-8, 1) for _ in range(n)]
    for i in range(0, n, 997):
        errors[i] = None  # ops without a compared output
    suspects = rng.sample(range(n), 25)
    kept = downsample(errors, suspects)
    assert len(kept) <= 2 * DRAW_BUCKETS + len(suspects) + 2
    assert kept == sorted(set(kept)) and kept[0] == 0 and kept[-1] == n - 1
    assert set(suspects) <= set(kept)
    edges = [int(k * n / DRAW_BUCKETS) for k in range(DRAW_BUCKETS + 1)]
    kept_set = set(kept)
    for lo, hi in zip(edges[:-1], edges[1:]):
        values = [(e, i) for i, e in enumerate(errors[lo:hi], lo) if e is not None]
        assert max(values)[1] in kept_set and min(values)[1] in kept_set
    # the global maximum, wherever it is, is drawn
    errors[123_457] = 1e3
    assert 123_457 in downsample(errors)
    assert downsample([1.0, 2.0, None]) == [0, 1, 2]


def test_chart_data_follows_the_diagnosis_contract():
    points = [
        {"node": f"Functional.op.{i}.forward", "order": i, "error": 1e-4 * (i + 1), "floor": 4e-3,
         "module": "Module.layers.0.Attn.forward.0" if i < 3 else "Module.layers.1.Mlp.forward.0",
         "direction": "forward", "suspect": None}
        for i in range(6)
    ]
    points[4]["suspect"] = 1
    points[5]["error"] = None  # a NaN source written as null
    back = [{"node": "Functional.op.0.backward", "order": 6, "error": "inf", "floor": 1e-2, "module": None,
             "direction": "backward", "suspect": None}]
    diagnosis = {
        "verdict": "divergent",
        "suspects": [{"node": "Functional.op.4.forward", "rank": 1, "step": 0, "kind": "introduced", "score": 9.5,
                      "evidence": "output error 40x its input error"},
                     {"node": "Functional.op.0.backward", "rank": 1, "step": 0, "kind": "nan_source", "score": 3,
                      "evidence": "first inf"}],
        "series": [{"rank": 1, "step": 0, "label": "step0/rank1", "points": list(reversed(points)) + back}],
    }
    data = chart_data(diagnosis)
    (series,) = data["series"]
    assert series["order"] == [0, 1, 2, 3, 4, 5, 6]  # sorted by order
    assert series["suspect"] == [0, 0, 0, 0, 1, 0, 2]  # explicit mark, and suspect 2 found by its node name
    assert series["error"][5] is None and series["nonfinite"] == [0, 0, 0, 0, 0, 0, 1]
    assert series["backward"] == [0, 0, 0, 0, 0, 0, 1]
    names = series["runNames"]
    assert [(a, b, names[m]) for a, b, m in series["runs"]] == [
        (0, 2, "Module.layers.0.Attn.forward.0"), (3, 5, "Module.layers.1.Mlp.forward.0")]
    assert data["suspects"][0]["node"] == "Functional.op.4.forward" and data["verdict"] == "divergent"


def test_key_error_reads_report_cells():
    assert key_error({"a": {"Cosine": "0.99"}, "b": {"Cosine": 1.0}}) == 1 - 0.99
    assert math.isclose(key_error({"a": {"NormRelativeErr": "12.5%", "MaxRelativeErr": "90%"}}), 0.125)
    assert key_error({"a": {"MaxRelativeErr": "3%"}}) == 0.03
    assert key_error({"a": {"Max": "1.0"}, "b": "text"}) is None
    assert math.isnan(key_error({"a": {"NormRelativeErr": "nan"}, "b": {"NormRelativeErr": "1%"}}))
