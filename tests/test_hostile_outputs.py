"""Hostile text in reports, concurrent runs into one -o, killed runs, a full disk."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PYTORCH_CASES

STAT = PYTORCH_CASES / "stat_mix_tfm"
TARGET = STAT / "target/step0/rank0"
GOLDEN = STAT / "golden/step0/rank0"
PROBE = [sys.executable, "-m", "probe"]
HOSTILE_NAMES = [
    "Functional.x\r=cmd|' /C calc'!A0.0.forward",  # a CR before a DDE formula, no quote char
    "\t=1+1.x.0.forward",
    "|calc.x.0.forward",
    " =cmd.x.0.forward",
    "\r@SUM(A1).x.0.forward",
]


def _hostile_target(tmp_path: Path) -> Path:
    """The stat target with entries renamed to formula/CR names (the golden has them too)."""
    root = tmp_path / "case"
    for side, src in (("t", TARGET), ("g", GOLDEN)):
        shutil.copytree(src, root / side)
        doc = json.loads((root / side / "dump.json").read_text())
        items = list(doc["data"].items())
        for (name, entry), bad in zip(items, HOSTILE_NAMES):
            doc["data"].pop(name)
            doc["data"][bad] = entry
        (root / side / "dump.json").write_text(json.dumps(doc, indent=1))
        (root / side / "stack.json").unlink(missing_ok=True)
    return root


def _evaluated(cell: str) -> bool:
    """Whether a spreadsheet would evaluate this cell (OWASP's list, after leading spaces)."""
    head = cell.lstrip(" ")
    if not head or head[0] not in "=+-@%|\t\r\n＝＋－＠％｜":
        return False
    try:
        float(cell)
        return False
    except ValueError:
        return True


def test_csv_cells_never_split_or_evaluate(tmp_path, run_probe):
    root = _hostile_target(tmp_path)
    out = tmp_path / "o"
    result = run_probe("compare", "-tp", root / "t/dump.json", "-gp", root / "g/dump.json", "-o", out)
    assert result.code == 0, result.err
    report = next(out.glob("*.csv"))
    raw = report.read_bytes()
    rows = list(csv.reader(io.StringIO(raw.decode())))
    width = len(rows[0])
    # a reader that treats every CR as a line break (as some do) must see the same rows
    split = list(csv.reader(io.StringIO(raw.decode().replace("\r", "\n"))))
    assert all(len(r) == width for r in split), [r for r in split if len(r) != width][:2]
    assert len(split) == len(rows)
    for row in rows:
        for cell in row:
            assert not _evaluated(cell), cell
    names = {r[0] for r in rows[1:]}
    for bad in HOSTILE_NAMES:
        start = bad.split(".")[0].replace("\r", "\n")
        assert any(start in n for n in names), (bad, sorted(names)[:3])


def test_xlsx_cells_never_evaluate(tmp_path, run_probe):
    openpyxl = pytest.importorskip("openpyxl", reason="reading xlsx needs openpyxl")
    root = _hostile_target(tmp_path)
    out = tmp_path / "o"
    result = run_probe("compare", "-tp", root / "t/dump.json", "-gp", root / "g/dump.json", "-o", out, "--xlsx")
    assert result.code == 0, result.err
    book = openpyxl.load_workbook(next(out.glob("*.xlsx")))
    cells = [c.value for row in book.active.iter_rows() for c in row if isinstance(c.value, str)]
    assert any("calc" in c for c in cells)
    assert not [c for c in cells if _evaluated(c)]


def test_one_cell_rule():
    from probe.cells import safe_cell

    for value in ["=1", "+1+1", "-cmd", "@x", "%a", "|calc", "\tx", "\rx", "\nx", " =1", "＝1"]:
        assert safe_cell(value).startswith("'"), value
    for value in ["-1.5", " -inf", " inf", "1e-3", "Functional.relu", "", "nan"]:
        assert safe_cell(value) == value
    assert "\r" not in safe_cell("a\rb\r\nc")


def _run_many(commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    results = []
    for proc, command in zip(procs, commands):
        out, err = proc.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(command, proc.returncode, out, err))
    return results


def test_parallel_compares_into_one_output_keep_every_report(tmp_path):
    out = tmp_path / "o"
    runs = 4
    command = PROBE + ["compare", "-tp", str(TARGET / "dump.json"), "-gp", str(GOLDEN / "dump.json"),
                       "-o", str(out), "--format", "csv,xlsx,json", "-c"]
    results = _run_many([command] * runs)
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    for fmt in ("csv", "xlsx", "json"):
        reports = sorted(out.glob(f"compare_result_*.{fmt}"))
        assert len(reports) == runs, reports
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_same_second_graph_builds_both_survive(tmp_path):
    out = tmp_path / "o"
    command = PROBE + ["graph", "-tp", str(TARGET), "-o", str(out)]
    results = _run_many([command] * 3)
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    assert len(list(out.glob("build_*.vis.db"))) == 3


def test_parallel_views_of_one_db_keep_every_page(tmp_path):
    from probe.graph.service import GraphOptions, run_graph

    db = run_graph(GraphOptions(target=TARGET, output=tmp_path)).db
    results = _run_many([PROBE + ["view", str(db)]] * 3)
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    assert len(list(tmp_path.glob("build_*.html"))) == 3


def test_sequential_graph_builds_in_one_second(tmp_path):
    from probe.graph.service import GraphOptions, run_graph

    out = tmp_path / "o"
    first = run_graph(GraphOptions(target=TARGET, output=out, timestamp="20260101000000"))
    second = run_graph(GraphOptions(target=TARGET, output=out, timestamp="20260101000000"))
    assert first.db != second.db and first.db.exists() and second.db.exists()
    assert second.db.name == "build_20260101000000_1.vis.db"


def test_claim_never_replaces(tmp_path):
    from probe.io import atomic_write

    path = tmp_path / "r.csv"
    path.write_text("first")
    out = atomic_write(path)
    with out as handle:
        handle.write("second")
    assert path.read_text() == "first"
    assert out.path == tmp_path / "r_1.csv" and out.path.read_text() == "second"


def test_stale_temporaries_after_sigkill_are_cleaned(tmp_path):
    from probe import io as probe_io

    out = tmp_path / "o"
    out.mkdir()
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from probe.io import atomic_write\n"
        f"with atomic_write(Path({str(out / 'r.csv')!r})) as h:\n"
        "    h.write('x'); h.flush(); print('ready', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stale = [p for p in out.iterdir()]
    assert len(stale) == 1 and stale[0].name.startswith(probe_io.TEMP_PREFIX), stale
    old = time.time() - probe_io.STALE_SECONDS - 10
    os.utime(stale[0], (old, old))
    result = subprocess.run(PROBE + ["compare", "-tp", str(TARGET / "dump.json"), "-gp", str(GOLDEN / "dump.json"),
                                     "-o", str(out), "-c"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert not stale[0].exists()
    assert ".csv" in [p.suffix for p in out.iterdir()]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_live_temporaries_are_left_alone(tmp_path):
    from probe import io as probe_io

    mine = tmp_path / f"{probe_io.TEMP_PREFIX}1.r.csv.abc.tmp"  # pid 1 is always alive
    mine.write_text("x")
    old = time.time() - 10 * probe_io.STALE_SECONDS
    os.utime(mine, (old, old))
    assert probe_io.clean_stale_temporaries(tmp_path, force=True) == []
    assert mine.exists()


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 256 KiB tmpfs (root only; skipped where mount is not permitted)."""
    mount_point = tmp_path / "full"
    mount_point.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount is not permitted here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def test_full_disk_during_compare(tiny_tmpfs, run_probe):
    big = PYTORCH_CASES / "stat_mix_tfm"
    (tiny_tmpfs / "filler").write_bytes(b"\0" * (200 << 10))
    result = run_probe("compare", "-tp", big / "target/step0/rank0/dump.json", "-gp",
                       big / "golden/step0/rank0/dump.json", "-o", tiny_tmpfs, "--format", "csv,json,xlsx", "-c")
    assert result.code == 2, result.err
    assert "Traceback" not in result.err
    line = [x for x in result.err.splitlines() if x.startswith("probe: error")][0]
    assert "no space left" in line and str(tiny_tmpfs) in line
    assert sorted(p.name for p in tiny_tmpfs.iterdir()) == ["filler"]


def test_full_disk_during_graph_build(tiny_tmpfs, run_probe):
    (tiny_tmpfs / "filler").write_bytes(b"\0" * (200 << 10))
    result = run_probe("graph", "-tp", TARGET, "-gp", GOLDEN, "-o", tiny_tmpfs)
    assert result.code == 2, result.err
    assert "Traceback" not in result.err
    line = [x for x in result.err.splitlines() if x.startswith("probe: error")][0]
    assert "no space left" in line and str(tiny_tmpfs) in line
    assert sorted(p.name for p in tiny_tmpfs.iterdir()) == ["filler"]
