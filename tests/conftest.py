"""Shared fixtures: test data locations, an in-process ``probe`` runner, a plugin host."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline: a loaded machine must not turn a slow example into a failure.
settings.register_profile("probe", deadline=None)
settings.load_profile("probe")

DATA = Path(__file__).parent / "data"
PYTORCH_CASES = DATA / "pytorch"
sys.path.insert(0, str(Path(__file__).parent))


@dataclass
class ProbeRun:
    code: int
    out: str
    err: str


@pytest.fixture
def run_probe(capsys, monkeypatch):
    """Run ``probe ARGS`` in-process (optionally from ``cwd``) and capture its output."""
    from probe.cli import main

    def run(*args: str, cwd: Path | None = None) -> ProbeRun:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return ProbeRun(code, captured.out, captured.err)

    return run


@pytest.fixture
def host():
    """A plugin host with the installed plugins."""
    from probe.plugins import Host

    return Host()


def msprobe_commands(case_dir: Path) -> list[dict]:
    """The successful compare commands msProbe ran for a fixture case."""
    meta = json.loads((case_dir / "case.json").read_text())
    out = []
    for cmd in meta.get("commands", []):
        argv = shlex.split(cmd["command"])
        if argv[1] == "compare" and cmd["exit_code"] == 0 and cmd["outputs"]:
            out.append({**cmd, "argv": argv[2:]})
    return out
