"""The advisor: first failing row, the node where the difference starts, and why."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from probe.analysis.advisor import (
    DTYPE, INHERITED, INTRODUCED, NAN_SOURCE, UNMATCHED_STRUCTURE, advise, advisor_text,
)
from probe.cli import main
from probe.pipeline import compare

PT = Path(__file__).parent / "data" / "pytorch"
GOLDEN = (1.0, -1.0, 0.1, 2.0)


def _tensor(scale: float) -> dict:
    mx, mn, mean, norm = (v * scale for v in GOLDEN)
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": mx, "Min": mn,
            "Mean": mean, "Norm": norm, "requires_grad": False}


def _chain_dump(path: Path, scales: list[float]) -> Path:
    """A chain of ops: op i reads the output of op i-1; ``scales[i]`` is op i's output scale."""
    data = {}
    previous = 1.0
    for i, scale in enumerate(scales):
        data[f"Functional.op{i}.0.forward"] = {"input_args": [_tensor(previous)], "output": [_tensor(scale)]}
        previous = scale
    path.mkdir(parents=True)
    (path / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                                "dump_data_dir": None, "data": data}))
    return path / "dump.json"


def _pair(tmp_path: Path, scales: list[float]):
    target = _chain_dump(tmp_path / "t", scales)
    golden = _chain_dump(tmp_path / "g", [1.0] * len(scales))
    return compare(target, golden)


def test_error_introduced_mid_network_and_inherited_downstream(tmp_path: Path) -> None:
    # op1 introduces 5% (below every rule), op2 carries it, op3 is where a rule fires (60%).
    run = _pair(tmp_path, [1.0, 1.05, 1.08, 1.6, 1.6])
    advice = advise(run[0])
    assert advice.failing.name == "Functional.op3.0.forward.output.0"
    assert advice.culprit.node.entry == "Functional.op1.0.forward"
    assert advice.cause == INTRODUCED
    assert advice.failing_relation == INHERITED
    text = advisor_text([advice])
    assert "Suspect node: Functional.op1.0.forward" in text
    assert "introduced here" in text and "inherited from input" in text


def test_big_error_points_at_the_introducing_node_not_downstream(tmp_path: Path) -> None:
    run = _pair(tmp_path, [1.0, 1.0, 2.0, 2.0, 2.1])
    advice = advise(run[0])
    assert advice.failing.pair.target.entry == "Functional.op2.0.forward"
    assert advice.culprit.node.entry == "Functional.op2.0.forward"
    assert advice.cause == INTRODUCED
    assert advice.failing_relation == INTRODUCED


def test_inputs_already_differ_at_the_first_node(tmp_path: Path) -> None:
    # the weight input of fc1 differs: nothing dumped before produced it
    case = PT / "diff_analyze_tfm"
    run = compare(case / "target/step0", case / "golden/step0")
    advice = advise(run[0])
    assert advice.failing is not None
    assert advice.culprit.node.entry == "Functional.linear.0.forward"
    assert advice.cause == INHERITED
    assert advice.culprit.worst_in.name == "Functional.linear.0.forward.input.1"


def _first_msprobe_row(case: str, keep) -> dict:
    report = sorted((PT / case / "expected").glob("csv/compare_result_*.csv"))[0]
    with open(report, newline="", encoding="utf-8") as handle:
        return next(row for row in csv.DictReader(handle) if keep(row))


@pytest.mark.parametrize("case, cause, keep", [
    ("nan_inf_cnn", NAN_SOURCE, lambda r: "nan/inf" in r["Err_message"]),
    ("dtype_bf16_tfm", DTYPE, lambda r: "dtype" in r["Err_message"]),
    ("structure_extra_layer_cnn", UNMATCHED_STRUCTURE, lambda r: r["Bench Name"] == "N/A"),
])
def test_causes_on_real_dumps(case: str, cause: str, keep) -> None:
    row = _first_msprobe_row(case, keep)
    run = compare(PT / case / "target/step0", PT / case / "golden/step0")
    advice = advise(run[0])
    assert advice.cause == cause
    assert row["NPU Name"].startswith(advice.culprit.node.entry + ".")


def test_all_pass(tmp_path: Path) -> None:
    run = _pair(tmp_path, [1.0, 1.0])
    advice = advise(run[0])
    assert advice.ok
    assert "meets the precision rules" in advisor_text([advice])


def test_cli_writes_advisor_and_compare_only_skips_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    case = PT / "nan_inf_cnn"
    args = ["compare", "-tp", str(case / "target/step0"), "-gp", str(case / "golden/step0")]
    assert main(args + ["-o", str(tmp_path / "a")]) == 0
    files = list((tmp_path / "a").glob("advisor_*.txt"))
    assert len(files) == 1
    assert "Suspect node: Torch.div.0.forward" in files[0].read_text()
    assert "advisor" in capsys.readouterr().out
    assert main(args + ["-o", str(tmp_path / "b"), "-c"]) == 0
    assert not list((tmp_path / "b").glob("advisor_*.txt"))
    assert "Suspect node" not in capsys.readouterr().out
