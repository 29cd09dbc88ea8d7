"""Every fixture compare writes the same bytes as before (see ``report_snapshots.py``)."""

from __future__ import annotations

import json

import pytest

from report_snapshots import DIGESTS, collect, probe_argv, snapshot_cases

EXPECTED = json.loads(DIGESTS.read_text())
CASES = [(case, label, argv) for case, label, argv in snapshot_cases()]


def test_every_fixture_command_has_digests() -> None:
    assert {f"{c.parent.name}/{c.name}/{label}" for c, label, _ in CASES} == set(EXPECTED)


@pytest.mark.parametrize(
    "case,label,argv", [pytest.param(*c, id=f"{c[0].name}-{c[1]}") for c in CASES]
)
def test_reports_are_byte_identical(case, label, argv, tmp_path, run_probe) -> None:
    result = run_probe(*probe_argv(argv, tmp_path / "out"), cwd=case)
    got = {"exit_code": str(result.code), **collect(tmp_path / "out")}
    expected = EXPECTED[f"{case.parent.name}/{case.name}/{label}"]
    changed = sorted(name for name in set(got) | set(expected) if got.get(name) != expected.get(name))
    assert not changed, f"reports differ from the stored ones: {changed} (regenerate with tests/report_snapshots.py)"
