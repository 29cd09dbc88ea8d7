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
    target_file = next((CNN / "target/step0").iterdir()) / "dump.json"
    assert _marks(target_file, golden_file)[f"{name}.output.0"][0] == "red"

    def drop_inputs(data):
        data[name]["input_args"] = []
        data[name]["input_kwargs"] = {}

    target = _edited(tmp_path, CNN, "target", drop_inputs)
    golden = _edited(tmp_path, CNN, "golden", drop_inputs)
    assert _marks(target, golden)[f"{name}.output.0"][0] is None
