"""A third-party plugin package is discovered through the ``probe`` entry-point group and
adds a metric mode and an exporter that ``probe compare`` uses without any change to core."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import PYTORCH_CASES

PLUGIN_SRC = Path(__file__).parent / "plugins"
STAT = PYTORCH_CASES / "stat_mix_cnn"


def _install_entry_point(site: Path, dist: str, version: str, entry: str) -> None:
    """Make ``site`` look like site-packages holding distribution ``dist`` with one entry point."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[probe]\n{entry}\n")


@pytest.fixture
def maxratio_installed(tmp_path, monkeypatch):
    site = tmp_path / "site"
    _install_entry_point(site, "probe-maxratio", "0.1", "maxratio = probe_maxratio")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(PLUGIN_SRC))
    return site


def test_plugin_is_listed_with_its_hooks(maxratio_installed, run_probe):
    result = run_probe("plugins", "--json")
    assert result.code == 0, result.err
    infos = {info["name"]: info for info in json.loads(result.out)}
    assert infos["maxratio"]["distribution"] == "probe-maxratio"
    assert infos["maxratio"]["version"] == "0.1"
    assert infos["maxratio"]["hooks"] == ["probe_register_exporters", "probe_register_modes"]


def test_compare_uses_the_plugin_mode_and_exporter(maxratio_installed, run_probe, tmp_path):
    out = tmp_path / "out"
    result = run_probe("compare", "-tp", STAT / "target/step0/proc23827/dump.json",
                       "-gp", STAT / "golden/step0/proc23597/dump.json", "-o", out,
                       "--metric-mode", "max_ratio", "--format", "csv,markdown", "-c")
    assert result.code == 0, result.err
    md = next(out.glob("compare_result_*.md")).read_text().splitlines()
    assert md[0].startswith("| NPU Name | Bench Name |") and "| Max ratio |" in md[0]
    from parity import read_report

    _, rows = read_report(next(out.glob("compare_result_*.csv")))
    assert len(md) == len(rows) + 2  # header and separator lines
    first = rows[0]
    dump = json.loads((STAT / "target/step0/proc23827/dump.json").read_text())
    gold = json.loads((STAT / "golden/step0/proc23597/dump.json").read_text())
    n = dump["data"]["Functional.conv2d.0.forward"]["input_args"][0]["Max"]
    b = gold["data"]["Functional.conv2d.0.forward"]["input_args"][0]["Max"]
    assert float(first["Max ratio"]) == pytest.approx(n / b)


def test_unknown_format_lists_the_valid_ones(run_probe, tmp_path):
    result = run_probe("compare", "-tp", STAT / "target/step0/proc23827/dump.json",
                       "-gp", STAT / "golden/step0/proc23597/dump.json", "-o", tmp_path, "--format", "pdf")
    assert result.code == 2
    assert "unknown exporter 'pdf'" in result.err and "csv, xlsx, json" in result.err


def test_broken_plugin_is_named_not_skipped(tmp_path, monkeypatch, run_probe):
    site = tmp_path / "site"
    _install_entry_point(site, "probe-broken", "9.9", "broken = probe_does_not_exist.plugin")
    monkeypatch.syspath_prepend(str(site))
    result = run_probe("plugins")
    assert result.code == 1
    assert "broken" in result.out and "failed" in result.out and "probe_does_not_exist" in result.out
    result = run_probe("compare", "-tp", STAT / "target/step0/proc23827/dump.json",
                       "-gp", STAT / "golden/step0/proc23597/dump.json", "-o", tmp_path / "o", "-c")
    assert result.code == 0
    warnings = [line for line in result.err.splitlines() if "broken" in line]
    assert len(warnings) == 1 and "probe-broken 9.9" in warnings[0]


def test_duplicate_registration_names_both_plugins():
    from probe.errors import PluginError
    from probe.hookspecs import hookimpl
    from probe.plugins import Host

    class Clash:
        __name__ = "clash"

        @hookimpl
        def probe_register_exporters(self, register):
            register.add("csv", object())

    host = Host(entrypoints=False, extra=(Clash(),))
    with pytest.raises(PluginError, match="'csv' is registered twice: by plugin 'clash' and by plugin 'probe.builtin.exporters'"):
        host.exporters
