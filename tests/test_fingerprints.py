"""The fingerprints of earlier outputs kept mostly in a sorted array answer ``in`` as the plain set
of every fingerprint does, and the diagnosis digests made with them are the same."""

from __future__ import annotations

import json.decoder
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_digest_parts import ANALYZERS, _plain, _results, _shown, _windows

import probe.diagnosis.fingerprints as fingerprints
from probe.diagnosis.analyzer import DiagnosisAnalyzer
from probe.diagnosis.fingerprints import Fingerprints

_NAN = json.decoder.NaN  # the one NaN object parsed NaN tokens are: fingerprints holding it are equal
_FLOAT = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 5e-324, -5e-324, 1e308, float("inf"), float("-inf")]),
                   st.floats(allow_nan=False, width=32))


@st.composite
def _fingerprint(draw: st.DrawFn) -> object:
    """A fingerprint as :func:`probe.diagnosis.facts._fingerprint` makes them (two packed floats, almost always)."""
    high, low = draw(_FLOAT) or 0.0, draw(_FLOAT) or 0.0  # ``or``: -0.0 packs as 0.0
    shape = draw(st.sampled_from(["pair", "pair", "pair", "constant", "norm", "nan"]))
    if shape == "pair" and high != low:
        return struct.pack("<2d", high, low)
    if shape == "norm":
        return struct.pack("<3d", high, high, low)
    if shape == "nan":
        return (high, _NAN)
    return struct.pack("<2d", high, high) + b"-"


@settings(max_examples=300, deadline=None)
@given(recent=st.integers(0, 5),
       steps=st.lists(st.tuples(st.sampled_from(["update", "or", "spill"]), st.lists(_fingerprint(), max_size=8)),
                      max_size=12),
       asked=st.lists(_fingerprint(), max_size=10))
def test_membership_is_that_of_a_plain_set(recent: int, steps: list, asked: list) -> None:
    kept, plain = Fingerprints(recent=recent), set()
    for what, fps in steps:
        if what == "or":
            kept |= set(fps)
        else:
            kept.update(fps)
        if what == "spill":
            kept.spill()
        plain.update(fps)
        for fp in [*plain, *asked, *fps]:
            assert (fp in kept) == (fp in plain)


@pytest.mark.parametrize("case", ["diagnosis/s05_llama_grad_x2_l0_fp32", "pytorch/stat_mix_tfm",
                                  "pytorch/nan_inf_cnn", "pytorch/tensor_mix_cnn"])
def test_digests_are_those_of_a_plain_set(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fingerprint of an earlier window moved to the array: the same facts as keeping all in the set."""
    analyzer = next(a for a in ANALYZERS if isinstance(a, DiagnosisAnalyzer))
    results = _results(case)
    cuts = list(range(1, max(len(r.records) for r in results)))
    expected = _shown(analyzer, [_plain(analyzer, r, _windows(r, cuts)) for r in results])
    monkeypatch.setattr(fingerprints, "RECENT", 0)
    assert _shown(analyzer, [_plain(analyzer, r, _windows(r, cuts)) for r in results]) == expected
