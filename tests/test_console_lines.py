"""The console summary of a multi-rank compare (issue 12, item 15)."""

from __future__ import annotations

from conftest import PYTORCH_CASES

MULTI = PYTORCH_CASES / "multirank_cnn"
NAN = PYTORCH_CASES / "nan_inf_cnn"


def test_jobs_total_is_known_once_planned(tmp_path):
    from probe.model import CompareRequest
    from probe.pipeline import run_compare

    totals = []
    request = CompareRequest(target=MULTI / "target/step0", golden=MULTI / "golden/step0", output_dir=None,
                             framework="pytorch", formats=("csv",), jobs=1, options={})
    run = run_compare(request, on_plan=totals.append)
    assert totals == [len(run.outcomes)] == [2]


def test_first_error_names_its_rank_and_fail_on_says_why(tmp_path, run_probe):
    result = run_probe("compare", "-tp", NAN / "target/step0", "-gp", NAN / "golden/step0", "-o", tmp_path, "-c",
                       "--fail-on", "error")
    assert result.code == 1
    first = next(line for line in result.out.splitlines() if line.startswith("first error:"))
    assert "(rank0)" in first
    assert "probe: --fail-on error: exit 1 because of" in result.err and "error row(s)" in result.err


def test_advice_and_first_divergence_print_readably():
    import probe
    from probe.analysis import advise, first_divergence

    run = probe.compare(MULTI / "target/step0", MULTI / "golden/step0")
    advice, found = advise(run[0]), first_divergence(run.results)
    assert repr(advice).startswith("Advice(rank0, first failing Functional.batch_norm.0.backward.output.1")
    assert "object at 0x" not in repr(advice) + str(advice) + repr(found) + str(found)
    assert str(advice).splitlines()[0].startswith("First failing row: ")
    assert repr(found) == "FirstDiff(before communication: rank 0: Functional.batch_norm.0.forward)"
    assert "rank 0: Functional.batch_norm.0.forward (" in str(found)
    assert repr(advice.failing).startswith("RowResult('Functional.batch_norm.0.backward.output.1', warning")


def test_paths_print_as_they_are_not_as_emoji(tmp_path, run_probe):
    out = tmp_path / "run:smile:"
    result = run_probe("compare", "-tp", NAN / "target/step0", "-gp", NAN / "golden/step0", "-o", out)
    assert result.code == 0
    reports = [line for line in result.out.splitlines() if line.startswith(("report: ", "diagnosis: /", "advisor: "))]
    assert len(reports) >= 3 and all("run:smile:" in line for line in reports)


def test_console_output_does_not_load_rich_emoji_table(tmp_path):
    """Nothing a compare prints is read as emoji codes, so rich's table of them (a few ms to import) stays unloaded."""
    import subprocess
    import sys

    code = ("import sys; from probe.cli import main; code = main(sys.argv[1:]); "
            "print('emoji table loaded:', 'rich._emoji_codes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, "compare", "-tp", str(NAN / "target/step0"), "-gp",
                           str(NAN / "golden/step0"), "-o", str(tmp_path)], capture_output=True, text=True, check=True)
    assert "advisor" in done.stdout and "╭" in done.stdout  # the advisor's panel was drawn
    assert done.stdout.rstrip().endswith("emoji table loaded: False")
