"""Collective consistency across ranks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from probe.analysis import nodes_by_rank
from probe.analysis.collective import check_collectives, shares_output
from probe.cli import main
from probe.pipeline import compare

ROOT = Path(__file__).parent / "data" / "pytorch" / "multirank_cnn"


def test_real_all_reduce_outputs_agree() -> None:
    run = compare(ROOT / "target/step0", ROOT / "golden/step0")
    by_rank = nodes_by_rank(run.results)
    checked, problems = check_collectives(by_rank)
    expected = sum(1 for n in by_rank[0] if n.entry.startswith("Distributed.all_reduce."))
    assert checked == expected > 0
    assert problems == []


def _doctor(tmp_path: Path, entry: str, rank: str = "rank1") -> Path:
    target = tmp_path / "target"
    shutil.copytree(ROOT / "target/step0", target)
    dump = target / rank / "dump.json"
    doc = json.loads(dump.read_text())
    doc["data"][entry]["output"][0]["Max"] += 0.5
    dump.write_text(json.dumps(doc))
    return target


def test_disagreeing_rank_and_op_are_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = _doctor(tmp_path, "Distributed.all_reduce.3.forward")
    run = compare(target, ROOT / "golden/step0")
    checked, problems = check_collectives(nodes_by_rank(run.results))
    assert [p.op for p in problems] == ["Distributed.all_reduce.3.forward"]
    assert problems[0].ranks == (1,)
    assert problems[0].row == "Distributed.all_reduce.3.forward.output.0"
    assert main(["compare", "-tp", str(target), "-gp", str(ROOT / "golden/step0"), "-o", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "ranks disagree" in out and "Distributed.all_reduce.3.forward" in out and "rank 1" in out


def test_majority_names_the_odd_rank(tmp_path: Path) -> None:
    # three ranks: copy rank0 as rank2, then break rank0 -> rank0 is the odd one
    target = tmp_path / "t"
    golden = tmp_path / "g"
    for src, dst in ((ROOT / "target/step0", target), (ROOT / "golden/step0", golden)):
        shutil.copytree(src, dst)
        shutil.copytree(dst / "rank1", dst / "rank2")
    doc = json.loads((target / "rank0/dump.json").read_text())
    doc["data"]["Distributed.all_reduce.5.forward"]["output"][0]["Norm"] *= 2
    (target / "rank0/dump.json").write_text(json.dumps(doc))
    run = compare(target, golden)
    _, problems = check_collectives(nodes_by_rank(run.results))
    assert [(p.op, p.ranks) for p in problems] == [("Distributed.all_reduce.5.forward", (0,))]


@pytest.mark.parametrize("api, shared", [
    ("all_reduce", True), ("all_gather", True), ("broadcast", True), ("_all_gather_base", True),
    ("reduce_scatter", False), ("send", False), ("all_to_all", False),
])
def test_shared_output_apis(api: str, shared: bool) -> None:
    assert shares_output(api) is shared


def test_one_rank_makes_no_collective_digest_and_two_do(tmp_path: Path) -> None:
    one = compare(ROOT / "target/step0/rank0", ROOT / "golden/step0/rank0")
    two = compare(ROOT / "target/step0", ROOT / "golden/step0")
    assert [sorted(o.digests) for o in one.outcomes] == [["advisor", "diagnosis"]]  # nothing to check one rank against
    assert len(two.outcomes) == 2 and all("collective" in o.digests for o in two.outcomes)
    # the analysis still runs (with no digest) and says nothing
    shown = {a.name: a for a in one.analyses}
    assert "collective" in shown and not shown["collective"].data
