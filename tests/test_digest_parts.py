"""Stream digest builders' parts: a window digested by a copy of a builder (a forked process),
merged into the real builder, gives the digest the real builder makes of every window itself.

Each builder of a streamed compare (diagnosis facts, advisor, collective) has ``part(window)``,
``skip(names)`` and ``merge(part)``. The windows of a compare are cut at arbitrary entries and
dealt to the real builder (``add``) or to a copy made right after construction (``skip`` for the
real one's windows, ``part`` for its own); the real builder merges the copy's parts, pickled, in
order, and adds a window itself when ``merge`` declines. The analyzers' outputs must be those of
a builder that added every window (which equal a whole compare's: ``tests/test_streaming.py``).
"""

from __future__ import annotations

import copy
import json
import pickle
from dataclasses import replace
from functools import lru_cache
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import DATA
from probe.analysis.advisor import advisor_text, explain
from probe.analysis.analyzers import AdvisorAnalyzer, CollectiveAnalyzer
from probe.analysis.collective import check_collectives
from probe.analysis.nodes import ENTRY_OF
from probe.diagnosis.analyzer import DiagnosisAnalyzer
from probe.diagnosis.parents import ParentMap
from probe.diagnosis.rank import diagnose_facts
from probe.errors import NotStreamable
from probe.pipeline import compare
from probe.result import CompareResult

CASES = (
    "pytorch/stat_mix_cnn",  # statistics, modules and APIs, backward, parameters_grad, forward after backward
    "pytorch/stat_mix_tfm",
    "pytorch/md5_mix_tfm",  # md5
    "pytorch/tensor_mix_tfm",  # tensor mode, no failing row
    "pytorch/tensor_mix_cnn",  # tensor mode, the first failing row deep
    "pytorch/multirank_cnn",  # Distributed.all_reduce (shared outputs), two ranks
    "pytorch/structure_extra_layer_cnn",  # unmatched rows
    "pytorch/nan_inf_cnn",
    "pytorch/fuzzy_match_tfm",  # unmatched rows, no failing row
    "diagnosis/s05_llama_grad_x2_l0_fp32",  # the first failing row deep (entry 251 of 300)
    "diagnosis/s52_clean_llama_identical_fp32",  # identical: no failing row, the advisor never stops
    "diagnosis/s11_convgn_lr_step1_u2_fp32",  # two steps, one without a failing row
    "mindspore/cross_layer_mix_statistics",  # Cell entries, unmatched rows
    "mindspore/ms_pynative_mix_md5",
    "automatch/sa04_enc_wrapper_and_calls",  # many unmatched rows
)
ANALYZERS = (DiagnosisAnalyzer(), AdvisorAnalyzer(), CollectiveAnalyzer())


@lru_cache(maxsize=None)
def _results(case: str) -> tuple[CompareResult, ...]:
    return tuple(compare(DATA / case / "target", DATA / case / "golden", analyze=False))


def _entries(result: CompareResult) -> list[list[Any]]:
    return [list(group) for _, group in groupby(result.records, key=ENTRY_OF)]


def _windows(result: CompareResult, cuts: list[int]) -> list[CompareResult]:
    """The result cut before each entry number in ``cuts`` (windows of whole entries)."""
    entries = _entries(result)
    bounds = [0] + sorted(c for c in set(cuts) if 0 < c < len(entries)) + [len(entries)]
    return [replace(result, records=[r for e in entries[lo:hi] for r in e]) for lo, hi in zip(bounds, bounds[1:])]


def _names(window: CompareResult) -> list[str]:
    return [entry for entry, _ in groupby(window.records, key=ENTRY_OF)]


def _shell(result: CompareResult) -> CompareResult:
    return replace(result, records=[])


def _plain(analyzer: Any, result: CompareResult, windows: list[CompareResult]) -> Any:
    """The digest of a builder that adds every window."""
    builder = analyzer.digest_stream(None, _shell(result))
    for window in windows:
        builder.add(window)
    return builder.finish(_shell(result))


def _dealt(analyzer: Any, result: CompareResult, windows: list[CompareResult], copied: list[bool]) -> Any:
    """The digest of a builder that merges the parts a copy made of the windows ``copied`` marks."""
    real = analyzer.digest_stream(None, _shell(result))
    twin = copy.deepcopy(real)  # what a process forked right after construction holds
    parts = []
    for window, by_copy in zip(windows, copied):
        if by_copy:
            parts.append(pickle.dumps(twin.part(window), protocol=pickle.HIGHEST_PROTOCOL))
        else:
            twin.skip(_names(window))
    for window, by_copy in zip(windows, copied):  # the real builder meets the windows in order
        if not by_copy:
            real.add(window)
        elif not real.merge(pickle.loads(parts.pop(0))):
            real.add(window)
    return real.finish(_shell(result))


def _shown(analyzer: Any, digests: list[Any]) -> Any:
    """What an analyzer makes of the digests of every rank of one step (comparable with ``==``)."""
    if isinstance(analyzer, DiagnosisAnalyzer):
        facts = [repr(d) for d in digests]  # repr: a NaN deviation equals itself
        return facts, repr(diagnose_facts(digests))
    if isinstance(analyzer, AdvisorAnalyzer):
        return [(repr(d.payload), explain(d.payload)) for d in digests], advisor_text([d.payload for d in digests])
    nodes = [[(n.entry, n.rank, n.index, [repr(r) for r in n.records], n.stack, n.peers) for n in d.payload]
             for d in digests]
    by_rank = {d.rank if d.rank is not None else i: d.payload for i, d in enumerate(digests)}
    return nodes, repr(check_collectives(by_rank, md5=digests[0].md5))


def _outcome(make: Any) -> Any:
    try:
        return make()
    except NotStreamable:
        return NotStreamable


def _check(results: tuple[CompareResult, ...], cuts: list[int], copied: list[bool]) -> None:
    for analyzer in ANALYZERS:
        plain, dealt = [], []
        for result in results:
            windows = _windows(result, cuts)
            deal = (copied * len(windows))[:len(windows)]
            plain.append(_outcome(lambda: _plain(analyzer, result, windows)))
            dealt.append(_outcome(lambda: _dealt(analyzer, result, windows, deal)))
        if NotStreamable in plain or NotStreamable in dealt:
            assert plain == dealt, analyzer.name
        else:
            assert _shown(analyzer, dealt) == _shown(analyzer, plain), analyzer.name


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("size", [1, 3, 8])
def test_parts_of_alternate_windows_merge_to_the_plain_digest(case: str, size: int) -> None:
    results = _results(case)
    count = max(len(_entries(r)) for r in results)
    _check(results, list(range(size, count, size)), [False, True])
    _check(results, list(range(size, count, size)), [True, True, False])


@given(data=st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_parts_merge_to_the_plain_digest_wherever_windows_are_cut(data: st.DataObject) -> None:
    results = _results(data.draw(st.sampled_from(CASES)))
    count = max(len(_entries(r)) for r in results)
    cuts = data.draw(st.lists(st.integers(1, count - 1), max_size=12))
    copied = data.draw(st.lists(st.booleans(), min_size=1, max_size=13))
    _check(results, cuts, copied)


GOLDEN = (1.0, -1.0, 0.1, 2.0)


def _tensor(scale: float) -> dict:
    mx, mn, mean, norm = (v * scale for v in GOLDEN)
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": mx, "Min": mn,
            "Mean": mean, "Norm": norm, "requires_grad": False}


def _dump(path: Path, entries: list[tuple[str, float]]) -> Path:
    """A dump whose entry ``name`` reads one input and writes one output of ``scale`` times the golden values."""
    data = {name: {"input_args": [_tensor(1.0)], "output": [_tensor(scale)]} for name, scale in entries}
    path.mkdir(parents=True)
    (path / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                                "dump_data_dir": None, "data": data}))
    return path / "dump.json"


def _pair(tmp_path: Path, entries: list[tuple[str, float]]) -> tuple[CompareResult, ...]:
    target = _dump(tmp_path / "t", entries)
    golden = _dump(tmp_path / "g", [(name, 1.0) for name, _ in entries])
    return tuple(compare(target, golden, analyze=False))


def _late_forward(tmp_path: Path, failing: str) -> tuple[CompareResult, ...]:
    """A backward call dumped before its forward call; ``failing`` names the entry whose output fails."""
    names = ["Functional.conv2d.0.forward", "Functional.relu.0.backward", "Functional.linear.0.forward",
             "Functional.gelu.0.forward", "Functional.relu.0.forward", "Functional.add.0.forward"]
    return _pair(tmp_path, [(n, 3.0 if n == failing else 1.0) for n in names])


@pytest.mark.parametrize("failing", ["", "Functional.conv2d.0.forward", "Functional.relu.0.backward",
                                     "Functional.linear.0.forward", "Functional.add.0.forward"])
@pytest.mark.parametrize("cuts", [[], [1], [2], [1, 2, 3, 4, 5], [3], [2, 4]])
@pytest.mark.parametrize("copied", [[True], [False, True], [True, False]])
def test_a_forward_call_after_its_backward_call_stops_the_stream_alike(tmp_path: Path, failing: str, cuts: list[int],
                                                                      copied: list[bool]) -> None:
    results = _late_forward(tmp_path, failing)
    _check(results, cuts, copied)
    if failing in ("", "Functional.relu.0.backward"):  # the backward call looked for its forward call
        advisor = ANALYZERS[1]
        with pytest.raises(NotStreamable):
            _plain(advisor, results[0], _windows(results[0], cuts))


@pytest.mark.parametrize("cuts", [[], [1], [2], [3], [1, 2, 3, 4, 5], [2, 4]])
@pytest.mark.parametrize("copied", [[True], [False, True], [True, False]])
def test_ignored_ops_and_their_backward_calls_are_passed_over_alike(tmp_path: Path, cuts: list[int],
                                                                   copied: list[bool]) -> None:
    # the ignored op's output differs by 5% (no rule fires); its backward call is ignored as well
    results = _pair(tmp_path, [("Functional.conv2d.0.forward", 1.0), ("Tensor.__setitem__.0.forward", 1.05),
                               ("Functional.relu.0.forward", 1.0), ("Tensor.__setitem__.0.backward", 1.0),
                               ("Functional.gelu.0.forward", 1.0), ("Functional.linear.0.forward", 1.6)])
    advice = _plain(ANALYZERS[1], results[0], _windows(results[0], [])).payload
    assert advice.culprit.node.entry == "Functional.linear.0.forward"
    _check(results, cuts, copied)


def test_merge_declines_a_part_made_on_what_does_not_hold_and_changes_nothing() -> None:
    # a copy that judged windows the real builder never had (not what a stream does) assumes
    # the backward pass began (diagnosis) and the failing row was found (advisor)
    result = _results("pytorch/stat_mix_cnn")[0]
    windows = _windows(result, list(range(1, len(_entries(result)))))
    for analyzer in ANALYZERS[:2]:
        real = analyzer.digest_stream(None, _shell(result))
        twin = copy.deepcopy(real)
        before = pickle.dumps(real)
        parts = [pickle.loads(pickle.dumps(twin.part(window))) for window in windows]
        assert not real.merge(parts[-1]), analyzer.name
        assert pickle.dumps(real) == before, analyzer.name
        for window in windows:
            real.add(window)
        assert _shown(analyzer, [real.finish(_shell(result))]) == _shown(analyzer, [_plain(analyzer, result, windows)])


def test_a_copy_that_makes_parts_lets_the_parents_go_and_the_real_builder_keeps_them() -> None:
    # a forked copy only makes parts and skips windows: construct.json's entries are no longer held there
    result = _results("pytorch/stat_mix_cnn")[0]
    windows = _windows(result, [2, 5])
    real = DiagnosisAnalyzer().digest_stream(None, _shell(result))
    real._parents(ParentMap.of([{entry: "Module.m.M.forward.0" for window in windows for entry in _names(window)}]))
    for make in (lambda twin: twin.part(windows[0]), lambda twin: twin.skip(_names(windows[0]))):
        twin = copy.deepcopy(real)
        make(twin)
        assert not len(twin.parents) and twin.parent_of(["Functional.x.0.forward"]) == [""]
    assert len(real.parents) == sum(len(_names(w)) for w in windows)
    for window in windows:
        real.add(window)
    assert set(real.finish(_shell(result)).nodes.modules) == {"Module.m.M.forward.0"}


def test_merged_facts_keep_the_window_names_given_instead_of_the_parts_copies() -> None:
    result = _results("pytorch/stat_mix_cnn")[0]
    windows = _windows(result, [2, 5])
    real = DiagnosisAnalyzer().digest_stream(None, _shell(result))
    twin = copy.deepcopy(real)
    kept: list[str] = []
    for window in windows:
        part = pickle.loads(pickle.dumps(twin.part(window)))  # its entry names are copies
        names = [f"{name}" for name in _names(window)] + ["Module.not.in.window.forward.0"]  # strings held here
        kept += names[:-1]
        real.names(names)
        assert real.merge(part)
    nodes = real.finish(_shell(result)).nodes
    assert all(entry is name for entry, name in zip(nodes.entries, kept)) and len(nodes.entries) == len(kept)
    assert _shown(DiagnosisAnalyzer(), [real.finish(_shell(result))]) == \
        _shown(DiagnosisAnalyzer(), [_plain(DiagnosisAnalyzer(), result, windows)])
