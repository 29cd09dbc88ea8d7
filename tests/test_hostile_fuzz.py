"""Bounded coverage-guided fuzzing (atheris) of every reader: a few seconds per target in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import hostile_targets

pytest.importorskip("atheris", reason="fuzzing needs atheris (pip install atheris)")

SECONDS = int(os.environ.get("PROBE_FUZZ_SECONDS", "8"))
"""Budget of the CI run; ``PROBE_FUZZ_TARGET=json_reader PROBE_FUZZ_SECONDS=600`` for a long run of one."""


@pytest.mark.fuzz
def test_fuzz_targets_run_clean(tmp_path):
    target = os.environ.get("PROBE_FUZZ_TARGET", "all")
    script = Path(hostile_targets.__file__)
    run = subprocess.run(
        [sys.executable, str(script), target, f"-max_total_time={SECONDS}", "-rss_limit_mb=1536",
         "-timeout=10", f"-artifact_prefix={tmp_path}/"],
        capture_output=True, text=True, timeout=SECONDS + 120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(script.parent)},
    )
    crashes = list(tmp_path.glob("crash-*")) + list(tmp_path.glob("timeout-*")) + list(tmp_path.glob("oom-*"))
    assert run.returncode == 0 and not crashes, run.stderr[-3000:]
    assert "Done" in run.stderr or "runs in" in run.stderr, run.stderr[-1000:]
