"""``probe.compare`` returns what ``probe compare`` shows: results, outcomes and the analyses."""

from __future__ import annotations

from pathlib import Path

import probe

CASE = Path(__file__).parent / "data" / "pytorch" / "diff_analyze_tfm"


def test_python_api_and_cli_give_the_same_first_divergence(tmp_path: Path, run_probe) -> None:
    run = probe.compare(CASE / "target" / "step0", CASE / "golden" / "step0", tmp_path / "api", diff_analyze=True)
    found = run.analysis("diff_analyze").data[""]
    assert found.found
    node = next(iter(found.nodes.values()))[0]
    cli = run_probe("compare", "-tp", CASE / "target" / "step0", "-gp", CASE / "golden" / "step0",
                    "-o", tmp_path / "cli", "-da")
    assert cli.code == 0, cli.err
    assert node.entry in cli.out
    assert f"rank {next(iter(found.nodes))}: {node.entry}" in cli.out
    api_files = sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "api").rglob("*") if p.is_file())
    cli_files = sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "cli").rglob("*") if p.is_file())
    assert api_files == cli_files
    assert any(name.startswith("diff_analyze") for name in api_files)


def test_advisor_answer_is_in_the_report_and_not_printed(tmp_path: Path, capsys) -> None:
    run = probe.compare(CASE / "target" / "step0" / "rank0" / "dump.json",
                        CASE / "golden" / "step0" / "rank0" / "dump.json", tmp_path)
    advisor = run.analysis("advisor")
    assert advisor is not None and advisor.files and advisor.files[0].name.startswith("advisor_")
    advices = advisor.data[""]
    assert len(advices) == 1 and not advices[0].ok
    assert advisor.shown, "the console has something to render"
    assert capsys.readouterr().out == ""
    assert run.summary().rows == len(run[0]) and run.summary().warnings + run.summary().errors >= 1


def test_analyze_false_switches_every_analyzer_off(tmp_path: Path) -> None:
    run = probe.compare(CASE / "target" / "step0" / "rank0" / "dump.json",
                        CASE / "golden" / "step0" / "rank0" / "dump.json", tmp_path, analyze=False)
    assert run.analyses == []
    assert [p.suffix for p in tmp_path.iterdir()] == [".csv"]
