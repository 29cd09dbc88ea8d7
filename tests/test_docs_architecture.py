"""The third-party plugin of docs/architecture.md works as printed, in under 40 lines."""

from __future__ import annotations

import re
import types
from pathlib import Path

from probe.pipeline import compare
from probe.plugins import Host

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"


def _plugin_source() -> str:
    text = DOC.read_text()
    match = re.search(r"<!-- plugin-example -->\n```python\n(.*?)```", text, re.S)
    assert match, "docs/architecture.md lost its plugin example"
    return match.group(1)


def _plugin_module() -> types.ModuleType:
    module = types.ModuleType("probe_tiny")
    exec(compile(_plugin_source(), str(DOC), "exec"), module.__dict__)  # our own documentation
    return module


def test_example_is_short_and_uses_only_the_public_api() -> None:
    source = _plugin_source()
    assert len(source.splitlines()) < 40
    imports = re.findall(r"^(?:from|import) (\S+)", source, re.M)
    assert set(imports) == {"csv", "probe.api"}


def test_example_plugin_reads_measures_judges_and_exports(tmp_path: Path) -> None:
    target, golden = tmp_path / "a.tiny.csv", tmp_path / "b.tiny.csv"
    target.write_text("conv,1.0\nrelu,2.0\nextra,3.0\n")
    golden.write_text("conv,1.05\nrelu,2.5\n")
    run = compare(target, golden, tmp_path / "out", formats=("markdown",), host=Host(extra=(_plugin_module(),)))
    result = run[0]
    assert result.mode.name == "absdiff" and result.target.reader == "tiny"
    assert [r.verdict for r in result.records] == ["pass", "error", "N/A"]
    (report,) = run.files
    lines = report.read_text().splitlines()
    assert report.suffix == ".md" and lines[0] == "| Name | Diff | Result |"
    assert lines[2] == "| relu | 0.5 | error |"
