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
