"""TorchAir reports keep their bytes: CSV digests of generated GE/FX compares (26.2 layout).

The digests were taken from the reports of the TorchAir engine before it ran through the
stages (``TorchairJob``), with the input directory written as ``<tmp>``. A change of output
must be intended: then update the digest here and say why in the commit.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import test_torchair_compare as t  # noqa: E402

from probe.pipeline import compare  # noqa: E402

DIGESTS = {
    "fx_new": {"msprobe_cmp_report.csv": "4707e7349a476e767dc22e52969bd1053a5c2eb7ba2f77460a6cb36f03b7f1e8"},
    "fx_old": {"msprobe_cmp_report.csv": "0bf0a224b79ce0005798964ac2d3cd180424d558f008689334721766e2bc614e"},
    "off": {"msprobe_cmp_report.csv": "5b4beb42866b9177961cbb3ad0afd27a31e211fde1762202956a0e25cff2bc39"},
    "md5": {"msprobe_cmp_report.csv": "0ff505d641961a1b8d80db5049fb4962c8ac58411d3104a9c0633f2679dc4da6"},
    "multirank": {
        "msprobe_cmp_report_rank0.csv": "5b2ae6afe30288a96562506d6b3071ca35d9810d945b6287aaa9df496a8b17ea",
        "msprobe_cmp_report_rank1.csv": "397601f6d28a28a55844e36b0517945cdd6f3470297dea102a65d4251f8dfd1f",
    },
}


def _run(case: str, root: Path) -> Path:
    out = root / "out" / case
    ge = t.make_ge(root / "ge", fused=True)
    if case == "fx_new":
        compare(ge, t.make_fx_new(root / "fxn") / "worldsize2_global_rank0", out, framework="torchair", torchair_layout="26.2")
    elif case == "fx_old":
        compare(ge, t.make_fx_old(root / "fxo"), out, framework="torchair", torchair_layout="26.2")
    elif case == "off":
        compare(ge, t.make_ge(root / "off", fused=False), out, framework="torchair", torchair_layout="26.2")
    elif case == "md5":
        compare(ge, t.make_fx_old(root / "fxo"), out, framework="torchair", torchair_layout="26.2", metric_mode="md5")
    else:
        for rank in (0, 1):
            t.make_ge(root / "mrge", fused=True, tokens=(0,), rank=rank)
            t.make_fx_new(root / "mrfx", tokens=(0,), rank=rank)
        compare(root / "mrge", root / "mrfx", out, framework="torchair", torchair_layout="26.2")
    return out


@pytest.mark.parametrize("case", sorted(DIGESTS))
def test_torchair_report_bytes(case, tmp_path):
    # the digests were taken with the inputs in a directory called "in"
    root = tmp_path / "in"
    out = _run(case, root)
    got = {}
    for path in sorted(out.glob("*.csv")):
        name = path.name[: path.name.rindex("_")] + ".csv"  # the timestamp goes
        got[name] = hashlib.sha256(path.read_bytes().replace(str(root).encode(), b"<tmp>")).hexdigest()
    assert got == DIGESTS[case]
