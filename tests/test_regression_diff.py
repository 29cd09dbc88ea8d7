"""``probe diff`` / ``probe.diff_reports`` on real reports (probe's and msProbe's)."""

from __future__ import annotations

import csv
import functools
import gzip
import json
import shutil
from pathlib import Path

import pytest

import probe
from conftest import DATA, PYTORCH_CASES, msprobe_commands
from parity import CROSS_ROW_MESSAGES, VERDICT_RANK, entry_of, read_report

STAT = PYTORCH_CASES / "stat_mix_cnn"
EXTRA = PYTORCH_CASES / "structure_extra_layer_cnn"
MULTI = PYTORCH_CASES / "multirank_cnn"
DIAG = DATA / "diagnosis/s09_convgn_div_channel_scale_fp32"


def _compare(tmp: Path, target: Path, golden: Path, *fmt: str) -> Path:
    run = probe.compare(target, golden, tmp, formats=fmt or ("csv",))
    return run.files[0]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """probe's CSV report of stat_mix_cnn."""
    return _compare(tmp_path_factory.mktemp("old"), STAT / "target/step0", STAT / "golden/step0")


def _rewrite(source: Path, dest: Path, edit) -> Path:
    with open(source, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1:]
    body = edit(header, body)
    with open(dest, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerows([header, *body])
    return dest


RELU_OUT = "Functional.relu.0.forward.output.0"
CONV_IN = "Functional.conv2d.0.forward.input.0"
POOL = "Functional.max_pool2d.0.forward.output.0"


def _edited(report: Path, dest: Path) -> Path:
    """The report with one verdict worsened, one metric moved, one row gone, one row new."""

    def edit(header, body):
        col = {name: i for i, name in enumerate(header)}
        out = []
        for row in body:
            row = list(row)
            if row[0] == CONV_IN:
                row[col["Result"]] = "error"
            if row[0] == RELU_OUT:
                row[col["MaxRelativeErr"]] = "12.5%"
            if row[0] == POOL:
                continue  # vanished
            out.append(row)
        new = list(out[0])
        new[0] = "Functional.dropout.0.forward.output.0"
        new[col["Result"]] = "warning"
        out.append(new)
        return out

    return _rewrite(report, dest, edit)


def test_diff_finds_changed_verdict_moved_metric_added_and_removed(report, tmp_path):
    new = _edited(report, tmp_path / "new.csv")
    diff = probe.diff_reports(report, new, tmp_path / "out")
    s = diff.summary
    assert (s.result_changed, s.metric_moved, s.added, s.removed) == (1, 1, 1, 1)
    assert s.paired == s.old_rows - 1 == s.new_rows - 1
    (changed,) = diff.of_kind("result")
    assert (changed.name, changed.old_result, changed.new_result, changed.newly_failing) == (CONV_IN, "pass", "error", True)
    (moved,) = diff.of_kind("metric")
    _, old_rows = read_report(report)
    old_value = next(r["MaxRelativeErr"] for r in old_rows if r["NPU Name"] == RELU_OUT)
    assert (moved.name, moved.metric, moved.old, moved.new) == (RELU_OUT, "MaxRelativeErr", old_value, "12.5%")
    assert moved.delta == pytest.approx(12.5 - float(old_value.rstrip("%")))
    assert [c.name for c in diff.of_kind("added")] == ["Functional.dropout.0.forward.output.0"]
    assert [c.name for c in diff.of_kind("removed")] == [POOL]
    assert s.newly_failing == 2  # the worsened row and the new warning row
    assert s.transitions == {"pass -> error": 1}
    # the three files say the same
    by_suffix = {p.suffix: p for p in diff.files}
    assert set(by_suffix) == {".csv", ".json", ".md"}
    _, rows = read_report(by_suffix[".csv"])
    assert sorted(r["Change"] for r in rows) == ["added", "metric", "removed", "result"]
    doc = json.loads(by_suffix[".json"].read_text())
    assert doc["summary"]["newly_failing"] == 2 and len(doc["changes"]) == 4
    md = by_suffix[".md"].read_text()
    assert "2 newly failing" in md and "### Removed (1)" in md and "max\\_pool2d" in md


def test_diff_reads_json_and_xlsx_reports_alike(tmp_path):
    paths = probe.compare(STAT / "target/step0", STAT / "golden/step0", tmp_path / "a",
                          formats=("csv", "json", "xlsx")).files
    by_suffix = {p.suffix: p for p in paths}
    other = _compare(tmp_path / "b", EXTRA / "target/step0", EXTRA / "golden/step0")
    reference = probe.diff_reports(by_suffix[".csv"], other)
    for suffix in (".json", ".xlsx"):
        diff = probe.diff_reports(by_suffix[suffix], other)
        assert diff.changes == reference.changes, suffix
    # a real run against another: the extra layer's rows appear, relu no longer warns
    s = reference.summary
    assert s.added == 24 and s.removed == 0
    assert any(c.name == RELU_OUT and (c.old_result, c.new_result) == ("warning", "pass")
               for c in reference.of_kind("result"))
    assert s.metric_moved > 0 and s.fixed >= 1


def test_tolerance_per_metric(report, tmp_path):
    new = _edited(report, tmp_path / "new.csv")
    assert probe.diff_reports(report, new, tolerances=["MaxRelativeErr=20"]).summary.metric_moved == 0
    assert probe.diff_reports(report, new, tolerances={"MaxRelativeErr": 1.0}).summary.metric_moved == 1
    # a metric outside the default set is compared once it has a tolerance
    def bump(header, body):
        i = header.index("NPU max")
        body[3][i] = str(float(body[3][i]) + 1)
        return body

    bumped = _rewrite(report, tmp_path / "bumped.csv", bump)
    assert probe.diff_reports(report, bumped).summary.metric_moved == 0
    assert probe.diff_reports(report, bumped, tolerances=["NPU max=0.5"]).summary.metric_moved == 1
    assert probe.diff_reports(report, bumped, tolerances=["NPU max=2"]).summary.metric_moved == 0


def test_fail_on_exit_codes(report, tmp_path, run_probe):
    new = _edited(report, tmp_path / "new.csv")
    same = shutil.copy(report, tmp_path / "same.csv")

    def better(header, body):
        i = header.index("Result")
        return [[*r[:i], "pass", *r[i + 1:]] for r in body]

    fixed = _rewrite(report, tmp_path / "fixed.csv", better)
    cases = [
        (new, "never", 0), (new, "newly-failing", 1), (new, "changed", 1),
        (same, "newly-failing", 0), (same, "changed", 0),
        (fixed, "newly-failing", 0), (fixed, "changed", 1),
    ]
    for target, fail_on, code in cases:
        result = run_probe("diff", report, target, "--fail-on", fail_on)
        assert result.code == code, (target.name, fail_on, result.err)


@functools.cache
def _rows(path: Path) -> list[dict]:
    return read_report(path)[1]


def _documented(expected: Path, ours: Path, change, corrected) -> bool:
    """Whether a change between msProbe's and probe's report is one docs/differences.md lists."""
    if change.kind == "result" and change.bench == "N/A" and (change.old_result, change.new_result) == ("pass", "N/A"):
        return True  # target-only rows: N/A in probe
    if corrected and corrected(change.name):
        return True  # msProbe pairs these rows wrongly
    if change.kind != "result":
        return False
    # a cross-row rule hit sits on another row of the same entry: the entry's worst verdict agrees
    entry = entry_of(change.name)
    worst = []
    has_cross_row = False
    for path in (expected, ours):
        rows = _rows(path)
        same = [r for r in rows if entry_of(r["NPU Name"]) == entry]
        worst.append(max(VERDICT_RANK[r["Result"]] for r in same))
        has_cross_row |= any(m in r["Err_message"] for r in same for m in CROSS_ROW_MESSAGES)
    return has_cross_row and worst[0] == worst[1]


def _msprobe_cases():
    for case in sorted(p for p in PYTORCH_CASES.iterdir() if p.is_dir()):
        for cmd in msprobe_commands(case):
            if "-da" not in cmd["argv"]:
                yield pytest.param(case, cmd, id=f"{case.name}-{cmd['label']}")


def _corrected(case: Path, label: str):
    from test_pytorch_parity import CORRECTED

    return CORRECTED.get((case.name, label))


@pytest.mark.parametrize("case,cmd", list(_msprobe_cases()))
def test_msprobe_report_vs_probe_report_shows_only_documented_differences(case, cmd, tmp_path, run_probe):
    argv = list(cmd["argv"])
    argv[argv.index("-o") + 1] = str(tmp_path / "out")
    assert run_probe("compare", *argv, "-c", cwd=case).code == 0
    expected_dir = case / "expected" / cmd["label"]
    diff = probe.diff_reports(expected_dir, tmp_path / "out")
    s = diff.summary
    assert s.paired > 0 and s.reports == len(list(expected_dir.iterdir()))
    assert (s.added, s.removed, s.reports_only_old, s.reports_only_new) == (0, 0, [], [])
    pairs = {key: (o, n) for key, o, n in __import__("probe.regression.diff", fromlist=["x"]).pair_reports(
        expected_dir, tmp_path / "out")[0]}
    corrected = _corrected(case, cmd["label"])
    for change in diff.changes:
        expected, ours = pairs[change.report]
        assert _documented(expected, ours, change, corrected), change


def test_gzipped_msprobe_csv_vs_probe(tmp_path):
    ours = _compare(tmp_path, DIAG / "target/step0", DIAG / "golden/step0")
    (expected,) = (DIAG / "expected/csv").glob("*.csv.gz")
    diff = probe.diff_reports(expected, ours)
    with gzip.open(expected, "rt") as handle:
        rows = sum(1 for _ in handle) - 1
    assert diff.summary.paired == rows > 0
    assert diff.changes == []


def test_multi_rank_directories_pair_by_rank(tmp_path):
    probe.compare(MULTI / "target/step0", MULTI / "golden/step0", tmp_path / "new")
    diff = probe.diff_reports(MULTI / "expected/dir_csv", tmp_path / "new")
    assert diff.summary.reports == 2
    assert {c.report for c in diff.changes} <= {"compare_result_rank0", "compare_result_rank1"}
    # a rank that is gone is reported, and counts as a change
    shutil.copytree(tmp_path / "new", tmp_path / "fewer")
    for path in (tmp_path / "fewer").glob("compare_result_rank1_*"):
        path.unlink()
    (tmp_path / "fewer" / "extra").mkdir()
    shutil.copy(next((tmp_path / "new").glob("compare_result_rank1_*")), tmp_path / "fewer/extra/compare_result_rank1_20260101000000.csv")
    fewer = probe.diff_reports(tmp_path / "new", tmp_path / "fewer")
    assert fewer.summary.reports_only_old == ["compare_result_rank1"]
    assert fewer.summary.reports_only_new == ["extra/compare_result_rank1"]
    assert fewer.exit_code("changed") == 1 and fewer.exit_code("newly-failing") == 0


def test_written_diff_neutralises_formulas_and_markup(report, tmp_path):
    def hostile(header, body):
        body[0][0] = '=HYPERLINK("http://x","<script>alert(1)</script>|")'
        return body

    new = _rewrite(report, tmp_path / "new.csv", hostile)
    diff = probe.diff_reports(report, new, tmp_path / "out")
    _, rows = read_report(next(p for p in diff.files if p.suffix == ".csv"))
    added = next(r for r in rows if r["Change"] == "added")
    assert added["NPU Name"].startswith("'=HYPERLINK")
    md = next(p for p in diff.files if p.suffix == ".md").read_text()
    assert "<script>" not in md and "&lt;script&gt;" in md and "\\|" in md


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.csv", "does not exist"),
    (lambda d: _write(d / "x.txt", "a,b\n"), "is not a report"),
    (lambda d: _write(d / "x.csv", "a,b\n1,2\n"), "has no 'NPU Name' column"),
    (lambda d: _write(d / "x.csv", ""), "is empty"),
    (lambda d: _write_bytes(d / "x.csv.gz", b"not gzip at all"), "is not a readable CSV"),
    (lambda d: _write_bytes(d / "x.xlsx", b"PK\x03\x04 broken"), "is not a readable xlsx"),
    (lambda d: _write(d / "x.json", "{\"rows\": 3}"), "no \"rows\" list"),
    (lambda d: _write(d / "x.json", '{"label": "a", "columns": ["NPU Name"], "rows": [\n{"NPU Name": "a"},\n{oops\n]}\n'),
     "line 3 is not valid JSON"),
    (lambda d: _write(d / "x.csv", "NPU Name,Result\n" + "a,pass,extra,cells\n"), "line 2 has 4 cells"),
])
def test_bad_reports_are_one_line_errors(report, tmp_path, run_probe, make, message):
    bad = make(tmp_path)
    result = run_probe("diff", report, bad, "-o", tmp_path / "out")
    assert result.code == 2, result.err
    assert message in result.err and str(bad) in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


@pytest.mark.parametrize("args, message", [
    (["--tolerance", "MaxRelativeErr"], "expected METRIC=VALUE"),
    (["--tolerance", "MaxRelativeErr=abc"], "is not a number"),
    (["--tolerance", "MaxRelativeErr=-1"], ">= 0"),
    (["--tolerance", "NoSuchMetric=1"], "a column neither report has"),
    (["--format", "pdf", "-o", "x"], "unknown diff format"),
])
def test_bad_options_are_one_line_errors(report, tmp_path, run_probe, args, message):
    result = run_probe("diff", report, report, *args)
    assert result.code == 2 and message in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_file_against_directory_is_refused(report, run_probe):
    result = run_probe("diff", report, report.parent)
    assert result.code == 2 and "not one of each" in result.err


def test_diff_help_has_examples(capsys):
    from probe.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["diff", "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "examples:" in out and "--fail-on newly-failing" in out


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_xlsx_decompression_bomb_is_refused_before_parsing(report, tmp_path, run_probe):
    import zipfile

    bomb = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/worksheets/sheet1.xml", b"\0" * (64 << 20))
    assert bomb.stat().st_size < 1 << 20
    result = run_probe("diff", report, bomb)
    assert result.code == 2 and "would inflate to" in result.err and str(bomb) in result.err
