"""Report windows rendered by the forked child of a streamed compare equal a serial stream's bytes."""

from __future__ import annotations

import json

import pytest

import probe.runtime as runtime
import probe.window_render as window_render
from probe.export_stream import CsvStream
from probe.window_render import WindowRenderer
from report_snapshots import DIGESTS, collect, probe_argv, snapshot_cases

EXPECTED = json.loads(DIGESTS.read_text())
CASES = [c for c in snapshot_cases() if not any(o in c[2] for o in ("-dm", "-fm", "-da", "-am", "-cm", "-lm"))]

pytestmark = pytest.mark.skipif(not runtime.allowed(), reason="needs fork and two CPUs")


@pytest.fixture
def rendered(monkeypatch):
    """Windows the child rendered, per streamed plan; the child takes every window it can
    (the parent never says where it is) and the parent waits for each."""
    counts: list[int] = []
    close = WindowRenderer.close

    def spy(self):
        counts.append(self.rendered)
        close(self)

    monkeypatch.setattr(window_render, "LEAD", 0)
    monkeypatch.setattr(WindowRenderer, "at", lambda self, index: None)
    monkeypatch.setattr(WindowRenderer, "close", spy)
    return counts


@pytest.mark.parametrize("case,label,argv", [pytest.param(*c, id=f"{c[0].name}-{c[1]}") for c in CASES])
def test_child_rendered_reports_are_byte_identical(case, label, argv, tmp_path, run_probe, rendered) -> None:
    result = run_probe(*probe_argv(argv, tmp_path / "out"), "--window", "2", cwd=case)
    got = {"exit_code": str(result.code), **collect(tmp_path / "out")}
    expected = EXPECTED[f"{case.parent.name}/{case.name}/{label}"]
    changed = sorted(name for name in set(got) | set(expected) if got.get(name) != expected.get(name))
    assert not changed, f"reports differ: {changed} (windows the child rendered: {rendered})"
    assert not list((tmp_path / "out").rglob(".probe-tmp.*")), "temporaries left behind"


def test_most_streamed_windows_come_from_the_child(tmp_path, run_probe, rendered) -> None:
    for case, label, argv in CASES:
        run_probe(*probe_argv(argv, tmp_path / label / case.name), "--window", "2", cwd=case)
    assert len(rendered) >= 25 and sum(rendered) >= 100


STAT_CASE = next(c for c in CASES if c[0].name == "stat_mix_tfm" and c[1] == "csv")


def _reports(fmt: str, tmp_path, run_probe, window: str) -> dict[str, str]:
    case, _, argv = STAT_CASE
    args = [a for a in probe_argv(argv, tmp_path / window) if a != "csv,json"]
    args[args.index("--format") + 1:args.index("--format") + 1] = [fmt]
    assert run_probe(*args, "--window", window, cwd=case).code == 0
    return collect(tmp_path / window)


@pytest.mark.parametrize("fmt,limit", [("csv,json", 50), ("csv", 219), ("csv", 7), ("xlsx", 60)])
def test_row_limit_cuts_fall_where_the_whole_report_cuts(fmt, limit, tmp_path, run_probe, monkeypatch,
                                                        rendered) -> None:
    from probe.exporters import CsvExporter, XlsxExporter

    monkeypatch.setattr(CsvExporter, "max_rows", limit)
    monkeypatch.setattr(XlsxExporter, "max_rows", limit)
    assert _reports(fmt, tmp_path, run_probe, "0") == _reports(fmt, tmp_path, run_probe, "5")
    assert rendered and rendered[0] > 0


def test_a_child_that_fails_leaves_the_rest_to_the_parent(tmp_path, run_probe, monkeypatch, rendered) -> None:
    calls = []
    render = CsvStream.render

    def failing(self, result, file):  # runs in the child only: the third window fails there
        calls.append(file)
        if len(calls) == 3:
            raise OSError("no space left")
        render(self, result, file)

    monkeypatch.setattr(CsvStream, "render", failing)
    assert _reports("csv,json", tmp_path, run_probe, "0") == _reports("csv,json", tmp_path, run_probe, "3")
    assert rendered == [2]


def test_windows_the_parent_began_first_are_dropped(tmp_path, run_probe, monkeypatch, rendered) -> None:
    take = WindowRenderer._take

    def every_other(self, index, rows):  # the child took even windows after the parent began them
        return False if index % 2 == 0 else take(self, index, rows)

    monkeypatch.setattr(WindowRenderer, "_take", every_other)
    assert _reports("csv,json", tmp_path, run_probe, "0") == _reports("csv,json", tmp_path, run_probe, "2")
    assert rendered and rendered[0] > 0
