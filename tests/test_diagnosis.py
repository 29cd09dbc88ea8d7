"""Diagnosis: ranked suspects against the noise floor, on real msProbe dumps with a known fault.

The cases in tests/data/diagnosis come from the diagnosis developer set: each ``case.json``
names the calls that count as the right answer (``accept``, ``accept_steps``) or says the pair
is clean (a lower-precision run of a healthy network, or an identical pair).
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import probe
from conftest import DATA
from probe.diagnosis.facts import NodeFacts, RankFacts, benign_argument, op_of, stats_deviation, step_of
from probe.diagnosis.floor import kind_gains, local_floor, unit_roundoff
from probe.diagnosis.rank import diagnose_facts, forward_of, sort_key
from probe.diagnosis.report import Diagnosis, Suspect, _write_behind

CASES = DATA / "diagnosis"


def _case(name: str) -> tuple[dict, Path, Path]:
    case_dir = CASES / name
    case = json.loads((case_dir / "case.json").read_text())
    return case, case_dir / case["probe_args"]["tp"], case_dir / case["probe_args"]["gp"]


def _names() -> list[str]:
    return sorted(p.parent.name for p in CASES.glob("*/case.json"))


@pytest.mark.parametrize("name", _names())
def test_case_ground_truth(name: str) -> None:
    case, target, golden = _case(name)
    diagnosis = probe.diagnose(target, golden)
    if case["kind"] == "fault":
        assert diagnosis.verdict == "divergent"
        first = diagnosis.suspects[0]
        assert first.node in case["accept"], [s.node for s in diagnosis.suspects[:3]]
        assert first.step in case["accept_steps"]
    else:
        assert diagnosis.suspects == [], [(s.node, s.evidence) for s in diagnosis.suspects[:3]]
        assert diagnosis.verdict in ("noise", "identical")
        if "identical" in name:
            assert diagnosis.verdict == "identical"
        else:
            assert diagnosis.verdict == "noise"
            assert case["dtype_target"] in diagnosis.noise_floor


def test_diagnose_command_writes_the_contract(tmp_path: Path, run_probe) -> None:
    case, target, golden = _case("s10_convgn_gn_eps_u1_bf16")
    result = run_probe("diagnose", "-tp", target, "-gp", golden, "-o", tmp_path / "out")
    assert result.code == 0, result.err
    files = list((tmp_path / "out").glob("diagnosis_*.json"))
    assert len(files) == 1 and re.fullmatch(r"diagnosis_\d{14}\.json", files[0].name)
    doc = json.loads(files[0].read_text())
    assert doc["verdict"] == "divergent"
    first = doc["suspects"][0]
    assert set(first) >= {"node", "rank", "step", "kind", "score", "evidence"}
    assert first["node"] in case["accept"] and not first["node"].endswith((".input", ".output"))
    assert first["evidence"]
    assert "bfloat16" in doc["noise_floor"] and doc["noise_floor"]["bfloat16"]["unit_roundoff"] == 2 ** -8
    (line,) = doc["series"]
    assert line["label"] == "step0/rank0" and line["rank"] == 0 and line["step"] == 0
    points = line["points"]
    assert [p["order"] for p in points] == sorted(p["order"] for p in points)
    marked = [p for p in points if p["suspect"] == 1]
    assert [p["node"] for p in marked] == [first["node"]]
    assert all(set(p) >= {"node", "order", "error", "floor", "module", "direction", "suspect"} for p in points)
    assert {p["direction"] for p in points} == {"forward", "backward"}
    assert any(p["module"].startswith("Module.units.1") for p in points)
    assert f"1. {first['node']}" in result.out


def test_compare_writes_the_same_diagnosis(tmp_path: Path, run_probe) -> None:
    _, target, golden = _case("s09_convgn_div_channel_scale_fp32")
    result = run_probe("compare", "-tp", target, "-gp", golden, "-o", tmp_path)
    assert result.code == 0, result.err
    (path,) = tmp_path.glob("diagnosis_*.json")
    doc = json.loads(path.read_text())
    assert doc["suspects"][0]["node"] == "Tensor.__truediv__.0.forward"
    assert doc["suspects"][0]["kind"] == "nan_source"
    assert list(tmp_path.glob("compare_result_*.csv"))


def test_one_answer_console_da_advisor_api(tmp_path: Path, run_probe) -> None:
    """The console, -da's file, the advisor's text and the Python API name the same first suspect."""
    case, target, golden = _case("s12_convgn_dropout2d_u0_bf16")
    result = run_probe("compare", "-tp", target, "-gp", golden, "-o", tmp_path, "-da")
    assert result.code == 0, result.err
    api = probe.diagnose(target, golden).suspects[0].node
    assert api in case["accept"]
    console = re.search(r"^\s+1\. (\S+)", result.out, re.M).group(1)
    (da_file,) = tmp_path.glob("diff_analyze_*.json")
    da = json.loads(da_file.read_text())
    assert list(da) == ["rank_0"] and set(da["rank_0"][0]) == {"op_name", "data_info", "stack_info"}
    (advisor_file,) = tmp_path.glob("advisor_*.txt")
    advisor = re.search(r"^Suspect node: (\S+)", advisor_file.read_text(), re.M).group(1)
    (diag_file,) = tmp_path.glob("diagnosis_*.json")
    in_file = json.loads(diag_file.read_text())["suspects"][0]["node"]
    assert console == da["rank_0"][0]["op_name"] == advisor == api == in_file
    assert re.search(r"first error: \S+ .*msProbe", result.out), "the first-error line stays, labelled"


def test_clean_pair_raises_no_alarm_in_da_or_advisor(tmp_path: Path, run_probe) -> None:
    _, target, golden = _case("s50_clean_llama_bf16")
    result = run_probe("compare", "-tp", target, "-gp", golden, "-o", tmp_path, "-da")
    assert result.code == 0, result.err
    assert "diagnosis: noise" in result.out
    assert not list(tmp_path.glob("diff_analyze_*.json"))
    (advisor_file,) = tmp_path.glob("advisor_*.txt")
    text = advisor_file.read_text()
    assert "Suspect node" not in text and "Diagnosis: noise" in text


def test_multi_step_root_ranks_across_steps(tmp_path: Path) -> None:
    case, target, golden = _case("s11_convgn_lr_step1_u2_fp32")
    assert target.name == "target"  # a dump root with step0/ and step1/
    diagnosis = probe.diagnose(target, golden, tmp_path)
    assert [line["label"] for line in diagnosis.series] == ["step0/rank0", "step1/rank0"]
    first = diagnosis.suspects[0]
    assert first.step == 1 and first.node in case["accept"]
    assert diagnosis.path is not None and diagnosis.path.parent == tmp_path


def test_several_ranks_give_one_ranking(tmp_path: Path) -> None:
    """rank 0 is a clean float16 run, rank 1 has the fault: one file, the suspect on rank 1."""
    clean, fault = CASES / "s51_clean_convgn_fp16", CASES / "s10_convgn_gn_eps_u1_bf16"
    for side in ("target", "golden"):
        shutil.copytree(clean / side / "step0" / "rank0", tmp_path / side / "step0" / "rank0")
        shutil.copytree(fault / side / "step0" / "rank0", tmp_path / side / "step0" / "rank1")
    diagnosis = probe.diagnose(tmp_path / "target" / "step0", tmp_path / "golden" / "step0", tmp_path / "out")
    assert len(list((tmp_path / "out").glob("diagnosis_*.json"))) == 1
    assert sorted(line["rank"] for line in diagnosis.series) == [0, 1]
    assert diagnosis.suspects[0].rank == 1
    assert {s.rank for s in diagnosis.suspects} == {1}


def test_diagnose_bad_input_is_one_line(tmp_path: Path, run_probe) -> None:
    (tmp_path / "t.json").write_text("{not json")
    _, _, golden = _case("s10_convgn_gn_eps_u1_bf16")
    result = run_probe("diagnose", "-tp", tmp_path / "t.json", "-gp", golden / "rank0" / "dump.json", "-o", tmp_path)
    assert result.code == 2
    assert result.err.count("\n") == 1 and "t.json" in result.err
    assert not list(tmp_path.glob("diagnosis_*.json"))


# ------------------------------------------------------------------ units


def test_stats_deviation_is_scale_aware_and_sees_nan() -> None:
    dev, t_bad, g_bad = stats_deviation((1.01, -1.0, 0.0001, 10.0), (1.0, -1.0, 0.0, 10.0))
    assert dev == pytest.approx(0.01, rel=0.02) and not t_bad and not g_bad  # mean near 0 is judged against the range
    assert stats_deviation((math.inf, 0.0, 1.0, 2.0), (3.0, 0.0, 1.0, 2.0))[:2] == (math.inf, True)
    # a -inf mask present on both sides says nothing; the finite statistics are still compared
    assert stats_deviation((2.0, -math.inf, -math.inf, math.inf), (2.0, -math.inf, -math.inf, math.inf))[0] == 0.0
    assert stats_deviation((2.2, -math.inf, -math.inf, math.inf), (2.0, -math.inf, -math.inf, math.inf))[0] > 0.05
    assert stats_deviation(("3", "1", "2", "4"), (3.0, 1.0, 2.0, 4.0))[0] == 0.0


def test_floor_units_and_kind_gains() -> None:
    assert unit_roundoff("bfloat16") == 2 ** -8 and unit_roundoff("float16") == 2 ** -11
    assert unit_roundoff("unknown") == 2 ** -24
    samples = [("linear:f", 0.01, 0.01, "bfloat16", 24)] * 5 + [("linear:f", 0.01, 5.0, "bfloat16", 24)]
    gains = kind_gains(samples)
    assert 0.9 < gains["linear:f"] < 2  # one faulty call does not move the kind's gain
    assert kind_gains([("x:f", 0.0, 0.0, "float32", 1)])["x:f"] > 1  # too few calls: the default
    # a long float32 reduction may differ by more than the roundoff of its result
    assert local_floor("float32", 4096) > 100 * local_floor("float32", 1)
    assert local_floor("bfloat16", 4096) < 1.01 * local_floor("bfloat16", 1)


def _split_forward_of(entry: str) -> str | None:
    parts = entry.split(".")
    for i in (len(parts) - 1, len(parts) - 2):
        if i >= 0 and parts[i] == "backward":
            return ".".join(parts[:i] + ["forward"] + parts[i + 1:])
    return None


@settings(max_examples=1000, deadline=None)
@given(parts=st.lists(st.sampled_from(["backward", "forward", "Module", "0", "", "xbackward", "backwardx"]), max_size=5))
def test_forward_of_is_the_name_part_rule(parts: list[str]) -> None:
    entry = ".".join(parts)
    assert forward_of(entry) == _split_forward_of(entry)


def test_forward_of_and_ranking_order() -> None:
    assert forward_of("Functional.linear.3.backward") == "Functional.linear.3.forward"
    assert forward_of("Module.a.Linear.backward.0") == "Module.a.Linear.forward.0"
    assert forward_of("Functional.linear.3.forward") is None

    def s(node: str, step: int, direction: str, kind: str, score: float, order: int) -> Suspect:
        return Suspect(node, 0, step, kind, score, "", direction, order)

    ranked = sorted([
        s("late_step", 1, "forward", "nan_source", 1e6, 0),
        s("backward", 0, "backward", "nan_source", 1e6, 5),
        s("small", 0, "forward", "introduced", 5.0, 1),
        s("big", 0, "forward", "introduced", 500.0, 9),
        s("param", 0, "forward", "parameter", 5.0, 20),
        s("unmatched", 0, "forward", "structure", 1.0, 0),
    ], key=sort_key)
    assert [x.node for x in ranked] == ["small", "big", "param", "unmatched", "backward", "late_step"]


def test_step_of_reads_the_step_folder() -> None:
    assert step_of(Path("/x/step3/rank0/dump.json")) == 3
    assert step_of(Path("/x/dump.json")) == 0


def _node(entry: str, order: int, **kw) -> NodeFacts:
    kind = "module" if entry.startswith("Module.") else "api"
    return NodeFacts(entry=entry, order=order, kind=kind, op=op_of(entry, kind), dtype="bfloat16", **kw)


def test_introduced_inherited_and_enclosing_module() -> None:
    u = 2 ** -8
    nodes = [
        _node("Functional.linear.0.forward", 0, in_dev=u, out_dev=u, module="Module.a.Linear.forward.0"),
        _node("Module.a.Linear.forward.0", 1, in_dev=u, out_dev=u),
        _node("Functional.linear.1.forward", 2, in_dev=u, out_dev=2 * u, module="Module.b.Block.forward.0"),
        _node("Functional.gelu.0.forward", 3, in_dev=2 * u, out_dev=0.5, module="Module.b.Block.forward.0"),
        _node("Functional.linear.2.forward", 4, in_dev=0.5, out_dev=0.6, module="Module.b.Block.forward.0"),
        _node("Module.b.Block.forward.0", 5, in_dev=u, out_dev=0.6),
    ]
    diagnosis = diagnose_facts([RankFacts(rank=0, step=0, label="rank0", nodes=nodes)])
    assert diagnosis.verdict == "divergent"
    # gelu introduced it; linear.2 only carries it; the block contains gelu and is left out
    assert [(s.node, s.kind) for s in diagnosis.suspects] == [("Functional.gelu.0.forward", "introduced")]
    assert diagnosis.noise_floor["bfloat16"]["unit_roundoff"] == u


def test_nan_sources_and_nan_from_outside() -> None:
    nodes = [
        _node("Torch.exp.0.forward", 0, in_dev=0.001, out_dev=math.inf, nan_out=True),
        _node("Tensor.__mul__.0.forward", 1, in_dev=math.inf, out_dev=math.inf, nan_in=True, nan_out=True),
    ]
    diagnosis = diagnose_facts([RankFacts(rank=0, step=0, label="rank0", nodes=nodes)])
    assert [(s.node, s.kind) for s in diagnosis.suspects] == [("Torch.exp.0.forward", "nan_source")]
    # NaN in an input that no earlier call produced: a parameter, buffer or data
    nodes = [_node("Tensor.__truediv__.0.forward", 0, in_dev=math.inf, out_dev=math.inf, nan_in=True,
                   nan_out=True, worst_in="Tensor.__truediv__.0.forward.input.1")]
    diagnosis = diagnose_facts([RankFacts(rank=0, step=0, label="rank0", nodes=nodes)])
    assert [(s.kind, s.node) for s in diagnosis.suspects] == [("parameter", "Tensor.__truediv__.0.forward")]
    assert "input.1" in diagnosis.suspects[0].evidence
    doc = json.loads(json.dumps(diagnosis.to_dict(), allow_nan=False))  # strict JSON: inf became null
    assert doc["series"][0]["points"][0]["error"] is None



def test_written_file_is_strict_json_of_the_document(tmp_path: Path) -> None:
    nodes = [_node("Torch.exp.0.forward", 0, in_dev=0.001, out_dev=math.inf, nan_out=True)]
    diagnosis = diagnose_facts([RankFacts(rank=0, step=0, label="rank0", nodes=nodes)])
    diagnosis.noise_floor["float16"] = {"calls": 1, "max_error_within_floor": math.nan, "why": "\u00e9 <b>"}
    path = diagnosis.write(tmp_path, "20260101000000")
    assert path.name == "diagnosis_20260101000000.json" and diagnosis.path == path
    text = path.read_text(encoding="utf-8")

    def reject(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    doc = json.loads(text, parse_constant=reject)  # no NaN/Infinity tokens: they were written as null
    assert doc["noise_floor"]["float16"] == {"calls": 1, "max_error_within_floor": None, "why": "\u00e9 <b>"}
    assert doc["suspects"][0]["node"] == "Torch.exp.0.forward" and doc["series"][0]["points"][0]["error"] is None
    expected = json.loads(json.dumps(diagnosis.to_dict()), parse_constant=lambda _: None)
    assert doc == expected and text.endswith("}\n")
    # never replaces a file: a second write with the same stamp claims another name
    assert diagnosis.write(tmp_path, "20260101000000") != path

def test_noise_within_the_floor_is_not_a_suspect() -> None:
    u = 2 ** -11
    nodes = [_node(f"Functional.linear.{i}.forward", i, in_dev=3 * u * i, out_dev=3 * u * (i + 1)) for i in range(8)]
    for node in nodes:
        node.dtype, node.exact = "float16", False
    diagnosis = diagnose_facts([RankFacts(rank=0, step=0, label="rank0", nodes=nodes)])
    assert diagnosis.verdict == "noise" and diagnosis.suspects == []


def test_dtype_and_device_arguments_are_not_faults() -> None:
    assert benign_argument("torch.bfloat16", "torch.float32")
    assert benign_argument("npu:0", "cuda:0")
    assert not benign_argument("1.0", "0.5")
    assert not benign_argument(1.0, 0.5)
    assert not benign_argument("torch.int64", "torch.float32")


def test_md5_dump_names_the_perturbed_layer() -> None:
    """md5 dumps carry checksums only: a call whose inputs match and whose output does not is the source."""
    case = DATA / "pytorch" / "md5_mix_tfm"  # only fc2's weight differs
    diagnosis = probe.diagnose(case / "target" / "step0", case / "golden" / "step0")
    first = diagnosis.suspects[0]
    assert diagnosis.verdict == "divergent"
    assert (first.node, first.kind) == ("Functional.linear.1.forward", "parameter")


class _Handle:
    """A file that takes ``room`` writes, then fails as a full disk does."""

    def __init__(self, room: int) -> None:
        self.room, self.pieces = room, []

    def write(self, piece: bytes) -> int:
        if len(self.pieces) == self.room:
            raise OSError(28, "No space left on device")
        self.pieces.append(piece)
        return len(piece)


def test_diagnosis_written_behind_in_order_and_a_write_error_raised_here() -> None:
    diagnosis = Diagnosis(verdict="noise", series=[{"rank": 0, "points": [{"node": str(i)} for i in range(50)]}])
    handle = _Handle(room=10 ** 6)
    _write_behind(handle, diagnosis.json_pieces(batch=3))
    assert b"".join(handle.pieces) == b"".join(diagnosis.json_pieces(batch=3))
    made = []

    def pieces():
        for number in range(10 ** 4):
            made.append(number)
            yield b"x"

    with pytest.raises(OSError, match="No space"):
        _write_behind(_Handle(room=5), pieces())
    assert len(made) < 100  # the pieces stop soon after the failed write


def test_diagnosis_written_behind_stops_when_making_a_piece_fails() -> None:
    def pieces():
        yield b"a"
        raise ValueError("bad piece")

    handle = _Handle(room=10)
    with pytest.raises(ValueError, match="bad piece"):
        _write_behind(handle, pieces())
    assert handle.pieces == [b"a"]
