"""Automatic matching (``--auto-match``, ``probe match``) on real dumps, checked against truth.json."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

import probe
from probe.automatch.align import align
from probe.automatch.calls import parse_entry
from probe.automatch.report import mapping_yaml
from probe.automatch.matcher import MatchResult, RowMatch
from probe.builtin.mappers import read_name_mapping

DATA = Path(__file__).parent / "data" / "automatch"
CASES = ["sa04_enc_wrapper_and_calls", "sa05_enc_bert_vs_fused_golden", "cross_layer_mix_statistics"]


def _case(name: str) -> tuple[Path, Path, dict[str, str | None]]:
    truth = json.loads((DATA / name / "truth.json").read_text())
    args = truth["probe_args"]
    return DATA / name / args[1], DATA / name / args[3], truth["pairs"]


def _bench_names(target: Path, golden: Path, **options) -> dict[str, str | None]:
    (result,) = list(probe.compare(target, golden, output=None, **options))
    return {r.pair.target.name: (r.pair.golden.name if r.pair.golden is not None else None) for r in result.records}


def _score(truth: dict[str, str | None], chosen: dict[str, str | None]) -> tuple[float, float, float]:
    made = correct = renamed = renamed_correct = 0
    pairs = sum(1 for g in truth.values() if g is not None)
    for target, golden in truth.items():
        if golden is not None and golden != target:
            renamed += 1
        got = chosen.get(target)
        if got is None:
            continue
        made += 1
        if got == golden:
            correct += 1
            renamed_correct += golden != target
    return correct / made, correct / pairs, renamed_correct / renamed


@pytest.mark.parametrize("name", CASES)
def test_auto_match_meets_the_targets_on_real_dumps(name):
    target, golden, truth = _case(name)
    chosen = _bench_names(target, golden, auto_match=True)
    precision, recall, renamed_recall = _score(truth, chosen)
    assert precision >= 0.98, (precision, recall)
    assert recall >= 0.90, (precision, recall)
    assert renamed_recall >= 0.85


def test_plain_matching_is_worse_there():
    """The cases are hard for name matching (the check above is not trivially met)."""
    target, golden, truth = _case("sa04_enc_wrapper_and_calls")
    precision, recall, _ = _score(truth, _bench_names(target, golden))
    assert precision < 0.9 and recall < 0.6


def test_rows_without_counterpart_stay_unpaired():
    """Wrapper modules, the layer on one side only and the extra module call are N/A."""
    target, golden, truth = _case("sa04_enc_wrapper_and_calls")
    chosen = _bench_names(target, golden, auto_match=True)
    nulls = [t for t, g in truth.items() if g is None]
    assert any(".Wrapped." in t for t in nulls) and any("ln_extra" in t for t in nulls)
    assert all(chosen[t] is None for t in nulls)


def test_fused_and_separate_projections_are_never_paired():
    target, golden, truth = _case("sa05_enc_bert_vs_fused_golden")
    chosen = _bench_names(target, golden, auto_match=True)
    for t in (r for r in truth if ".query.Linear." in r or ".key.Linear." in r or ".value.Linear." in r):
        assert chosen[t] is None
    assert not any(g is not None and ".qkv." in g for g in chosen.values())


def test_plain_compare_without_auto_match_is_msprobe_name_matching():
    """Without --auto-match the Bench Name column is msProbe's own (its expected csv)."""
    target, golden, _ = _case("sa04_enc_wrapper_and_calls")
    (expected,) = (DATA / "sa04_enc_wrapper_and_calls" / "expected").glob("*.csv.gz")
    with gzip.open(expected, "rt", newline="") as handle:
        msprobe = {r["NPU Name"]: (None if r["Bench Name"] in ("N/A", "") else r["Bench Name"])
                   for r in csv.DictReader(handle)}
    assert _bench_names(target, golden) == msprobe


def test_auto_match_is_deterministic():
    target, golden, _ = _case("sa05_enc_bert_vs_fused_golden")
    assert _bench_names(target, golden, auto_match=True) == _bench_names(target, golden, auto_match=True)


def test_mapping_file_wins_over_automatic_pairs(tmp_path):
    target, golden, truth = _case("sa04_enc_wrapper_and_calls")
    row = "Functional.linear.0.forward.input.0"
    other = "Functional.linear.1.forward.input.0"
    assert truth[row] != other
    mapping = tmp_path / "map.yaml"
    mapping.write_text(f"{row}: {other}\n")
    chosen = _bench_names(target, golden, auto_match=True, data_mapping=str(mapping))
    assert chosen[row] == other
    assert chosen["Functional.linear.1.forward.input.0"] == truth["Functional.linear.1.forward.input.0"]


def test_probe_match_writes_a_mapping_that_dm_accepts(run_probe, tmp_path):
    target, golden, truth = _case("sa04_enc_wrapper_and_calls")
    out = tmp_path / "out"
    res = run_probe("match", "-tp", target.parent, "-gp", golden, "-o", out)
    assert res.code == 0, res.err
    (yaml_file,) = out.glob("mapping_*.yaml")
    (json_file,) = out.glob("match_*.json")
    matches = json.loads(json_file.read_text())
    assert {m["target"] for m in matches} == set(truth)
    assert all(set(m) == {"target", "golden", "confidence", "why"} and 0 <= m["confidence"] <= 1 for m in matches)
    assert all(m["why"] for m in matches if m["golden"] is not None)
    assert "# confidence" in yaml_file.read_text()
    auto = {m["target"]: m["golden"] for m in matches}
    # -dm with the written file gives exactly the automatic pairs
    assert _bench_names(target, golden, data_mapping=str(yaml_file)) == auto
    assert _score(truth, auto)[0] >= 0.98


def test_probe_match_rejects_a_missing_dump(run_probe, tmp_path):
    res = run_probe("match", "-tp", tmp_path / "nope", "-gp", tmp_path, "-o", tmp_path / "o")
    assert res.code == 2 and "nope" in res.err and len(res.err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_mapping_yaml_quotes_hostile_names(tmp_path):
    names = ['a: b # c.forward.input.0', 'x"y\\z\n.output.0', "&anchor *alias {x}"]
    rows = [RowMatch(n, n[::-1], 0.5, "w") for n in names] + [RowMatch("lonely", None, 0.0, "none")]
    path = tmp_path / "m.yaml"
    path.write_text(mapping_yaml(MatchResult([], rows)))
    assert read_name_mapping(path, "data mapping") == {**{n: n[::-1] for n in names}, "lonely": "N/A"}


def test_align_keeps_order_and_skips_insertions():
    kt = ["a", "b", "x", "c", "d"]
    kg = ["a", "b", "c", "y", "d"]
    pairs = align(kt, kg, lambda i, j: 1.0)
    assert pairs == [(0, 0), (1, 1), (3, 2), (4, 4)]


def test_align_prefers_the_better_scoring_of_repeated_calls():
    kt = ["n", "n"]
    kg = ["n"]
    assert align(kt, kg, lambda i, j: 0.5 if i == 0 else 0.9) == [(1, 0)]
    assert align(kt, kg, lambda i, j: 0.9 if i == 0 else 0.9) == [(0, 0)]  # a tie keeps the earlier call


def test_align_large_pieces_use_anchors():
    import probe.automatch.align as mod

    kt = [f"k{i}" for i in range(3000)]
    kg = kt[:1500] + ["extra"] + kt[1500:]
    pairs = mod.align(kt, kg, lambda i, j: 1.0)
    assert len(pairs) == 3000 and pairs[1500] == (1500, 1501)


def test_parse_entry_names():
    assert parse_entry("Functional.linear.3.forward") == ("api", "forward", "Functional.linear", "linear", 3)
    assert parse_entry("Tensor.__add__.0.backward")[3] == "add"
    assert parse_entry("Module.layers.0.attn.SelfAttn.forward.2") == ("module", "forward", "layers.0.attn", "SelfAttn", 2)
    assert parse_entry("Cell.fc.Dense.parameters_grad.0")[:4] == ("module", "parameters_grad", "fc", "Dense")
    assert parse_entry("junk") is None


def _truth_nodes(truth: dict[str, str | None], target_nodes) -> dict[str, str | None]:
    """Node-level truth: the golden entry whose rows are the partners of the node's rows."""
    out: dict[str, str | None] = {}
    for name in target_nodes:
        partners: set[str | None] = set()
        for row, partner in truth.items():
            if row.startswith(name + "."):
                suffix = row[len(name):]
                partners.add(partner[: -len(suffix)] if partner and partner.endswith(suffix) else None)
        if partners:
            out[name] = partners.pop() if len(partners) == 1 else None
    return out


@pytest.mark.parametrize("auto", [False, True])
def test_graph_visualize_auto_match_pairs_nodes(tmp_path, auto):
    from probe.graph.service import GraphOptions, run_graph
    from probe.plugins import default_host

    target, golden, truth = _case("sa04_enc_wrapper_and_calls")
    run = run_graph(GraphOptions(target=target.parent, golden=golden.parent, output=tmp_path, auto_match=auto),
                    default_host())
    npu = next(g for g in run.graphs if g.side == "NPU")
    node_truth = _truth_nodes(truth, npu.nodes)
    made = {n.name: n.match.name for n in npu.nodes.values() if n.match is not None and n.name in node_truth}
    correct = sum(1 for n, g in made.items() if node_truth[n] == g)
    pairs = sum(1 for g in node_truth.values() if g is not None)
    import sqlite3

    with sqlite3.connect(f"file:{run.db}?mode=ro", uri=True) as conn:
        stored = dict(conn.execute("SELECT id, confidence FROM tb_auto_match").fetchall())
    if auto:
        assert correct / len(made) >= 0.98 and correct / pairs >= 0.9
        assert all(g is None for n, g in node_truth.items() if ".Wrapped." in n)
        assert not any(".Wrapped." in n for n in made)
        # every automatic pair is stored with its confidence for the viewer
        assert {f"{npu.graph_id}_{n}" for n in made} <= set(stored)
        assert all(0 < c <= 1 for c in stored.values())
    else:
        assert correct / pairs < 0.7  # name matching misses the renamed and shifted nodes
        assert stored == {}


PYTORCH = Path(__file__).parent / "data" / "pytorch"


def _pytorch_pair(case: str) -> tuple[Path, Path]:
    def find(side: str) -> Path:
        return sorted((PYTORCH / case / side).rglob("dump.json"))[0]

    return find("target"), find("golden")


@pytest.mark.parametrize("case", ["stat_mix_tfm", "md5_mix_tfm", "dtype_bf16_tfm", "nan_inf_cnn", "tensor_mix_tfm"])
def test_same_names_keep_every_plain_pair(case):
    """Where names agree, automatic matching keeps name matching's pairs, even after a divergence
    (NaN/inf, bf16 vs fp32, md5 checksums that differ)."""
    target, golden = _pytorch_pair(case)
    plain = _bench_names(target, golden)
    auto = _bench_names(target, golden, auto_match=True)
    assert {k: v for k, v in plain.items() if v is not None} == {k: v for k, v in auto.items() if v is not None}


def test_renamed_modules_pair_like_msprobes_data_mapping():
    """data_mapping_tfm: modules up/down vs fc1/fc2. msProbe needs -dm data_mapping.yaml; --auto-match
    pairs the same module rows without it."""
    target, golden = _pytorch_pair("data_mapping_tfm")
    (expected,) = (PYTORCH / "data_mapping_tfm" / "expected" / "dm_csv").glob("*.csv")
    with expected.open(newline="") as handle:
        msprobe = {r["NPU Name"]: r["Bench Name"] for r in csv.DictReader(handle) if r["NPU Name"].startswith("Module.")}
    auto = _bench_names(target, golden, auto_match=True)
    assert any(k.startswith("Module.up.") for k in msprobe)
    assert {k: auto[k] for k in msprobe} == msprobe


def test_ops_of_other_names_pair_when_alone_between_pairs():
    """MindSpore bias_add vs PyTorch Tensor.add, dense vs linear (API table): the pairs of msProbe's
    data_mapping.yaml for this fixture, found with no mapping file; none is paired differently."""
    from probe.jsonio import read_yaml

    case = Path(__file__).parent / "data" / "mindspore" / "cross_api_L1_statistics"
    target = sorted((case / "target").rglob("dump.json"))[0]
    golden = sorted((case / "golden").rglob("dump.json"))[0]
    auto = _bench_names(target, golden, auto_match=True)
    truth = read_yaml(case / "data_mapping.yaml")
    made = {k: auto[k] for k in truth if auto.get(k) is not None}
    assert all(truth[k] == v for k, v in made.items())
    assert "Functional.bias_add.0.forward.output.0" in made and len(made) >= len(truth) - 1


def test_module_tree_contradiction_lowers_confidence():
    """construct.json: a pair whose parent modules are paired with other modules loses confidence."""
    from probe.automatch.mapper import load_and_match, module_tree
    from probe.automatch.matcher import TREE_PENALTY, auto_match
    from probe.dumps import load_pair
    from probe.plugins import default_host
    from probe.stages import pick_reader

    target, golden, _ = _case("sa04_enc_wrapper_and_calls")
    host = default_host()
    t, g = load_pair(target, golden, pick_reader(target, host), pick_reader(golden, host))
    trees = (module_tree(t), module_tree(g))
    assert trees[0]["Functional.linear.0.forward"] == "Module.layers.0.module.attn.q.Linear.forward.0"
    base = {m.target: m for m in auto_match(t.rows, g.rows, None, trees).calls}
    wrong_tree = dict(trees[0], **{"Functional.linear.0.forward": "Module.layers.0.module.attn.k.Linear.forward.0"})
    moved = {m.target: m for m in auto_match(t.rows, g.rows, None, (wrong_tree, trees[1])).calls}
    before = base["Functional.linear.0.forward"]
    after = moved.get("Functional.linear.0.forward")
    assert after is None or after.confidence == pytest.approx(before.confidence * TREE_PENALTY, abs=2e-3)
    assert after is None or "another" in after.why
    assert load_and_match(target, golden, host).calls == list(base.values())


def test_unusable_construct_json_is_a_warning(tmp_path, caplog):
    """A broken construct.json does not stop --auto-match; it is named in a warning."""
    import shutil

    target, golden, truth = _case("sa04_enc_wrapper_and_calls")
    copy = tmp_path / "target"
    shutil.copytree(target.parent, copy)
    (copy / "construct.json").write_text("[1, 2")
    with caplog.at_level("WARNING", logger="probe"):
        chosen = _bench_names(copy / "dump.json", golden, auto_match=True)
    assert "construct.json" in caplog.text
    assert _score(truth, chosen)[0] >= 0.98
