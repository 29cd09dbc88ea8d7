"""N-way compare: one golden against several targets (real fixture dumps sharing one golden run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import probe
from conftest import PYTORCH_CASES
from parity import read_report

# stat_mix_cnn, structure_extra_layer_cnn and multistep_cnn step0 were dumped against the same
# golden run (identical golden dump.json); their targets differ: input perturbed, an extra layer,
# a second perturbed run.
GOLDEN = PYTORCH_CASES / "stat_mix_cnn/golden/step0"
TARGETS = {
    "mix": PYTORCH_CASES / "stat_mix_cnn/target/step0",
    "extra": PYTORCH_CASES / "structure_extra_layer_cnn/target/step0",
    "multi": PYTORCH_CASES / "multistep_cnn/target/step0",
}
GOLDEN_DUMP = GOLDEN / "proc23597/dump.json"
MULTI = PYTORCH_CASES / "multirank_cnn"


def _golden_names(path: Path = GOLDEN_DUMP) -> list[str]:
    """The golden dump's rows as the reader flattens them, in dump order."""
    from probe.plugins import Host
    from probe.stages import pick_reader

    return [row.name for row in pick_reader(path, Host()).load(path, with_stack=False).rows]


def _one(directory: Path, pattern: str) -> Path:
    found = sorted(directory.glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


@pytest.fixture(scope="module")
def three_way(tmp_path_factory):
    """A three-way compare and the three two-way compares of the same targets (CLI, csv+json+xlsx)."""
    from probe.cli import main

    root = tmp_path_factory.mktemp("nway")
    argv = ["compare", "-gp", str(GOLDEN), "-o", str(root / "nway"), "--format", "csv,json,xlsx", "-c", "-j", "2"]
    for label, target in TARGETS.items():
        argv += ["-tp", str(target), "--label", label]
    assert main(argv) == 0
    for label, target in TARGETS.items():
        assert main(["compare", "-gp", str(GOLDEN), "-tp", str(target), "-o", str(root / "two" / label),
                     "--format", "csv,json,xlsx", "-c"]) == 0
    return root


@pytest.mark.parametrize("label", list(TARGETS))
@pytest.mark.parametrize("suffix", ["csv", "json", "xlsx"])
def test_per_target_reports_equal_two_way_byte_for_byte(three_way, label, suffix):
    ours = _one(three_way / "nway" / label, f"compare_result_*.{suffix}")
    alone = _one(three_way / "two" / label, f"compare_result_*.{suffix}")
    assert ours.name.rsplit("_", 1)[0] == alone.name.rsplit("_", 1)[0]
    if suffix != "xlsx":
        assert ours.read_bytes() == alone.read_bytes()
        return
    # an xlsx is a zip whose entries carry their write time: compare every member's bytes
    import zipfile

    with zipfile.ZipFile(ours) as a, zipfile.ZipFile(alone) as b:
        assert a.namelist() == b.namelist()
        for name in a.namelist():
            assert a.read(name) == b.read(name), name


def test_combined_report_lists_every_golden_row_once(three_way):
    header, rows = read_report(_one(three_way / "nway", "nway_result_*.csv"))
    names = [row["Bench Name"] for row in rows]
    golden = _golden_names()
    assert names == golden and len(set(names)) == len(names)
    assert header[0] == "Bench Name" and header[-1] == "Targets Disagree"
    for label in TARGETS:
        assert [f"{label}: NPU Name", f"{label}: MaxRelativeErr", f"{label}: Result", f"{label}: First Suspect"] == [
            h for h in header if h.startswith(f"{label}: ")
        ]


def test_combined_cells_are_the_per_target_report_cells(three_way):
    _, rows = read_report(_one(three_way / "nway", "nway_result_*.csv"))
    disagreeing = 0
    for row in rows:
        verdicts = set()
        for label in TARGETS:
            _, report = read_report(_one(three_way / "two" / label, "compare_result_*.csv"))
            hit = next((r for r in report if r["Bench Name"] == row["Bench Name"]), None)
            if hit is None:
                assert row[f"{label}: Result"] == "missing"
                verdicts.add("missing")
                continue
            assert row[f"{label}: NPU Name"] == hit["NPU Name"]
            assert row[f"{label}: Result"] == hit["Result"]
            assert row[f"{label}: MaxRelativeErr"] == hit["MaxRelativeErr"]
            verdicts.add(hit["Result"])
        assert row["Targets Disagree"] == ("yes" if len(verdicts) > 1 else "no")
        disagreeing += len(verdicts) > 1
    # the perturbed runs warn on relu's output, the extra-layer run does not: they part ways there
    relu = next(r for r in rows if r["Bench Name"] == "Functional.relu.0.forward.output.0")
    assert (relu["mix: Result"], relu["extra: Result"], relu["Targets Disagree"]) == ("warning", "pass", "yes")
    assert 0 < disagreeing < len(rows)


def test_combined_first_suspect_is_the_diagnosis_best_suspect(three_way):
    """The CLI runs the diagnosis of every target: its best suspect's rows carry the flag."""
    _, rows = read_report(_one(three_way / "nway", "nway_result_*.csv"))
    for label, target in TARGETS.items():
        best = probe.diagnose(target, GOLDEN).suspects[0]
        flagged = {r[f"{label}: NPU Name"] for r in rows if r[f"{label}: First Suspect"] == "first suspect"}
        assert flagged, label
        assert all(name.startswith(best.node + ".") for name in flagged), (label, best.node, flagged)
        _, report = read_report(_one(three_way / "two" / label, "compare_result_*.csv"))
        golden_rows = {r["NPU Name"] for r in report if r["NPU Name"].startswith(best.node + ".") and r["Bench Name"] != "N/A"}
        assert flagged == golden_rows


def test_python_api_flags_the_diagnosis_suspect_and_without_analyzers_the_advisors_node():
    from probe.analysis.advisor import advise

    both = probe.compare_many(GOLDEN, [TARGETS["mix"], TARGETS["extra"]], labels=["mix", "extra"])
    best = both.run("mix").analysis("diagnosis").data.suspects[0]
    flagged = {r["mix: NPU Name"] for r in both.tables[0].as_dicts() if r["mix: First Suspect"]}
    assert flagged and all(name.startswith(best.node + ".") for name in flagged)

    run = probe.compare_many(GOLDEN, [TARGETS["mix"], TARGETS["extra"]], labels=["mix", "extra"], analyze=False)
    (table,) = run.tables
    assert run.run("mix").analyses == []
    culprit = advise(run.run("mix")[0]).culprit
    flagged = {r["mix: NPU Name"] for r in table.as_dicts() if r["mix: First Suspect"] == "first suspect"}
    assert culprit is not None and flagged == {record.name for record in culprit.node.records}


def test_combined_json_and_xlsx_hold_the_same_rows(three_way):
    _, csv_rows = read_report(_one(three_way / "nway", "nway_result_*.csv"))
    doc = json.loads(_one(three_way / "nway", "nway_result_*.json").read_text())
    _, xlsx_rows = read_report(_one(three_way / "nway", "nway_result_*.xlsx"))
    assert doc["labels"] == list(TARGETS) and doc["summary"]["rows"] == len(csv_rows)
    assert [r["Bench Name"] for r in doc["rows"]] == [r["Bench Name"] for r in csv_rows]
    assert [r["mix: Result"] for r in xlsx_rows] == [r["mix: Result"] for r in csv_rows]
    assert doc["summary"]["disagree"] == sum(r["Targets Disagree"] == "yes" for r in csv_rows)


def test_multi_rank_n_way_combines_per_rank(tmp_path):
    run = probe.compare_many(MULTI / "golden/step0", [MULTI / "target/step0", MULTI / "golden/step0"],
                             labels=["npu", "self"], output=tmp_path)
    assert sorted(t.job_label for t in run.tables) == ["rank0", "rank1"]
    for table in run.tables:
        rank = table.job_label
        golden = _golden_names(MULTI / f"golden/step0/{rank}/dump.json")
        rows = table.as_dicts()
        assert [r["Bench Name"] for r in rows] == golden
        assert all(r["self: Result"] == "pass" for r in rows)  # the golden against itself
        assert table.files and table.files[0].name.startswith(f"nway_result_{rank}_")
        disagree = [r for r in rows if r["Targets Disagree"] == "yes"]
        assert len(disagree) == table.disagree
        assert all(r["npu: Result"] != "pass" for r in disagree)
    assert sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "npu").glob("*.csv")) == [
        "compare_result_rank0", "compare_result_rank1"]
    assert run.run("npu").summary().rows == run.summary("npu").rows > 0


def test_default_labels_are_unique_directory_names(tmp_path):
    from probe.regression.labels import target_labels

    targets = [PYTORCH_CASES / "stat_mix_cnn/target/step0", PYTORCH_CASES / "multistep_cnn/target/step0",
               PYTORCH_CASES / "multistep_cnn/target/step1"]
    labels = target_labels(targets)
    assert labels == ["stat_mix_cnn_target_step0", "multistep_cnn_target_step0", "step1"]
    assert target_labels([Path("a/x"), Path("a/x")]) == ["x", "x_2"]  # the same dir twice


@pytest.mark.parametrize("labels, message", [
    (["../up", "b"], "is not a usable name"),
    (["a", "a"], "given twice"),
    (["a"], "one --label per -tp"),
])
def test_bad_labels_are_one_line_errors(tmp_path, run_probe, labels, message):
    argv = ["compare", "-gp", GOLDEN, "-tp", TARGETS["mix"], "-tp", TARGETS["extra"], "-o", tmp_path]
    for label in labels:
        argv += ["--label", label]
    result = run_probe(*argv)
    assert result.code == 2 and message in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_formula_looking_label_is_refused_and_cells_are_neutralised(tmp_path):
    from probe.regression.tables import write_table

    files = write_table(tmp_path, "t", ["csv"], ["=cmd", "b"], [["=HYPERLINK(1)", 1.5], ["+x", float("nan")]])
    text = files[0].read_text()
    assert text.splitlines() == ["'=cmd,b", "'=HYPERLINK(1),1.5", "'+x,Nan"]


def test_label_without_several_targets_is_an_error(tmp_path, run_probe):
    result = run_probe("compare", "-gp", GOLDEN, "-tp", TARGETS["mix"], "--label", "x", "-o", tmp_path)
    assert result.code == 2 and "give several -tp" in result.err


@pytest.mark.slow
def test_n_way_on_a_dask_cluster_gives_the_same_combined_tables(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    targets = [MULTI / "target/step0", MULTI / "golden/step0"]
    local = probe.compare_many(MULTI / "golden/step0", targets, labels=["npu", "self"], output=tmp_path / "local")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = probe.compare_many(MULTI / "golden/step0", targets, labels=["npu", "self"],
                                    output=tmp_path / "dask", jobs=2, executor="dask",
                                    scheduler=cluster.scheduler_address)
    assert [(t.job_label, t.rows) for t in remote.tables] == [(t.job_label, t.rows) for t in local.tables]
    assert len(remote.tables) == 2
