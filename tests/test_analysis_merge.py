"""``merge_result``: same cells as msProbe on its inputs, and on probe's csv / xlsx / json."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from openpyxl import load_workbook

from probe.analysis.merge import merge_tables, read_rank
from probe.cli import main

ROOT = Path(__file__).parent / "data" / "pytorch" / "multirank_cnn"
CONFIG = ROOT / "merge_config.yaml"


def _sheets(path: Path) -> dict[str, list[tuple]]:
    book = load_workbook(path, read_only=True)
    sheets = {ws.title: [tuple(r) for r in ws.iter_rows(values_only=True)] for ws in book.worksheets}
    book.close()
    return sheets


def _expected() -> dict[str, list[tuple]]:
    return _sheets(next((ROOT / "expected/merge").glob("multi_ranks_compare_merge_*.xlsx")))


def _merged(out: Path) -> Path:
    files = list(out.glob("multi_ranks_compare_merge_*.xlsx"))
    assert len(files) == 1, files
    return files[0]


def _merge(inp: Path, out: Path, config: Path = CONFIG, command: str = "merge_result") -> int:
    return main([command, "-i", str(inp), "-o", str(out), "-config", str(config)])


def test_same_cells_as_msprobe_on_its_xlsx(tmp_path: Path) -> None:
    assert _merge(ROOT / "expected/dir_xlsx", tmp_path) == 0
    assert _sheets(_merged(tmp_path)) == _expected()


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_probe_results_in_every_format(tmp_path: Path, fmt: str) -> None:
    results = tmp_path / "results"
    assert main(["compare", "-tp", str(ROOT / "target/step0"), "-gp", str(ROOT / "golden/step0"),
                 "-o", str(results), "--format", fmt, "-c"]) == 0
    (results / "notes.txt").write_text("unrelated")
    (results / "compare_result_proc12_20260101000000.csv").write_text("unrelated")
    assert _merge(results, tmp_path / "out", command="merge-result") == 0
    got, want = _sheets(_merged(tmp_path / "out")), _expected()
    assert list(got) == list(want)
    for sheet in want:
        assert len(got[sheet]) == len(want[sheet])
        for g, w in zip(got[sheet], want[sheet]):
            assert g[0] == w[0]
            for a, b in zip(g[1:], w[1:]):
                if isinstance(b, (int, float)) and not isinstance(b, bool):
                    assert a == pytest.approx(b, rel=1e-12, abs=0), (sheet, g[0])
                else:
                    assert a == b, (sheet, g[0])


def test_previous_merge_output_in_the_folder_is_ignored(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    shutil.copytree(ROOT / "expected/dir_xlsx", inp)
    shutil.copy(next((ROOT / "expected/merge").glob("*.xlsx")), inp)
    assert _merge(inp, tmp_path / "out") == 0


def test_na_values_show_npu_and_bench_max(tmp_path: Path) -> None:
    header = ["NPU Name", "Bench Name", "Max diff", "NormRelativeErr", "NPU max", "Bench max", "Cosine"][:6]
    rows = [
        {"NPU Name": "Distributed.all_reduce.0.forward.input.group", "Max diff": "N/A", "NPU max": "tp-0-1-2-3",
         "Bench max": "tp-0-1-2-3"},
        {"NPU Name": "Distributed.all_reduce.0.forward.input.1", "Max diff": "N/A", "NPU max": "[0, 1]",
         "Bench max": "[0, 1]"},
        {"NPU Name": "Distributed.all_reduce.0.forward.output.0", "Max diff": "0.5", "NPU max": 1, "Bench max": "N/A"},
    ]
    tables = []
    for rank in (0, 1):
        path = tmp_path / f"compare_result_rank{rank}_20260101000000.csv"
        path.write_text(",".join(header) + "\n" + "\n".join(
            ",".join(f'"{r.get(c, "")}"' for c in header) for r in rows) + "\n")
        tables.append(read_rank(rank, [path], ["Distributed.all_reduce"]))
    sheet = merge_tables(tables, ["Max diff"])["Max diff"]
    cells = {row[0]: row[1] for row in sheet[1:]}
    assert cells["Distributed.all_reduce.0.forward.input.group"] == "NPU:tp-0-1-2-3  Bench:tp-0-1-2-3"
    assert cells["Distributed.all_reduce.0.forward.input.1"] == "NPU:[0, 1]  Bench:[0, 1]"
    assert cells["Distributed.all_reduce.0.forward.output.0"] == "0.5"  # column is not all-numeric: text stays
    assert sheet[0] == ["NPU Name", "rank0", "rank1"]
    assert [row[0] for row in sheet[1:]] == sorted(cells)


def _write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, words", [
    ("api: [Distributed.all_reduce]\ncompare_index: [Max diff, Cosine]\n", ["'Cosine'", "valid:", "NormRelativeErr"]),
    ("api: []\n", ["'api'"]),
    ("api: [a\n", ["not valid YAML"]),
    ("apis: [x]\n", ["unknown key", "apis"]),
])
def test_bad_config_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture, text: str, words: list[str]) -> None:
    config = _write_config(tmp_path, text)
    assert _merge(ROOT / "expected/dir_xlsx", tmp_path / "out", config) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("probe: error: ")
    assert str(config) in err
    for word in words:
        assert word in err


def test_mixed_statistics_and_tensor_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    shutil.copy(next((ROOT / "expected/dir_csv").glob("compare_result_rank0_*.csv")), inp)
    tensor = next((ROOT.parent / "tensor_mix_tfm/expected/csv").glob("*.csv"))
    shutil.copy(tensor, inp / "compare_result_rank1_20261121075321.csv")
    assert _merge(inp, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "different modes" in err and "statistics" in err and "tensor" in err


def test_md5_refused_and_single_rank_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    md5 = next((ROOT.parent / "md5_mix_tfm/expected/csv").glob("*.csv"))
    shutil.copy(md5, inp / "compare_result_rank0_20261121075320.csv")
    assert _merge(inp, tmp_path / "out") == 2
    assert "two ranks" in capsys.readouterr().err
    shutil.copy(md5, inp / "compare_result_rank1_20261121075320.csv")
    assert _merge(inp, tmp_path / "out") == 2
    assert "md5" in capsys.readouterr().err


def test_help_has_an_example(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["merge_result", "--help"])
    out = capsys.readouterr().out
    assert "probe merge_result -i" in out and "compare_index" in out
