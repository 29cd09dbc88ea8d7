"""Bad input: one line naming the file, exit code 2, no traceback, nothing half-written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import PYTORCH_CASES

STAT = PYTORCH_CASES / "stat_mix_tfm"
TENSOR = PYTORCH_CASES / "tensor_mix_cnn"


def _copy_side(case: Path, side: str, dest: Path) -> Path:
    src = case / side / "step0" / "rank0"
    shutil.copytree(src, dest)
    return dest


def _assert_one_line_error(result, *fragments: str) -> None:
    assert result.code == 2, (result.code, result.out, result.err)
    lines = [line for line in result.err.splitlines() if line.startswith("probe: error")]
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def _no_reports(out: Path) -> None:
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]


def test_missing_dump_json(tmp_path, run_probe):
    out = tmp_path / "out"
    missing = tmp_path / "nowhere" / "dump.json"
    result = run_probe("compare", "-tp", missing, "-gp", STAT / "golden/step0/rank0/dump.json", "-o", out)
    _assert_one_line_error(result, str(missing), "does not exist")
    _no_reports(out)


def test_truncated_dump_json(tmp_path, run_probe):
    target = _copy_side(STAT, "target", tmp_path / "t")
    raw = (target / "dump.json").read_bytes()
    (target / "dump.json").write_bytes(raw[: len(raw) // 2])
    out = tmp_path / "out"
    result = run_probe("compare", "-tp", target / "dump.json", "-gp", STAT / "golden/step0/rank0/dump.json", "-o", out)
    _assert_one_line_error(result, str(target / "dump.json"), "not valid JSON")
    _no_reports(out)


@pytest.mark.parametrize("doc,problem", [
    ({"hello": 1}, "no 'data' key"),
    ([1, 2, 3], "top level is not an object"),
    ({"task": "statistics", "data": [1]}, "'data' is not an object"),
    ({"data": {}}, "has no 'task'"),
    ({"task": "overflow_check", "data": {}}, "task 'overflow_check'"),
])
def test_json_that_is_not_a_dump(tmp_path, run_probe, doc, problem):
    bad = tmp_path / "t" / "dump.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps(doc))
    out = tmp_path / "out"
    result = run_probe("compare", "-tp", bad, "-gp", STAT / "golden/step0/rank0/dump.json", "-o", out)
    _assert_one_line_error(result, str(bad), problem)
    _no_reports(out)


def test_empty_dump_is_an_error_not_a_silent_success(tmp_path, run_probe):
    target = tmp_path / "t" / "dump.json"
    target.parent.mkdir()
    target.write_text(json.dumps({"task": "statistics", "level": "mix", "framework": "pytorch", "data": {}}))
    out = tmp_path / "out"
    result = run_probe("compare", "-tp", target, "-gp", STAT / "golden/step0/rank0/dump.json", "-o", out)
    _assert_one_line_error(result, "nothing was compared")
    _no_reports(out)


def _tensor_pair(tmp_path: Path) -> tuple[Path, Path]:
    return _copy_side(TENSOR, "target", tmp_path / "t"), _copy_side(TENSOR, "golden", tmp_path / "g")


def _run_tensor(run_probe, target: Path, golden: Path, out: Path):
    return run_probe("compare", "-tp", target / "dump.json", "-gp", golden / "dump.json", "-o", out, "-c")


def test_missing_tensor_file(tmp_path, run_probe):
    target, golden = _tensor_pair(tmp_path)
    victim = sorted((target / "dump_tensor_data").glob("*.pt"))[0]
    victim.unlink()
    out = tmp_path / "out"
    result = _run_tensor(run_probe, target, golden, out)
    _assert_one_line_error(result, victim.name, "does not exist")
    # the report is complete, written atomically, and names the unreadable file on its row
    report = next(out.glob("compare_result_*.csv")).read_text()
    assert victim.name in report
    assert not list(out.glob(".*tmp"))


def test_data_name_outside_its_directory_is_never_read(tmp_path, run_probe):
    target, golden = _tensor_pair(tmp_path)
    secret = tmp_path / "secret.pt"
    shutil.copy(sorted((target / "dump_tensor_data").glob("*.pt"))[0], secret)
    doc = json.loads((target / "dump.json").read_text())
    first_entry = next(iter(doc["data"].values()))
    first_entry["input_args"][0]["data_name"] = "../../secret.pt"
    (target / "dump.json").write_text(json.dumps(doc))
    out = tmp_path / "out"
    result = _run_tensor(run_probe, target, golden, out)
    _assert_one_line_error(result, "points outside its dump directory")


def test_tensor_file_that_is_a_link_loop(tmp_path, run_probe):
    target, golden = _tensor_pair(tmp_path)
    victim = sorted((target / "dump_tensor_data").glob("*.pt"))[0]
    victim.unlink()
    victim.symlink_to(victim)
    result = _run_tensor(run_probe, target, golden, tmp_path / "out")
    _assert_one_line_error(result, "cannot be resolved")


class _Evil:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_pt_file_with_a_pickled_object_is_refused(tmp_path, run_probe, capsys):
    target, golden = _tensor_pair(tmp_path)
    victim = sorted((target / "dump_tensor_data").glob("*.pt"))[0]
    torch = pytest.importorskip("torch", reason="torch is needed to write a .pt file (pip install torch)")

    torch.save({"payload": _Evil()}, victim)
    out = tmp_path / "out"
    result = _run_tensor(run_probe, target, golden, out)
    _assert_one_line_error(result, victim.name)
    assert "this must never run" not in result.out + result.err


def test_rank_folders_that_do_not_pair(tmp_path, run_probe):
    target = tmp_path / "t" / "step0"
    golden = tmp_path / "g" / "step0"
    shutil.copytree(STAT / "target/step0/rank0", target / "rank0")
    shutil.copytree(STAT / "golden/step0/rank0", golden / "rank3")
    out = tmp_path / "out"
    result = run_probe("compare", "-tp", target, "-gp", golden, "-o", out)
    _assert_one_line_error(result, "rank folders do not pair", "rank0", "rank3")
    _no_reports(out)


def test_mixed_file_and_directory(tmp_path, run_probe):
    result = run_probe("compare", "-tp", STAT / "target/step0/rank0/dump.json", "-gp", STAT / "golden/step0",
                       "-o", tmp_path / "out")
    _assert_one_line_error(result, "both be files or both be directories")


def test_output_path_that_is_a_file(tmp_path, run_probe):
    blocker = tmp_path / "report"
    blocker.write_text("not a directory")
    result = run_probe("compare", "-tp", STAT / "target/step0/rank0/dump.json",
                       "-gp", STAT / "golden/step0/rank0/dump.json", "-o", blocker)
    _assert_one_line_error(result, str(blocker), "not a directory")
    assert blocker.read_text() == "not a directory"


def test_output_dir_that_cannot_be_created(tmp_path, run_probe):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = blocker / "sub"
    result = run_probe("compare", "-tp", STAT / "target/step0/rank0/dump.json",
                       "-gp", STAT / "golden/step0/rank0/dump.json", "-o", out)
    _assert_one_line_error(result, str(out))


def test_tasks_that_differ(tmp_path, run_probe):
    result = run_probe("compare", "-tp", STAT / "target/step0/rank0/dump.json",
                       "-gp", TENSOR / "golden/step0/rank0/dump.json", "-o", tmp_path / "out")
    _assert_one_line_error(result, "dump tasks differ")


def test_bad_data_mapping_yaml(tmp_path, run_probe):
    mapping = tmp_path / "map.yaml"
    mapping.write_text("a: [unclosed\n")
    result = run_probe("compare", "-tp", STAT / "target/step0/rank0/dump.json",
                       "-gp", STAT / "golden/step0/rank0/dump.json", "-o", tmp_path / "out", "-dm", mapping)
    _assert_one_line_error(result, str(mapping), "not valid YAML")
