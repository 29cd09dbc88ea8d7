"""Hostile and broken inputs: each is one line naming the file, exit 2, no traceback, no hang."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, PYTORCH_CASES

STAT = PYTORCH_CASES / "stat_mix_tfm"
TENSOR = PYTORCH_CASES / "tensor_mix_cnn"
GOLDEN = STAT / "golden/step0/rank0/dump.json"
KERNEL = DATA / "mindspore/ms_graph_kernel_native"
PROBE = [sys.executable, "-m", "probe"]


def one_line(result, *fragments: str) -> str:
    """The single error line of a failed run (exit 2, no traceback), holding every fragment."""
    assert result.code == 2, (result.code, result.out[-2000:], result.err[-2000:])
    assert "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if line.startswith("probe: error")]
    assert len(lines) == 1, result.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _dump(path: Path, text: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "dump.json").write_text(text)
    return path / "dump.json"


def test_deep_nesting(tmp_path, run_probe):
    dump = _dump(tmp_path / "t", '{"task": "statistics", "data": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    one_line(run_probe("compare", "-tp", dump, "-gp", GOLDEN, "-o", tmp_path / "o"), str(dump), "nested too deeply")


def test_number_with_too_many_digits(tmp_path, run_probe):
    dump = _dump(tmp_path / "t", '{"task": "statistics", "data": {"a": {"x": ' + "9" * 5000 + "}}}")
    one_line(run_probe("compare", "-tp", dump, "-gp", GOLDEN, "-o", tmp_path / "o"), str(dump), "4300 digits")


def test_non_string_data_name(tmp_path, run_probe):
    target = tmp_path / "t"
    shutil.copytree(TENSOR / "target/step0/rank0", target)
    doc = json.loads((target / "dump.json").read_text())
    entry = next(iter(doc["data"].values()))
    entry["input_args"][0]["data_name"] = 123
    (target / "dump.json").write_text(json.dumps(doc, indent=1))
    result = run_probe("compare", "-tp", target / "dump.json", "-gp", TENSOR / "golden/step0/rank0/dump.json",
                       "-o", tmp_path / "o")
    one_line(result, str(target / "dump.json"), "data_name", "not text")


def test_non_string_npu_path_in_compare_json(tmp_path, run_probe):
    config = tmp_path / "compare.json"
    config.write_text(json.dumps({"npu_path": 5, "bench_path": str(GOLDEN)}))
    one_line(run_probe("compare", "-i", config, "-o", tmp_path / "o"), str(config), "npu_path")


def _special(path: Path, special: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if special == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/null")
    return path


def _run_cli(args: list, timeout: int = 60) -> subprocess.CompletedProcess:
    """probe in a subprocess with a timeout (opening a FIFO for reading blocks forever)."""
    return subprocess.run(PROBE + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("special", ["fifo", "devnull"])
def test_fifo_or_device_in_a_dump_directory(tmp_path, special):
    dump = _special(tmp_path / "t" / "dump.json", special)
    run = _run_cli(["compare", "-tp", dump.parent, "-gp", GOLDEN.parent, "-o", tmp_path / "o"])
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert str(dump.parent) in run.stderr


@pytest.mark.parametrize("special", ["fifo", "devnull"])
@pytest.mark.parametrize("option", ["-dm", "-i"])
def test_fifo_or_device_as_input_file(tmp_path, special, option):
    path = _special(tmp_path / ("map.yaml" if option == "-dm" else "compare.json"), special)
    args = ["compare", "-o", tmp_path / "o", option, path]
    if option == "-dm":
        args += ["-tp", GOLDEN, "-gp", GOLDEN]
    run = _run_cli(args)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert f"{path}: is not a regular file" in run.stderr, run.stderr


def _as_nobody() -> list[str]:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run as an unprivileged user (root reads any directory)")
    return ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]


@pytest.mark.parametrize("command", ["compare", "graph"])
def test_unreadable_step_directory(command):
    prefix = _as_nobody()
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="probe-hostile-"))  # pytest's base dir is root-only
    tmp_path.chmod(0o777)
    try:
        _unreadable_step(tmp_path, prefix, command)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _unreadable_step(tmp_path: Path, prefix: list[str], command: str) -> None:
    for side, src in (("t", STAT / "target/step0/rank0"), ("g", STAT / "golden/step0/rank0")):
        shutil.copytree(src, tmp_path / side / "step0" / "rank0")
        (tmp_path / side / "step1").mkdir()
    (tmp_path / "t" / "step1").chmod(0)
    for path in tmp_path.rglob("*"):
        if path.name != "step1":
            path.chmod(0o777 if path.is_dir() else 0o666)
    run = subprocess.run(prefix + PROBE + [command, "-tp", str(tmp_path / "t"), "-gp", str(tmp_path / "g"),
                                           "-o", str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert "step1" in run.stderr and "Permission denied" in run.stderr


def test_bad_npy_in_mindspore_kernel_dump(tmp_path, run_probe):
    target = tmp_path / "t"
    shutil.copytree(KERNEL / "target", target)
    bad = sorted(target.rglob("*.npy"))[0]
    bad.write_bytes(b"not an npy file")
    out = tmp_path / "o"
    result = run_probe("compare", "-tp", target, "-gp", KERNEL / "golden", "-o", out)
    one_line(result, bad.name, "cannot be loaded")
    assert list(out.rglob("advisor_*.txt")), "the advisor ran to its end"


@pytest.mark.parametrize("damage", ["utf8", "long_field"])
def test_statistic_csv_damaged(tmp_path, run_probe, damage):
    from probe.errors import InputError
    from probe.jsonio import csv_rows

    path = tmp_path / "statistic.csv"
    if damage == "utf8":
        path.write_bytes(b"Op Type,Op Name\nAdd,\xff\xfe\n")
        match = "not UTF-8"
    else:
        path.write_text("Op Type,Op Name\nAdd," + "x" * (200 << 10) + "\n")
        match = "field larger"
    with pytest.raises(InputError, match=match) as info:
        list(csv_rows(path))
    assert str(path) in str(info.value)


_STAT_HEADER = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,"
                "Min Value,Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,Negative Inf Count,"
                "Positive Inf Count,Zero Count,L2Norm Value\n")
_STAT_ROW = 'Add,Default/Add-op{n},1,0,179524780424157{n},input,0,16,float32,"(2,2)",{max},0.0,0.5,4,0,0,0,0,0,0,1.2\n'


@pytest.mark.parametrize("damage,fragment", [
    (_STAT_ROW.format(n=1, max="\udcff").encode("utf-8", "surrogateescape"), "not UTF-8"),
    (_STAT_ROW.format(n=1, max="x" * (200 << 10)).encode(), "field larger"),
])
def test_statistic_csv_damaged_end_to_end(tmp_path, run_probe, damage, fragment):
    pytest.importorskip("probe_mindspore", reason="the MindSpore plugin is not installed")
    sides = {}
    for side in ("t", "g"):
        directory = tmp_path / side / "rank_0" / "Net" / "0" / "0"
        directory.mkdir(parents=True)
        (directory / "statistic.csv").write_bytes((_STAT_HEADER + _STAT_ROW.format(n=0, max="1.0")).encode())
        sides[side] = directory / "statistic.csv"
    ok = run_probe("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "ok")
    assert ok.code == 0, ok.err  # the undamaged pair compares
    with open(sides["t"], "ab") as handle:
        handle.write(damage)
    result = run_probe("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "o")
    one_line(result, str(sides["t"]), fragment)


def _graph_db(tmp_path: Path, run_probe) -> Path:
    out = tmp_path / "g"
    result = run_probe("graph", "-tp", STAT / "target/step0/rank0", "-gp", STAT / "golden/step0/rank0", "-o", out)
    assert result.code == 0, result.err
    return next(out.glob("*.vis.db"))


@pytest.mark.parametrize("damage,fragment", [
    ("UPDATE tb_nodes SET input_data = '{bad'", "JSONDecodeError"),
    ("UPDATE tb_config SET step_list = '[bad'", "JSONDecodeError"),
    ("ALTER TABLE tb_nodes DROP COLUMN stack_id", "stack_id"),
    ("DROP TABLE tb_config", "tb_config"),
])
def test_view_broken_db(tmp_path, run_probe, damage, fragment):
    import sqlite3

    db = _graph_db(tmp_path, run_probe)
    conn = sqlite3.connect(db)
    conn.execute(damage)
    conn.commit()
    conn.close()
    one_line(run_probe("view", db, "-o", tmp_path / "v.html"), str(db), fragment)
    assert not (tmp_path / "v.html").exists()


def test_view_output_is_a_directory(tmp_path, run_probe):
    db = _graph_db(tmp_path, run_probe)
    target = tmp_path / "adir"
    target.mkdir()
    one_line(run_probe("view", db, "-o", target), str(target), "is a directory")
    assert not list(tmp_path.glob("adir_*"))


def test_torchair_problem_printed_once(tmp_path, run_probe):
    pytest.importorskip("probe_torchair", reason="the TorchAir plugin is not installed")
    from test_torchair_compare import make_fx_new, make_ge

    ge = make_ge(tmp_path / "ge", fused=True)
    fx = make_fx_new(tmp_path / "fx") / "worldsize2_global_rank0"
    victim = sorted(p for p in ge.rglob("*") if p.is_file() and p.suffix != ".txt")[0]
    victim.write_bytes(b"\x00garbage")
    result = run_probe("--framework", "torchair", "compare", "-tp", ge, "-gp", fx, "-o", tmp_path / "o")
    assert "Traceback" not in result.err
    assert result.err.count(victim.name) == 1, result.err


def test_huge_dump_json_refused_with_bounded_memory(tmp_path):
    dump = tmp_path / "t" / "dump.json"
    dump.parent.mkdir()
    with open(dump, "wb") as handle:  # a sparse 2 GiB file: costs no disk
        handle.write(b'{"task": "statistics", "data": {"a": [')
        handle.truncate(2 << 30)
    code = (
        "import resource, sys\n"
        "from probe.cli import main\n"
        f"rc = main(['compare', '-tp', {str(dump)!r}, '-gp', {str(GOLDEN)!r}, '-o', {str(tmp_path / 'o')!r}])\n"
        "print(rc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    rc, peak_kib = map(int, run.stdout.split()[-2:])
    assert rc == 2, run.stderr
    assert "too large" in run.stderr and str(dump) in run.stderr
    assert peak_kib < 600 * 1024, f"peak RSS {peak_kib} KiB"


def test_yaml_alias_bomb_refused_fast(tmp_path):
    bomb = tmp_path / "map.yaml"
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghij"):
        prev = "abcdefghij"[i]
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    bomb.write_text("\n".join(lines) + "\n")
    assert bomb.stat().st_size < 600
    run = _run_cli(["compare", "-tp", GOLDEN, "-gp", GOLDEN, "-dm", bomb, "-o", tmp_path / "o"], timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert f"{bomb}: uses YAML anchors/aliases" in run.stderr


def test_yaml_single_alias_refused(tmp_path):
    from probe.errors import InputError
    from probe.jsonio import read_yaml

    path = tmp_path / "m.yaml"
    path.write_text("x: &v 1\ny: *v\n")
    with pytest.raises(InputError, match="anchors/aliases"):
        read_yaml(path)


def _pt_bomb(path: Path, elements: int) -> None:
    """A .pt whose storage member is deflated zeros: tiny on disk, ``elements`` bytes inflated."""
    import torch

    plain = path.with_suffix(".plain")
    torch.save(torch.zeros(elements, dtype=torch.uint8), plain)
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(path, "w") as out:
        for info in src.infolist():
            target = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            target.compress_type = zipfile.ZIP_DEFLATED if "/data/" in info.filename else zipfile.ZIP_STORED
            with src.open(info) as data, out.open(target, "w", force_zip64=True) as sink:
                shutil.copyfileobj(data, sink, 1 << 20)
    plain.unlink()


def test_pt_decompression_bomb_refused(tmp_path, run_probe):
    pytest.importorskip("torch", reason="writing the .pt needs torch")
    target = tmp_path / "t"
    shutil.copytree(TENSOR / "target/step0/rank0", target)
    doc = json.loads((target / "dump.json").read_text())
    entry_name, entry = next(iter(doc["data"].items()))
    leaf = entry["input_args"][0]
    pt = target / "dump_tensor_data" / leaf["data_name"]
    _pt_bomb(pt, 8 << 20)
    assert pt.stat().st_size < (1 << 20)
    result = run_probe("compare", "-tp", target / "dump.json", "-gp", TENSOR / "golden/step0/rank0/dump.json",
                       "-o", tmp_path / "o", "--jobs", "1", "-c")
    line = one_line(result, pt.name, "inflate")
    assert "bomb" in line


def test_pt_bomb_absolute_cap(tmp_path, monkeypatch):
    pytest.importorskip("torch", reason="writing the .pt needs torch")
    from probe.errors import InputError
    from probe_pytorch import tensors

    pt = tmp_path / "x.pt"
    _pt_bomb(pt, 4 << 20)
    monkeypatch.setattr(tensors, "MAX_INFLATED_BYTES", 1 << 20)
    with pytest.raises(InputError, match="inflate"):
        tensors.load_pt(pt)  # no declared shape: the absolute cap applies
    monkeypatch.setattr(tensors, "MAX_INFLATED_BYTES", 64 << 20)
    assert tensors.load_pt(pt, max_bytes=8 << 20).shape == (4 << 20,)  # within both bounds: loads


@pytest.mark.parametrize("window", ["64", "0"])  # streamed, whole
def test_entry_repeated_in_a_later_piece(tmp_path, run_probe, window):
    """A dump.json naming an entry twice, far enough apart to be in different pieces of the read,
    is one line naming the entry (never compared twice), and no report is written."""
    target = tmp_path / "t"
    shutil.copytree(STAT / "target/step0/rank0", target)
    doc = json.loads((target / "dump.json").read_text())
    entries = list(doc["data"].items())
    for copy in range(12):  # about 0.6 MB of entries, more than two pieces
        for name, value in entries:
            doc["data"][f"{name}_{copy}"] = value
    first, value = entries[0]
    text = json.dumps(doc, indent=1)
    closing = text.rindex("\n }")
    repeat = json.dumps({first: value}, indent=1)[1:-2].replace("\n", "\n ")  # the entry at the member's indent
    (target / "dump.json").write_text(text[:closing] + "," + repeat + text[closing:])
    assert json.loads((target / "dump.json").read_text())["data"].keys() == doc["data"].keys()
    out = tmp_path / "o"
    result = run_probe("compare", "-tp", target, "-gp", STAT / "golden/step0/rank0", "-o", out, "--window", window)
    one_line(result, str(target / "dump.json"), f"has the entry '{first}' twice in 'data'")
    assert not out.exists() or not any(out.iterdir())
