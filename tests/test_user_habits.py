"""msProbe users' command-line habits (issue 12, items 7-12)."""

from __future__ import annotations

import pytest

from conftest import DATA, PYTORCH_CASES

MS_LAYER = DATA / "mindspore/cross_layer_mix_statistics"
STAT = PYTORCH_CASES / "stat_mix_tfm"


@pytest.mark.parametrize("where", ["before", "after"])
def test_framework_short_option_before_or_after_the_command(tmp_path, run_probe, where):
    """``probe -f mindspore compare`` (msProbe's syntax) and ``compare -f mindspore``."""
    args = ["compare", "-tp", MS_LAYER / "target/step0", "-gp", MS_LAYER / "golden/step0",
            "-o", tmp_path, "-c", "-am"]
    argv = ["-f", "mindspore", *args] if where == "before" else [*args, "-f", "mindspore"]
    result = run_probe(*argv)
    assert result.code == 0, result.err
    assert list(tmp_path.glob("compare_result_proc*.csv"))


def test_merge_result_long_directory_options(tmp_path, run_probe):
    multi = PYTORCH_CASES / "multirank_cnn"
    assert run_probe("compare", "-tp", multi / "target/step0", "-gp", multi / "golden/step0",
                     "-o", tmp_path / "res", "-c").code == 0
    config = tmp_path / "merge.yaml"
    config.write_text("api:\n  - Functional.conv2d\n")
    result = run_probe("merge_result", "--input_dir", tmp_path / "res", "--output_dir", tmp_path / "merged",
                       "--config", config)
    assert result.code == 0, result.err
    assert list((tmp_path / "merged").glob("multi_ranks_compare_merge_*.xlsx"))


@pytest.mark.parametrize("mode, words", [
    ("offline_data", "not supported"), ("offline_model", "not supported"), ("atb", "not supported"),
    ("nonsense", "unknown compare mode"),
])
def test_unknown_or_unsupported_modes_are_refused(tmp_path, run_probe, mode, words):
    result = run_probe("compare", "-m", mode, "-tp", STAT / "target/step0/rank0/dump.json",
                       "-gp", STAT / "golden/step0/rank0/dump.json", "-o", tmp_path)
    assert result.code == 2
    assert words in result.err and "supported modes: auto" in result.err and mode in result.err
    assert not list(tmp_path.iterdir())


def test_rank_filter_on_proc_folders_says_what_was_found(tmp_path, run_probe):
    result = run_probe("compare", "-tp", MS_LAYER / "target", "-gp", MS_LAYER / "golden",
                       "--rank", "0,1", "--step", "0", "-o", tmp_path)
    assert result.code == 2
    line = result.err.strip().splitlines()[-1]
    assert "--rank 0,1 --step 0" in line and "found step0/proc" in line and "leave out --rank" in line
