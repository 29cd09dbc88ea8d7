"""End-to-end TorchAir compares (GE vs FX, GE vs fusion-off GE) checked with plain numpy."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import torchair_ge_writer as w  # noqa: E402

from probe.pipeline import compare  # noqa: E402

GRAPH = [
    {"name": "Add_2", "type": "Add", "inputs": ["arg0_1:0", "arg1_1:0"], "fx": ["add-aten.add.Tensor.OUTPUT.0"]},
    {"name": "Mul_3", "type": "Mul", "inputs": ["Add_2:0", "arg2_1:0"], "fx": ["mul-aten.mul.Tensor.OUTPUT.0"]},
    {"name": "Relu_4", "type": "Relu", "inputs": ["Mul_3:0", "Mul_3:-1"], "fx": ["relu-aten.relu.default.OUTPUT.0"]},
]
TS = 1706596912161941


def token_data(token: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(token)
    a, b, c = (rng.standard_normal(12).astype(np.float32) for _ in range(3))
    add = a + b
    mul = add * c
    return {"a": a, "b": b, "c": c, "add": add, "mul": mul, "relu": np.maximum(mul, 0)}


def noisy(x: np.ndarray, scale: float) -> np.ndarray:
    return (x * (1 + scale) + np.float32(scale)).astype(np.float32)


def write_ge_token(directory: Path, d: dict[str, np.ndarray], fused: bool) -> None:
    """Target = fused GE (noisy); fused=False writes the exact fusion-off dump."""
    s = 0.02 if fused else 0.0
    w.write_ge(directory, "Add", "Add_2", [d["a"], d["b"]], [noisy(d["add"], s)], ts=TS)
    if fused:
        w.write_ge(directory, "AutomaticBufferFusionOp", "Mul_3Relu_4", [noisy(d["add"], s), d["c"]],
                   [noisy(d["relu"], s)], ts=TS + 1)
    else:
        w.write_ge(directory, "Mul", "Mul_3", [d["add"], d["c"]], [d["mul"]], ts=TS + 1)
        w.write_ge(directory, "Relu", "Relu_4", [d["mul"]], [d["relu"]], ts=TS + 2)
    w.write_ge(directory, "Cast", "Cast_9", [d["relu"]], [d["relu"].astype(np.float16)], ts=TS + 3)


def write_fx_token(directory: Path, d: dict[str, np.ndarray]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "add-aten.add.Tensor": ([d["a"], d["b"]], [d["add"]]),
        "mul-aten.mul.Tensor": ([d["add"], d["c"]], [d["mul"]]),
        "relu-aten.relu.default": ([d["mul"]], [d["relu"]]),
    }
    for key, (ins, outs) in files.items():
        for kind, arrays in (("INPUT", ins), ("OUTPUT", outs)):
            for i, x in enumerate(arrays):
                np.save(directory / f"{key}.{kind}.{i}.20240125031118787351.npy", x)


def make_ge(root: Path, fused: bool, tokens=(0, 1), rank: int | None = None) -> Path:
    base = root if rank is None else root / f"worldsize2_global_rank{rank}"
    name = f"dynamo_original_graph_1_rank_{rank or 0}_pid_1_ts_2.txt"
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(w.graph_text(GRAPH))
    for t in tokens:
        write_ge_token(base / "20240125031118" / "0" / "ge_default_1" / "1" / str(t), token_data(t), fused)
    return root


def make_fx_new(root: Path, tokens=(0, 1), rank: int = 0) -> Path:
    for t in tokens:
        write_fx_token(root / f"worldsize2_global_rank{rank}" / "model" / str(t), token_data(t))
    return root


def make_fx_old(root: Path, tokens=(0, 1)) -> Path:
    for t in tokens:
        write_fx_token(root / "data_dump" / str(t + 1) / "gm_20240125031118_dump", token_data(t))
    return root


def read_report(out: Path, pattern: str = "msprobe_cmp_report*.csv") -> list[dict[str, str]]:
    files = sorted(out.glob(pattern))
    assert len(files) == 1, files
    with open(files[0], newline="") as handle:
        return list(csv.DictReader(handle))


def expected(g: np.ndarray, m: np.ndarray) -> dict[str, float]:
    """Independent numpy computation of the TorchAir metric definitions."""
    g = g.astype(np.float64).ravel()
    m = m.astype(np.float64).ravel()
    eps = np.finfo(np.float32).eps
    keep = np.abs(g) > eps
    rel = np.zeros_like(g)
    rel[keep] = np.abs(m[keep] / g[keep] - 1)
    ab = np.zeros_like(g)
    ab[keep] = np.abs(m[keep] - g[keep])
    p = np.exp(g - g.max()) / np.exp(g - g.max()).sum()
    q = np.exp(m - m.max()) / np.exp(m - m.max()).sum()
    return {
        "cosine_similarity": float(g @ m / np.linalg.norm(g) / np.linalg.norm(m)),
        "max_relative_error": rel.max(), "mean_relative_error": rel.mean(),
        "max_absolute_error": ab.max(), "mean_absolute_error": ab.mean(),
        "kl_divergence": max(0.0, float(np.sum(p * np.log(p / q)))),
        "relative_euclidean_distance": math.sqrt(((m - g) ** 2).sum() / (g**2).sum()),
    }


def check_metrics(row: dict[str, str], g: np.ndarray, m: np.ndarray) -> None:
    for column, value in expected(g, m).items():
        assert float(row[column]) == pytest.approx(value, rel=1e-5, abs=1e-7), column
    good = float(row["cosine_similarity"]) >= 0.99 and float(row["max_relative_error"]) < 0.01
    assert row["Result"] == ("PASS" if good else "FAIL")
    assert row["Accuracy Reached or Not"] == ("Yes" if good else "No")


def test_worked_metric_example():
    from probe_torchair.metrics import tensor_metrics

    got = tensor_metrics(np.array([1, 2, 0, 4.0]), np.array([1.1, 2, 0.5, 4.0]))
    want = (0.9939349202, 0.1, 0.025, 0.1, 0.025, 0.0023771562, 0.1112697)
    assert got == pytest.approx(want, rel=1e-5)  # msProbe computes KL in float32


@pytest.mark.parametrize("fx_layout", ["new", "old"])
def test_ge_vs_fx(tmp_path, fx_layout):
    ge = make_ge(tmp_path / "ge", fused=True)
    fx = make_fx_new(tmp_path / "fx") if fx_layout == "new" else make_fx_old(tmp_path / "fx")
    if fx_layout == "new":  # FX has rank dirs, GE has not: use the FX rank dir itself
        fx = fx / "worldsize2_global_rank0"
    out = tmp_path / "out"
    compare(ge, fx, out, framework="torchair", torchair_layout="26.2")
    rows = read_report(out)
    assert len(rows) == 14  # per token: Add 2 in + 1 out, fused 2 in + 1 out, Cast 1
    assert [r["data_id"] for r in rows] == [str(i) for i in range(14)]
    for token in (0, 1):
        d = token_data(token)
        mine = [r for r in rows if r["token_id"] == str(token)]
        by = {(Path(r["my_data_path"].split(",")[0]).name.split(".")[1], r["my_data_path"].split(",", 1)[1]): r
              for r in mine}
        check_metrics(by[("Add_2", "inputs,0")], d["a"], d["a"])
        check_metrics(by[("Add_2", "outputs,0")], d["add"], noisy(d["add"], 0.02))
        check_metrics(by[("Mul_3Relu_4", "inputs,0")], d["add"], noisy(d["add"], 0.02))
        check_metrics(by[("Mul_3Relu_4", "inputs,1")], d["c"], d["c"])
        check_metrics(by[("Mul_3Relu_4", "outputs,0")], d["relu"], noisy(d["relu"], 0.02))
        cast = by[("Cast_9", "outputs,0")]
        assert cast["golden_data_path"].endswith(",inputs,0")
        check_metrics(cast, d["relu"], d["relu"].astype(np.float16))
        assert by[("Mul_3Relu_4", "outputs,0")]["golden_data_path"].endswith(
            "relu-aten.relu.default.OUTPUT.0.20240125031118787351.npy")


def test_ge_vs_fusion_off_ge(tmp_path):
    ge = make_ge(tmp_path / "ge", fused=True)
    off = make_ge(tmp_path / "off", fused=False)
    out = tmp_path / "out"
    compare(ge, off, out, framework="torchair", torchair_layout="26.2")
    rows = read_report(out)
    assert len(rows) == 16  # Cast_9 is dumped on both sides: its input and output pair directly
    d = token_data(1)
    mine = [r for r in rows if r["token_id"] == "1"]
    fused = [r for r in mine if ".Mul_3Relu_4." in r["my_data_path"]]
    assert [Path(r["golden_data_path"]).name.split(".")[1] + "," + r["golden_data_path"].split(",", 1)[1]
            for r in fused] == ["Mul_3,inputs,0", "Mul_3,inputs,1", "Relu_4,outputs,0"]
    check_metrics(fused[2], d["relu"], noisy(d["relu"], 0.02))
    cast = [r for r in mine if ".Cast_9." in r["my_data_path"]]
    assert len(cast) == 2 and all(r["Result"] == "PASS" for r in cast)


def test_multi_rank_and_rank_option(tmp_path):
    ge = tmp_path / "ge"
    fx = tmp_path / "fx"
    for rank in (0, 1):
        make_ge(ge, fused=True, tokens=(0,), rank=rank)
        make_fx_new(fx, tokens=(0,), rank=rank)
    out = tmp_path / "out"
    compare(ge, fx, out, framework="torchair", torchair_layout="26.2", jobs=2)
    assert len(read_report(out, "msprobe_cmp_report_rank0_*.csv")) == 7
    assert len(read_report(out, "msprobe_cmp_report_rank1_*.csv")) == 7
    out2 = tmp_path / "out2"
    compare(ge, fx, out2, framework="torchair", torchair_layout="26.2", rank="1")
    assert [p.name.split("_")[3] for p in out2.glob("*.csv")] == ["rank1"]


def test_shape_mismatch_is_kept_and_fails(tmp_path):
    ge = make_ge(tmp_path / "ge", fused=True, tokens=(0,))
    fx = make_fx_old(tmp_path / "fx", tokens=(0,))
    path = next((fx / "data_dump" / "1").glob("*/add-aten.add.Tensor.OUTPUT.0.*.npy"))
    np.save(path, np.ones(5, np.float32))
    out = tmp_path / "out"
    compare(ge, fx, out, framework="torchair", torchair_layout="26.2")
    row = [r for r in read_report(out) if r["my_data_path"].endswith(".Add_2.1.2.%d,outputs,0" % TS)][0]
    assert row["cmp_fail_reason"] == "data shape doesn't match."
    assert row["Result"] == "FAIL" and row["cosine_similarity"] == "N/A"


def test_nan_in_target(tmp_path):
    ge = tmp_path / "ge"
    make_ge(ge, fused=True, tokens=(0,))
    d = token_data(0)
    bad = d["add"].copy()
    bad[3] = np.nan
    token_dir = next(ge.rglob("0/Add.Add_2.*")).parent
    w.write_ge(token_dir, "Add", "Add_2", [d["a"], d["b"]], [bad], ts=TS)
    fx = make_fx_old(tmp_path / "fx", tokens=(0,))
    out = tmp_path / "out"
    compare(ge, fx, out, framework="torchair", torchair_layout="26.2")
    row = [r for r in read_report(out) if "Add_2" in r["my_data_path"] and r["my_data_path"].endswith("outputs,0")][0]
    assert row["cmp_fail_reason"] == "my_data includes NAN or inf."
    assert row["Result"] == "FAIL" and row["my_max_value"] == "NaN"


@pytest.mark.parametrize("damage", ["truncate", "huge_header", "bad_dtype"])
def test_bad_ge_file_is_listed_and_exits_2(tmp_path, damage, run_probe):
    ge = make_ge(tmp_path / "ge", fused=True, tokens=(0,))
    path = next(ge.rglob("Add.Add_2.*"))
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[:-10])
    elif damage == "huge_header":
        path.write_bytes((10**6).to_bytes(8, "little") + data[8:])
    else:
        d = token_data(0)
        t = w.Tensor(d["a"].tobytes(), 99, w.ND, [12], [12])
        path.write_bytes(w.ge_bytes("Add_2", [t, w.plain(d["b"])], [w.plain(d["add"])]))
    fx = make_fx_old(tmp_path / "fx", tokens=(0,))
    out = tmp_path / "out"
    run = run_probe("compare", "-m", "torchair", "-tp", ge, "-gp", fx, "-o", out, "--torchair-layout", "26.2")
    assert run.code == 2
    assert str(path.resolve()) in run.err
    rows = read_report(out)
    listed = [r for r in rows if str(path.resolve()) in r["my_data_path"]]
    if damage == "bad_dtype":  # only the tensor with the unknown type is unreadable
        listed = [r for r in listed if r["my_data_path"].endswith(",inputs,0")]
        assert "unknown data type enum 99" in listed[0]["cmp_fail_reason"]
    assert listed and all("unreadable dump file" in r["cmp_fail_reason"] for r in listed)
    assert all(r["Result"] == "N/A" for r in listed)
    assert any(r["Result"] == "PASS" for r in rows)  # the rest was compared


def test_min_max_files_compare_as_statistics(tmp_path):
    ge = make_ge(tmp_path / "ge", fused=True, tokens=(0,))
    fx = make_fx_old(tmp_path / "fx", tokens=(0,))
    d = token_data(0)
    for path in list(ge.rglob("Add.Add_2.*")):
        path.unlink()
        stats = lambda x: [x.min(), x.max(), x.mean()]  # noqa: E731
        np.savez(path.parent / (path.name + "_min_max.npz"),
                 inputs=np.array([stats(d["a"]), stats(d["b"])]),
                 outputs=np.array([stats(noisy(d["add"], 0.02))]))
    for path in list(fx.rglob("add-aten.add.Tensor.OUTPUT.0.*.npy")):
        np.save(path.with_name(path.name[:-4] + "_min_max.npy"), np.array([d["add"].min(), d["add"].max()]))
        path.unlink()
    out = tmp_path / "out"
    compare(ge, fx, out, framework="torchair", torchair_layout="26.2")
    rows = read_report(out)
    assert "max_diff" in rows[0] and "cosine_similarity" not in rows[0]
    row = [r for r in rows if "Add_2" in r["my_data_path"] and r["my_data_path"].endswith("outputs,0")][0]
    g_max, m_max = d["add"].max(), noisy(d["add"], 0.02).max()
    assert float(row["max_diff"]) == pytest.approx(m_max - g_max, rel=1e-6)
    assert float(row["max_relative_diff"]) == pytest.approx(abs(m_max - g_max) / abs(g_max), rel=1e-6)
    assert row["mean_diff"] == "N/A" and row["Result"] == "FAIL"
    same = [r for r in rows if "Add_2" in r["my_data_path"] and r["my_data_path"].endswith("inputs,0")][0]
    assert same["Result"] == "PASS" and float(same["max_diff"]) == 0.0


def test_md5_mode(tmp_path):
    ge = make_ge(tmp_path / "ge", fused=True, tokens=(0,))
    fx = make_fx_old(tmp_path / "fx", tokens=(0,))
    out = tmp_path / "out"
    compare(ge, fx, out, framework="torchair", torchair_layout="26.2", metric_mode="md5")
    rows = read_report(out)
    import hashlib

    d = token_data(0)
    row = [r for r in rows if "Add_2" in r["my_data_path"] and r["my_data_path"].endswith("inputs,0")][0]
    assert row["golden_md5"] == row["my_md5"] == hashlib.md5(d["a"].tobytes()).hexdigest()
    assert row["Result"] == "PASS"
    out_row = [r for r in rows if "Add_2" in r["my_data_path"] and r["my_data_path"].endswith("outputs,0")][0]
    assert out_row["Result"] == "FAIL"


def test_fx_token_offset_override(tmp_path):
    ge = make_ge(tmp_path / "ge", fused=True, tokens=(1,))
    fx = tmp_path / "fx"
    write_fx_token(fx / "data_dump" / "1" / "gm_1_dump", token_data(1))  # no +1 in this dump
    out = tmp_path / "out"
    compare(ge, fx, out, framework="torchair", torchair_layout="26.2", fx_token_offset=0)
    rows = read_report(out)
    assert len(rows) == 7 and rows[0]["token_id"] == "1"


def test_fx_arguments_sorted_numerically(tmp_path):
    from probe_torchair.fxdump import read_token_dir

    for i in (0, 2, 10):
        np.save(tmp_path / f"cat-aten.cat.default.INPUT.{i}.20240125031118787351.npy", np.zeros(1))
    refs = read_token_dir(tmp_path)["cat-aten.cat.default"].ordered("inputs")
    assert [r.name.index for r in refs] == [0, 2, 10]


DOCUMENTED_TENSOR = ["API Name", "Stack Info", "Data Name", "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
                     "One Thousandth Err Ratio", "Five Thousandths Err Ratio", "Requires_grad Consistent",
                     "Result", "Accuracy Reached or Not", "Err_message"]


def test_documented_report_columns_by_default_in_the_current_directory(tmp_path, run_probe, monkeypatch):
    """Without --torchair-layout the report has the TorchAir documentation's columns; without -o it
    lands in the current directory; -hl colours rows red (FAIL), green (PASS), yellow (not judged)."""
    ge = make_ge(tmp_path / "ge", fused=True)
    fx = make_fx_new(tmp_path / "fx") / "worldsize2_global_rank0"
    work = tmp_path / "work"
    work.mkdir()
    run = run_probe("compare", "-m", "torchair", "-tp", ge, "-gp", fx, "-hl", "--format", "csv,xlsx", cwd=work)
    assert run.code == 0, run.err
    with open(next(work.glob("msprobe_cmp_report_*.csv")), newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == DOCUMENTED_TENSOR + ["Highlight"]
    d = token_data(0)
    add_out = next(r for r in rows if r["API Name"] == "Add_2.output.0" and "',inputs" not in r["Data Name"])
    g, m = d["add"].astype(np.float64).ravel(), noisy(d["add"], 0.02).astype(np.float64).ravel()
    assert float(add_out["EucDist"]) == pytest.approx(float(np.linalg.norm(m - g)), rel=1e-5)
    rel = np.abs(m - g) / np.maximum(np.abs(g), np.finfo(np.float32).eps)
    assert float(add_out["One Thousandth Err Ratio"]) == pytest.approx(float(np.mean(rel < 0.001)), abs=1e-4)
    assert float(add_out["Cosine"]) == pytest.approx(expected(d["add"], noisy(d["add"], 0.02))["cosine_similarity"])
    for row in rows:
        assert row["Highlight"] == {"PASS": "green", "FAIL": "red"}.get(row["Result"], "yellow")
        assert row["Stack Info"] == "N/A" and row["Requires_grad Consistent"] == "True"
    from openpyxl import load_workbook

    sheet = load_workbook(next(work.glob("msprobe_cmp_report_*.xlsx"))).active
    fills = {sheet.cell(row=i + 2, column=1).fill.fgColor.rgb for i, r in enumerate(rows) if r["Result"] == "PASS"}
    assert fills == {"FF92D050"}
    assert not (work / "output").exists()
