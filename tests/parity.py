"""Compare a probe report with msProbe's report of the same dumps.

Rules (documented in docs/differences.md):
- the expected columns are the first columns of ours, in the same order (ours may append
  columns such as ``Accuracy Reached or Not``);
- same rows, same order, same names; every cell equal, numbers to 1e-6 relative
  (``"25.5%"`` compared as 25.5), except:
  - ``Err_message``: ours keeps the explanatory notes msProbe drops, so only the rule
    messages (``error: ...`` / ``warning: ...``) are compared, per entry;
  - ``Result``: rows without a golden counterpart are ``N/A`` in ours; cross-row rule hits
    (msProbe puts them on the first output row of an entry) sit on the offending output row
    in ours, so those are compared per entry as the worst verdict;
  - ``NPU_Stack_Info`` is compared as text.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

CROSS_ROW_MESSAGES = (
    "warning: The norm relative error of output is 10 times that of input.",
    "error: The input/parameters of One Thousandth Err Ratio",
    "warning: The input/parameters of Cosine > 0.9",
)
VERDICT_RANK = {"pass": 0, "N/A": 0, "warning": 1, "error": 2}


def read_report(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Header and rows (as dicts of text) of a CSV or xlsx report."""
    if path.suffix == ".csv":
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader)
            return header, [dict(zip(header, row)) for row in reader]
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True)
    rows: list[dict[str, Any]] = []
    header: list[str] = []
    for sheet in book.worksheets:
        it = sheet.iter_rows(values_only=True)
        header = [str(c) for c in next(it)]
        rows.extend({h: ("" if v is None else str(v)) for h, v in zip(header, r)} for r in it)
    return header, rows


def _number(text: str) -> float | None:
    text = text.strip()
    if text.endswith("%"):
        text = text[:-1]
    try:
        value = float(text)
    except ValueError:
        return None
    return value


def cells_equal(ours: str, expected: str) -> bool:
    """Text equality, or numeric equality to 1e-6 relative (``%`` stripped)."""
    if ours == expected:
        return True
    a, b = _number(ours), _number(expected)
    if a is None or b is None:
        return False
    if math.isnan(a) and math.isnan(b):
        return True
    if ours.strip().endswith("%") != expected.strip().endswith("%"):
        return False
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def entry_of(name: str) -> str:
    """The entry part of a row name (up to and including forward/backward[.N] or parameters_grad[.N])."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part in ("forward", "backward", "parameters_grad", "debug"):
            if i + 1 < len(parts) and parts[i + 1].isdigit() and not parts[i - 1].isdigit():
                return ".".join(parts[: i + 2])
            return ".".join(parts[: i + 1])
    return name


def _rule_messages(cell: str) -> list[str]:
    try:
        messages = json.loads(cell) if cell else []
    except json.JSONDecodeError:
        return [cell]
    return [m for m in messages if m.startswith(("error:", "warning:"))]


def _normalise_message(message: str) -> str:
    # our 1-per-mille message states the threshold the rule really uses
    return message.replace("while the output < 0.1.", "while the output < 0.6.")


def compare_reports(
    ours_path: Path, expected_path: Path, corrected: Callable[[str], bool] | None = None
) -> list[str]:
    """Every difference between the two reports, one line each (empty when they agree).

    ``corrected(npu_name)`` marks rows where msProbe is wrong on purpose-documented grounds
    (docs/differences.md); they are skipped here and the caller asserts the right values.
    """
    ours_header, ours = read_report(ours_path)
    exp_header, expected = read_report(expected_path)
    problems: list[str] = []
    if ours_header[: len(exp_header)] != exp_header:
        return [f"columns differ: ours {ours_header} vs expected {exp_header}"]
    if [r["NPU Name"] for r in ours] != [r["NPU Name"] for r in expected]:
        ours_names = [r["NPU Name"] for r in ours]
        exp_names = [r["NPU Name"] for r in expected]
        for i, (a, b) in enumerate(zip(ours_names, exp_names)):
            if a != b:
                return [f"row {i}: name {a!r} vs expected {b!r} ({len(ours_names)} vs {len(exp_names)} rows)"]
        return [f"row count {len(ours_names)} vs expected {len(exp_names)}"]
    per_entry_ours: dict[str, list[str]] = defaultdict(list)
    per_entry_exp: dict[str, list[str]] = defaultdict(list)
    worst_ours: dict[str, int] = defaultdict(int)
    worst_exp: dict[str, int] = defaultdict(int)
    for index, (o, e) in enumerate(zip(ours, expected)):
        name = e["NPU Name"]
        if corrected is not None and corrected(name):
            continue
        entry = entry_of(name)
        unmatched = o["Bench Name"] == "N/A"
        for column in exp_header:
            if column in ("Err_message", "Result"):
                continue
            if not cells_equal(o[column], e[column]):
                problems.append(f"row {index} {name} column {column!r}: {o[column]!r} vs expected {e[column]!r}")
        exp_messages = [_normalise_message(m) for m in _rule_messages(e["Err_message"])]
        our_messages = [_normalise_message(m) for m in _rule_messages(o["Err_message"])]
        per_entry_exp[entry].extend(exp_messages)
        per_entry_ours[entry].extend(our_messages)
        cross_exp = any(m.startswith(CROSS_ROW_MESSAGES) for m in exp_messages)
        cross_ours = any(m.startswith(CROSS_ROW_MESSAGES) for m in our_messages)
        if unmatched:
            if o["Result"] != "N/A":
                problems.append(f"row {index} {name}: unmatched row has Result {o['Result']!r}, expected 'N/A'")
            continue
        worst_exp[entry] = max(worst_exp[entry], VERDICT_RANK.get(e["Result"], 0))
        worst_ours[entry] = max(worst_ours[entry], VERDICT_RANK.get(o["Result"], 0))
        if not (cross_exp or cross_ours) and o["Result"] != e["Result"]:
            problems.append(f"row {index} {name}: Result {o['Result']!r} vs expected {e['Result']!r}")
    for entry in per_entry_exp:
        if sorted(per_entry_exp[entry]) != sorted(per_entry_ours[entry]):
            problems.append(f"entry {entry}: messages {per_entry_ours[entry]} vs expected {per_entry_exp[entry]}")
        if worst_exp[entry] != worst_ours[entry]:
            problems.append(f"entry {entry}: worst Result differs")
    return problems
