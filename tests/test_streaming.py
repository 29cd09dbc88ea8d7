"""Streamed compares (a window of entries at a time) write the same bytes as whole compares."""

from __future__ import annotations

import json

import pytest

import probe.streaming as streaming
from report_snapshots import DIGESTS, collect, probe_argv, snapshot_cases

EXPECTED = json.loads(DIGESTS.read_text())
CASES = list(snapshot_cases())


@pytest.fixture
def streamed(monkeypatch):
    """Labels of the plans that ran a window at a time."""
    labels: list[str] = []
    original = streaming._stream

    def spy(plan, *args, **kwargs):
        outcome = original(plan, *args, **kwargs)
        if outcome is not None:
            labels.append(plan.label)
        return outcome

    monkeypatch.setattr(streaming, "_stream", spy)
    return labels


@pytest.mark.parametrize("window", [1, 3])
@pytest.mark.parametrize("case,label,argv", [pytest.param(*c, id=f"{c[0].name}-{c[1]}") for c in CASES])
def test_streamed_reports_are_byte_identical(case, label, argv, window, tmp_path, run_probe, streamed) -> None:
    result = run_probe(*probe_argv(argv, tmp_path / "out"), "--window", str(window), cwd=case)
    got = {"exit_code": str(result.code), **collect(tmp_path / "out")}
    expected = EXPECTED[f"{case.parent.name}/{case.name}/{label}"]
    changed = sorted(name for name in set(got) | set(expected) if got.get(name) != expected.get(name))
    assert not changed, f"streamed reports differ: {changed} (streamed plans: {streamed})"


def _console(text: str, out) -> list[str]:
    """Console lines with the output directory and timestamps made neutral."""
    import re

    return [re.sub(r"_\d{14}(?:_\d+)?", "_TS", line.replace(str(out), "OUT")) for line in text.splitlines()]


@pytest.mark.parametrize("case,label,argv", [pytest.param(*c, id=f"{c[0].name}-{c[1]}") for c in CASES[::3]])
def test_streamed_console_lines_are_the_same(case, label, argv, tmp_path, run_probe, streamed) -> None:
    whole = run_probe(*probe_argv(argv, tmp_path / "a"), "--window", "0", cwd=case)
    assert not streamed
    windowed = run_probe(*probe_argv(argv, tmp_path / "b"), "--window", "2", cwd=case)
    assert whole.code == windowed.code
    assert _console(whole.out, tmp_path / "a") == _console(windowed.out, tmp_path / "b")


def test_most_fixture_compares_stream(tmp_path, run_probe, streamed) -> None:
    """The byte-identity tests above mean something: the plain compares of the fixtures do stream."""
    for case, label, argv in CASES:
        if not any(opt in argv for opt in ("-dm", "-fm", "-da", "-am", "-cm", "-lm")):
            run_probe(*probe_argv(argv, tmp_path / label / case.name), "--window", "4", cwd=case)
    assert len(streamed) >= 25


# --------------------------------------------------------------------------------------
# windows equal the whole pairing (property test over generated dumps)
# --------------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from probe.errors import NotStreamable  # noqa: E402
from probe.formats.msprobe.reader import MsprobeJsonReader  # noqa: E402
from probe.match import assign_keys, match_exact  # noqa: E402
from probe.windows import GoldenIndex, TargetWindows  # noqa: E402

_NAMES = [
    "Functional.relu.0.forward", "Functional.relu.1.forward", "Functional.relu.0.backward",
    "Functional.relu.1.backward", "Functional.relu.3.backward", "Module.m.Linear.forward.0",
    "Module.m.Linear.backward.0", "Module.m.Linear.backward.2", "Module.m.Linear.parameters_grad",
    "Torch.add.0.forward", "Torch.add.0.forward.input.0.forward", "Torch.add.0.forward.output.forward",
    "Module.m.Linear.parameters_grad.weight.x.forward", "not_an_entry",
]
_LEAF = st.one_of(
    st.none(),
    st.builds(lambda dtype, v: {"type": "torch.Tensor", "dtype": dtype, "shape": [2], "Max": v, "Min": v,
                                "Mean": v, "Norm": v, "requires_grad": False},
              st.sampled_from(["torch.float32", "torch.float16", "torch.int64"]), st.floats(-2, 2)),
    st.builds(lambda v: {"type": "int", "value": v}, st.integers(0, 3)),
)
_BODY = st.fixed_dictionaries({}, optional={
    "input_args": st.lists(_LEAF, max_size=3), "output": st.lists(_LEAF, max_size=2),
    "parameters": st.dictionaries(st.sampled_from(["weight", "bias"]), _LEAF, max_size=2),
    # rows named like the rows of another entry ("X.forward" + ".input.0.forward.input.0")
    "input_kwargs": st.builds(lambda leaf: {"0": {"forward": {"input": [leaf]}}}, _LEAF),
    "weight": st.builds(lambda leaf: {"x": {"forward": {"input": [leaf]}}}, _LEAF),
})
_DUMP = st.lists(st.tuples(st.sampled_from(_NAMES), _BODY), max_size=12, unique_by=lambda e: e[0])


def _write(path, entries) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task": "statistics", "level": "mix", "framework": "pytorch",
                                "data": dict(entries)}, indent=1))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=_DUMP, golden=_DUMP, window=st.integers(1, 5), cap=st.sampled_from([64 << 20, 1, 400]))
def test_windows_pair_as_the_whole_dumps(tmp_path, target, golden, window, cap, monkeypatch) -> None:
    import probe.windows

    monkeypatch.setattr(probe.windows, "WINDOW_BYTES", cap)  # windows cut by dump text size too
    reader = MsprobeJsonReader()
    _write(tmp_path / "t" / "dump.json", target)
    _write(tmp_path / "g" / "dump.json", golden)
    whole_t, whole_g = reader.load(tmp_path / "t" / "dump.json"), reader.load(tmp_path / "g" / "dump.json")
    assign_keys(whole_g.rows, True)
    assign_keys(whole_t.rows, True)
    pairs, golden_only = match_exact(whole_t.rows, whole_g.rows)
    want = [(p.target.name, p.golden.name if p.golden else None) for p in pairs]
    t_stream, g_stream = reader.stream(tmp_path / "t" / "dump.json"), reader.stream(tmp_path / "g" / "dump.json")
    if t_stream is None or g_stream is None:  # an empty data member: read whole
        assert not target or not golden
        return
    try:
        index = GoldenIndex(g_stream)
        windows = TargetWindows(t_stream, index, window)
        got = [(p.target.name, p.golden.name if p.golden else None) for _, part in windows for p in part]
        got_only = index.finish(window)
    except NotStreamable:  # a renumbered entry without rows: the compare runs whole
        return
    assert got == want
    assert got_only == golden_only


# --------------------------------------------------------------------------------------
# reports past a format's row limit are split as whole reports are
# --------------------------------------------------------------------------------------

STAT_CASE = next(c for c in CASES if c[0].name == "stat_mix_tfm" and c[1] == "csv")


@pytest.mark.parametrize("fmt,limit,reports", [("csv,json", 50, 6), ("csv", 220, 1), ("csv", 219, 2), ("xlsx", 60, 1),
                                               ("xlsx", 500, 1)])
def test_streamed_reports_split_at_the_row_limit(fmt, limit, reports, tmp_path, run_probe, monkeypatch,
                                                 streamed) -> None:
    from probe.exporters import CsvExporter, XlsxExporter

    monkeypatch.setattr(CsvExporter, "max_rows", limit)
    monkeypatch.setattr(XlsxExporter, "max_rows", limit)
    case, _, argv = STAT_CASE
    files = {}
    for name, window in (("whole", "0"), ("streamed", "7")):
        args = [a for a in probe_argv(argv, tmp_path / name) if a != "csv,json"]
        args[args.index("--format") + 1:args.index("--format") + 1] = [fmt]
        assert run_probe(*args, "--window", window, cwd=case).code == 0
        files[name] = collect(tmp_path / name)
    assert streamed == ["dump.json"]
    assert files["whole"] == files["streamed"]
    assert len([f for f in files["whole"] if "compare_result" in f]) == reports  # 220 rows


# --------------------------------------------------------------------------------------
# what only a whole compare does exactly: the stream is abandoned, the report unchanged
# --------------------------------------------------------------------------------------


def _tensor(value: float) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": value, "Min": -value,
            "Mean": value / 2, "Norm": value * 2, "requires_grad": True}


def _entries(scale: float) -> dict:
    return {
        "Functional.linear.0.forward": {"input_args": [_tensor(1.0)], "output": [_tensor(2.0 * scale)]},
        "Functional.linear.1.forward": {"input_args": [_tensor(2.0 * scale)], "output": [_tensor(3.0 * scale)]},
        "Functional.linear.1.backward": {"input": [_tensor(1.0)], "output": [_tensor(1.5 * scale)]},
        "Functional.linear.0.backward": {"input": [_tensor(1.5)], "output": [_tensor(0.5)]},
    }


def _fallbacks() -> dict:
    empty_backward = _entries(1.0) | {"Functional.linear.0.backward": {"input": [], "output": []}}
    backward_first = {k: _entries(1.0)[k] for k in ("Functional.linear.1.backward", "Functional.linear.1.forward",
                                                    "Functional.linear.0.forward")}
    text_md5 = _entries(1.0) | {"Torch.cat.0.forward": {"input_args": [{"type": "str", "value": "md5"}],
                                                         "output": [_tensor(1.0)]}}
    escaped = _entries(1.0) | {'Torch.q\\"x.0.forward': {"output": [_tensor(1.0)]}}
    return {"empty_backward": (empty_backward, False), "backward_first": (backward_first, False),
            "text_md5": (text_md5, False), "escaped": (escaped, False), "plain": (_entries(1.0), True)}


@pytest.mark.parametrize("name", sorted(_fallbacks()))
def test_abandoned_streams_leave_the_whole_report(name, tmp_path, run_probe, streamed) -> None:
    entries, streams = _fallbacks()[name]
    for side, scale in (("target", 1.0), ("golden", 1.3)):
        data = entries if side == "target" else {k: v for k, v in _entries(scale).items()} | {
            k: v for k, v in entries.items() if k not in _entries(1.0)}
        _write(tmp_path / side / "dump.json", list(data.items()) if side == "golden" else list(entries.items()))
    runs = {}
    for run, window in (("whole", "0"), ("streamed", "1")):
        result = run_probe("compare", "-tp", tmp_path / "target" / "dump.json", "-gp", tmp_path / "golden" / "dump.json",
                           "-o", tmp_path / run, "--format", "csv,json", "--window", window)
        runs[run] = (result.code, collect(tmp_path / run), _console(result.out, tmp_path / run))
    assert runs["whole"] == runs["streamed"]
    assert bool(streamed) == streams


def test_window_size_follows_the_request_and_the_dump_size(tmp_path, monkeypatch) -> None:
    from probe.model import CompareRequest, PairPlan

    _write(tmp_path / "t" / "dump.json", list(_entries(1.0).items()))
    plan = PairPlan("dump.json", tmp_path / "t" / "dump.json", tmp_path / "t" / "dump.json")

    def size(keep: bool = False, plan: PairPlan = plan, exporters=(), **options) -> int:
        return streaming.window_size(plan, CompareRequest(plan.target, plan.golden, options=options), keep, exporters)

    assert size() == 0  # small dumps run whole
    assert size(stream_window=5) == 5
    assert size(True, stream_window=5) == 0  # results kept (the Python API)
    assert size(stream_window=5, highlight=True) == 0
    assert size(plan=PairPlan("x", plan.target, plan.golden, pairers=("fuzzy",)), stream_window=5) == 0
    assert size(plan=PairPlan("x", plan.target, plan.golden, pairers=("exact",)), stream_window=5) == 5
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 1)
    assert size() == streaming.AUTO
    assert size(stream_window=0) == 0
    dear = type("Dear", (), {"stream_min_bytes": plan.target.stat().st_size * 2 + 1})()
    assert size(exporters=[dear]) == 0  # an exporter whose stream costs more asks for larger dumps
    assert size(exporters=[dear], stream_window=5) == 5


def test_automatic_windows_grow_with_the_dump_within_bounds() -> None:
    sizes = [streaming.auto_window(n) for n in (0, 10, 10_000, 100_000, 1_000_000, 10**8)]
    assert sizes == sorted(sizes)
    assert sizes[0] == streaming.MIN_WINDOW and sizes[-1] == streaming.MAX_WINDOW
    assert streaming.MIN_WINDOW < streaming.auto_window(100_000) < streaming.MAX_WINDOW
