"""msProbe's MindSpore reports with its documented cross-framework mistakes corrected.

msProbe flags every matched MindSpore-vs-PyTorch row ``error`` because ``Float32`` is not
the string ``torch.float32`` and because MindSpore tensors have no requires_grad. probe
does not (docs/differences.md). To compare our reports with msProbe's on everything else,
the expected report is rewritten: those two messages are removed from rows where they are
wrong, ``Requires_grad Consistent`` becomes ``True`` when one side has no value, and
``Result`` is recomputed from the remaining rule messages.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from parity import read_report

from probe.formats.msprobe.dtypes import canonical_dtype

MSG_DTYPE = "error: The dtype of NPU and Bench are inconsistent."
MSG_REQUIRES_GRAD = "error: The Required_Grad of NPU and Bench are inconsistent"


def corrected_expected(expected: Path, out: Path) -> Path:
    """Write the corrected copy of ``expected`` (always as CSV) to ``out`` and return it."""
    header, rows = read_report(expected)
    for row in rows:
        if row["Bench Name"] == "N/A" or "Err_message" not in row:
            continue
        messages = json.loads(row["Err_message"]) if row["Err_message"] else []
        rg = (row["NPU Requires_grad"], row["Bench Requires_grad"])
        if "N/A" in rg:
            row["Requires_grad Consistent"] = "True"
            messages = [m for m in messages if m != MSG_REQUIRES_GRAD]
        if canonical_dtype(row["NPU Dtype"]) == canonical_dtype(row["Bench Dtype"]):
            messages = [m for m in messages if m != MSG_DTYPE]
        row["Err_message"] = json.dumps(messages)
        if any(m.startswith("error:") for m in messages):
            row["Result"] = "error"
        elif any(m.startswith("warning:") for m in messages):
            row["Result"] = "warning"
        else:
            row["Result"] = "pass"
    with open(out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows([row[h] for h in header] for row in rows)
    return out
