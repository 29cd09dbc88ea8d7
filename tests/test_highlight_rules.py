"""-hl follows the documented rules (spec compare-core §8.6) exactly (issue 12, item 4)."""

from __future__ import annotations

import json
import shutil

import probe
from conftest import PYTORCH_CASES

NAN = PYTORCH_CASES / "nan_inf_cnn"
CNN = PYTORCH_CASES / "stat_mix_cnn"


def _edited(tmp_path, case, side, change):
    source = next((case / side / "step0").iterdir())
    copy = tmp_path / side
    shutil.copytree(source, copy)
    doc = json.loads((copy / "dump.json").read_text())
    change(doc["data"])
    (copy / "dump.json").write_text(json.dumps(doc))
    return copy / "dump.json"


def _marks(target, golden):
    result = probe.compare(target, golden, highlight=True)[0]
    return {r.name: (r.extra_value("Highlight"), r.notes) for r in result.records}


def test_unmatched_row_with_nan_is_red(tmp_path):
    golden = _edited(tmp_path, NAN, "golden", lambda data: data.pop("Torch.div.0.forward"))
    marks = _marks(next((NAN / "target/step0").iterdir()) / "dump.json", golden)
    colour, notes = marks["Torch.div.0.forward.output.0"]
    assert colour == "red" and "maximum or minimum is nan, -inf, or inf" in notes


def test_relative_rule_needs_an_input_to_compare_with(tmp_path):
    """Statistics red rule 'maximum relative error exceeds 0.5' is an output-versus-input rule."""
    name = "Tensor.add_.4.forward"
    golden_file = next((CNN / "golden/step0").iterdir()) / "dump.json"

    def wrong_output(data):
        data[name]["output"][0]["Max"] = 0.5  # bench max is -0.01: a 5,000 % error

    target = _edited(tmp_path / "with", CNN, "target", wrong_output)
    assert _marks(target, golden_file)[f"{name}.output.0"][0] == "red"

    def drop_inputs(data):
        data[name]["input_args"] = []
        data[name]["input_kwargs"] = {}

    target = _edited(tmp_path, CNN, "target", lambda data: (wrong_output(data), drop_inputs(data)))
    golden = _edited(tmp_path, CNN, "golden", drop_inputs)
    assert _marks(target, golden)[f"{name}.output.0"][0] is None


CONV = "Functional.conv2d.0.forward"


def _set_stats(entry, field, index, **stats):
    entry[field][index].update(stats)


def test_requires_grad_mismatch_is_yellow(tmp_path):
    target = next((CNN / "target/step0").iterdir()) / "dump.json"
    golden = _edited(tmp_path, CNN, "golden", lambda data: _set_stats(data[CONV], "input_args", 0, requires_grad=True))
    colour, notes = _marks(target, golden)[f"{CONV}.input.0"]
    assert colour == "yellow" and "requires_grad differs between NPU and bench" in notes


def test_relative_error_divides_by_at_least_one_hundredth(tmp_path):
    """A 0.18 % difference of an output whose bench max is small and negative is not red."""
    out = dict(Max=-0.0011, Min=-0.5, Mean=-0.1, Norm=1.0)

    def golden_side(data):
        _set_stats(data[CONV], "output", 0, **out)

    def target_side(data):
        _set_stats(data[CONV], "output", 0, **{**out, "Max": out["Max"] * 1.0018})

    golden = _edited(tmp_path, CNN, "golden", golden_side)
    target = _edited(tmp_path, CNN, "target", target_side)
    colour, _ = _marks(target, golden)[f"{CONV}.output.0"]
    assert colour is None


def test_relative_rule_applies_to_real_data(tmp_path):
    """Tensor mode: one golden element off by 30 % of |bench max| while the inputs agree is yellow."""
    import numpy as np

    case = PYTORCH_CASES.parent / "mindspore" / "ms_pynative_L0_tensor"
    golden = tmp_path / "golden"
    shutil.copytree(next((case / "golden/step0").iterdir()), golden)
    npy = golden / "dump_tensor_data" / "Cell.conv.Conv2d.forward.0.output.0.npy"
    array = np.load(npy)
    flat = array.reshape(-1)
    flat[np.argmin(flat)] += 0.3 * max(0.01, abs(float(flat.max())))
    np.save(npy, array)
    result = probe.compare(next((case / "target/step0").iterdir()), golden, highlight=True)[0]
    row = next(r for r in result.records if r.name == "Cell.conv.Conv2d.forward.0.output.0")
    assert row.extra_value("Highlight") == "yellow"
    assert "The output's maximum relative error exceeds 0.1, while the input/parameters's is below 0.01" in row.notes
