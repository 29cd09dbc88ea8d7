"""``-da``: first diverging node, checked against msProbe's own output on real dumps."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from probe.analysis import first_divergence
from probe.analysis.first_diff import AFTER, BEFORE, DURING, find_first_diff
from probe.analysis.nodes import Node, is_comm_entry
from probe.cli import main
from probe.pipeline import compare

DATA = Path(__file__).parent / "data"
PT = DATA / "pytorch"
MS = DATA / "analysis" / "ms_diff_analyze"


def _one(directory: Path, pattern: str) -> Path:
    files = sorted(directory.glob(pattern))
    assert len(files) == 1, files
    return files[0]


def _fraction(text: str) -> float | None:
    return abs(float(text[:-1])) / 100 if text.endswith("%") else None


def first_diff_from_msprobe_csv(path: Path, md5: bool = False, stop_at_comm: bool = False) -> str | None:
    """msProbe's -da rule applied to one of msProbe's CSV reports: the first differing entry."""
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            name = row["NPU Name"]
            entry = name.split(".output.")[0] if ".output." in name else None
            if entry is None:
                entry = name.split(".input.")[0].split(".parameters")[0]
                if stop_at_comm and is_comm_entry(entry):
                    break
                continue
            if stop_at_comm and is_comm_entry(entry):
                break
            if row["Bench Name"] == "N/A":
                continue
            if md5:
                differs = row["NPU MD5"] != row["BENCH MD5"]
            else:
                rels = [_fraction(row[c]) for c in ("MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")]
                differs = any(r is not None and r > 0.5 for r in rels)
            if differs:
                return entry
    return None


def test_rank_json_and_diff_analyze_match_msprobe(tmp_path: Path) -> None:
    case = PT / "diff_analyze_tfm"
    code = main(["compare", "-tp", str(case / "target/step0"), "-gp", str(case / "golden/step0"),
                 "-o", str(tmp_path), "-da", "-c"])
    assert code == 0
    expected = json.loads(_one(case / "expected/da", "compare_result_rank0_*.json").read_text())
    got = json.loads(_one(tmp_path, "compare_result_rank0_*.json").read_text())
    assert list(got) == list(expected)
    for entry, body in expected.items():
        assert got[entry]["is_same"] == body["is_same"], entry
        assert len(got[entry]["op_items"]) == len(body["op_items"]), entry
        for want, have in zip(body["op_items"], got[entry]["op_items"]):
            for column, value in want.items():
                if column in ("Result", "Err_message"):  # msProbe leaves these empty
                    continue
                assert have[column] == value, (entry, want["NPU Name"], column)
    want = json.loads(_one(case / "expected/da", "diff_analyze_*.json").read_text())
    have = json.loads(_one(tmp_path, "diff_analyze_*.json").read_text())
    assert have == want


def test_da_on_dump_files_is_not_ignored(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    case = PT / "diff_analyze_tfm"
    code = main(["compare", "-tp", str(case / "target/step0/rank0/dump.json"),
                 "-gp", str(case / "golden/step0/rank0/dump.json"), "-o", str(tmp_path), "-da", "-c"])
    assert code == 0
    want = json.loads(_one(case / "expected/da", "diff_analyze_*.json").read_text())
    have = json.loads(_one(tmp_path, "diff_analyze_*.json").read_text())
    assert have == want
    assert _one(tmp_path, "compare_result_*.csv")  # the ordinary report is still written
    out = capsys.readouterr().out
    assert "Functional.linear.0.forward" in out and "gen_dump.py, line 179" in out


def test_mindspore_first_diff_where_msprobe_finds_none() -> None:
    # msProbe 26.2 ignores -da for MindSpore ("Cannot find any diff node"); its own CSV shows the divergence.
    expected = first_diff_from_msprobe_csv(_one(MS / "expected/da", "compare_result_rank0_*.csv"))
    assert expected is not None
    run = compare(MS / "target/step0", MS / "golden/step0")
    found = first_divergence(run.results)
    assert found.phase == BEFORE
    assert found.first().entry == expected
    assert "Cannot find any diff node" in (MS / "expected/da/msprobe_compare.log").read_text()


@pytest.mark.parametrize("case, md5", [("md5_mix_tfm", True), ("tensor_mix_tfm", False), ("stat_mix_tfm", False)])
def test_first_diff_modes_agree_with_msprobe_report(case: str, md5: bool) -> None:
    root = PT / case
    report = sorted((root / "expected").glob("*/compare_result_*.csv"))[0]
    expected = first_diff_from_msprobe_csv(report, md5=md5) if not case.startswith("tensor") else None
    run = compare(root / "target/step0", root / "golden/step0")
    found = first_divergence(run.results)
    if case.startswith("tensor"):
        # tensor dumps are analysed on their statistics: same answer as the statistics rule on the stats
        expected = _first_diff_from_stats(report)
    assert found.first() is not None
    assert found.first().entry == expected


def _first_diff_from_stats(path: Path) -> str | None:
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            name = row["NPU Name"]
            if ".output." not in name or row["Bench Name"] == "N/A":
                continue
            for stat in ("max", "min", "mean", "l2norm"):
                try:
                    n, b = float(row[f"NPU {stat}"]), float(row[f"Bench {stat}"])
                except ValueError:
                    continue
                if b != 0 and abs((n - b) / b) > 0.5:
                    return name.split(".output.")[0]
    return None


def test_multirank_first_diff_per_rank_matches_msprobe_reports() -> None:
    root = PT / "multirank_cnn"
    run = compare(root / "target/step0", root / "golden/step0")
    found = first_divergence(run.results)
    reports = {int(p.name.split("_")[2][4:]): p for p in (root / "expected/dir_csv").glob("*.csv")}
    expected = {rank: first_diff_from_msprobe_csv(p, stop_at_comm=True) for rank, p in reports.items()}
    expected = {rank: entry for rank, entry in expected.items() if entry}
    assert expected, "fixture should diverge before the first all_reduce"
    assert found.phase == BEFORE
    assert {rank: nodes[0].entry for rank, nodes in found.nodes.items()} == expected


def test_nan_output_counts_as_divergence() -> None:
    root = PT / "nan_inf_cnn"
    run = compare(root / "target/step0", root / "golden/step0")
    found = first_divergence(run.results)
    assert found.first().entry == "Torch.div.0.forward"
    assert found.first().trip.metric == "NaN/inf"


def test_multistep_root_writes_per_step(tmp_path: Path) -> None:
    root = PT / "multistep_cnn"
    code = main(["compare", "-tp", str(root / "target"), "-gp", str(root / "golden"), "-o", str(tmp_path), "-da", "-c"])
    assert code == 0
    for step in ("step0", "step1"):
        assert list((tmp_path / step).glob("compare_result_*.json")), step


# ------------------------------------------------------------------------------------------
# the communication phases, on hand-made node lists
# ------------------------------------------------------------------------------------------


def _nodes(rank: int, spec: list[tuple[str, bool]], group: tuple[int, ...] = (0, 1)) -> list[Node]:
    nodes = []
    for index, (entry, same) in enumerate(spec):
        node = Node(entry=entry, rank=rank, index=index, records=[], is_same=same)
        if node.is_comm:
            node.peers = {"group": group}
        nodes.append(node)
    return nodes


def test_during_communication_reports_compute_before_the_op_and_the_op() -> None:
    spec0 = [("Functional.linear.0.forward", True), ("Distributed.all_reduce.0.forward", True),
             ("Functional.relu.0.forward", True), ("Distributed.all_reduce.1.forward", False)]
    spec1 = [("Functional.linear.0.forward", True), ("Distributed.all_reduce.0.forward", True),
             ("Functional.relu.0.forward", False), ("Distributed.all_reduce.1.forward", False)]
    found = find_first_diff({0: _nodes(0, spec0), 1: _nodes(1, spec1)})
    assert found.phase == DURING
    assert [n.entry for n in found.nodes[1]] == ["Functional.relu.0.forward"]
    assert [n.entry for n in found.nodes[0]] == ["Distributed.all_reduce.1.forward"]


def test_during_communication_lowest_layer_wins_and_p2p_links() -> None:
    spec0 = [("Distributed.send.0.forward", True), ("Functional.add.0.forward", False),
             ("Distributed.all_reduce.0.forward", True)]
    spec1 = [("Distributed.recv.0.forward", False), ("Functional.add.0.forward", True),
             ("Distributed.all_reduce.0.forward", True)]
    nodes = {0: _nodes(0, spec0), 1: _nodes(1, spec1)}
    nodes[0][0].peers = {"dst": 1}
    nodes[1][0].peers = {"src": 0}
    found = find_first_diff(nodes)
    assert found.phase == DURING
    assert found.nodes == {1: [nodes[1][0]]}


def test_after_communication() -> None:
    spec = [("Distributed.all_reduce.0.forward", True), ("Functional.gelu.0.forward", False)]
    found = find_first_diff({0: _nodes(0, spec), 1: _nodes(1, [(e, True) for e, _ in spec])})
    assert found.phase == AFTER
    assert list(found.nodes) == [0]
    assert found.first().entry == "Functional.gelu.0.forward"


def test_nothing_found() -> None:
    found = find_first_diff({0: _nodes(0, [("Functional.gelu.0.forward", True)])})
    assert not found.found and found.first() is None


def test_no_diff_message_and_no_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    case = PT / "diff_analyze_tfm"
    target = tmp_path / "same"
    shutil.copytree(case / "golden/step0", target)
    code = main(["compare", "-tp", str(target), "-gp", str(case / "golden/step0"), "-o", str(tmp_path / "o"), "-da", "-c"])
    assert code == 0
    assert not list((tmp_path / "o").glob("diff_analyze_*.json"))
    assert "no diverging node" in capsys.readouterr().out
