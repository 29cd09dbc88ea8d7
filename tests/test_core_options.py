"""``--rank`` / ``--step`` are core compare options: they select plans of any layout."""

from __future__ import annotations

from pathlib import Path

PT = Path(__file__).parent / "data" / "pytorch"


def test_rank_selects_ranks_of_an_msprobe_step_dir(tmp_path: Path, run_probe) -> None:
    case = PT / "multirank_cnn"
    result = run_probe("compare", "-tp", case / "target" / "step0", "-gp", case / "golden" / "step0",
                       "-o", tmp_path, "-c", "--rank", "1")
    assert result.code == 0, result.err
    assert [p.name.rsplit("_", 1)[0] for p in tmp_path.glob("*.csv")] == ["compare_result_rank1"]


def test_step_selects_steps_of_a_dump_root(tmp_path: Path, run_probe) -> None:
    case = PT / "multistep_cnn"
    result = run_probe("compare", "-tp", case / "target", "-gp", case / "golden", "-o", tmp_path, "-c", "--step", "1")
    assert result.code == 0, result.err
    assert sorted(p.parent.name for p in tmp_path.rglob("*.csv")) == ["step1"]


def test_bad_rank_is_a_one_line_error(tmp_path: Path, run_probe) -> None:
    case = PT / "multirank_cnn"
    result = run_probe("compare", "-tp", case / "target" / "step0", "-gp", case / "golden" / "step0",
                       "-o", tmp_path, "--rank", "x")
    assert result.code == 2
    assert "--rank takes comma-separated numbers" in result.err
