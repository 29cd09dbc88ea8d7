"""The plugin contract: documented hooks, naming, and every registered object conforming."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from probe import hookspecs
from probe.interfaces import (
    OPTIONAL_MEMBERS, Analyzer, Command, DumpReader, Exporter, Mapper, MetricMode, NameNormalizer, Pairer,
)

HOOKS = [name for name, obj in vars(hookspecs).items() if name.startswith("probe_") and callable(obj)]


def test_there_are_hooks():
    assert len(HOOKS) >= 10


@pytest.mark.parametrize("name", HOOKS)
def test_every_hook_is_documented_and_named_by_convention(name):
    func = getattr(hookspecs, name)
    doc = inspect.getdoc(func) or ""
    assert len(doc.split()) >= 15, f"{name} needs a docstring saying when it is called and what it returns"
    assert name.startswith(("probe_register_", "probe_add_", "probe_plan_", "probe_detect_"))
    if getattr(func, "probe_spec", {}).get("firstresult"):
        assert "first non-``None``" in doc


def test_builtins_register_through_the_same_hooks(host):
    assert {"statistics", "tensor", "md5"} <= set(host.modes.names())
    assert {"csv", "xlsx", "json"} <= set(host.exporters.names())
    assert "msprobe-json" in host.readers.names()
    assert {"compare", "plugins"} <= set(host.commands.names())


def _registered(kind):
    from probe.plugins import Host

    host = Host()
    return [pytest.param(item.value, id=f"{kind}:{item.name}") for item in getattr(host, kind).entries()]


@pytest.mark.parametrize("mode", _registered("modes"))
def test_metric_modes_conform(mode):
    assert isinstance(mode, MetricMode)
    for with_stack in (False, True):
        columns = mode.columns(with_stack, ())
        assert "Result" in columns and len(set(columns)) == len(columns)
        if mode.name.startswith("torchair-"):  # TorchAir's report layouts (documented, 26.2): no stack column
            assert columns[:3] in (["API Name", "Stack Info", "Data Name"], ["token_id", "data_id", "golden_data_path"])
            assert "NPU_Stack_Info" not in columns
            continue
        assert columns[:2] == ["NPU Name", "Bench Name"]
        assert ("NPU_Stack_Info" in columns) == with_stack


@pytest.mark.parametrize("exporter", _registered("exporters"))
def test_exporters_conform(exporter, tmp_path):
    from probe.pipeline import compare

    assert isinstance(exporter, Exporter) and exporter.suffix.startswith(".")
    case = Path(__file__).parent / "data/pytorch/stat_mix_cnn"
    run = compare(case / "target/step0/proc23827/dump.json", case / "golden/step0/proc23597/dump.json")
    path = tmp_path / f"report{exporter.suffix}"
    written = exporter.write(run[0], path)
    assert written == [path] and path.stat().st_size > 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary files left behind"


@pytest.mark.parametrize("reader", _registered("readers"))
def test_readers_conform(reader):
    assert isinstance(reader, DumpReader)


@pytest.mark.parametrize("pairer", _registered("pairers"))
def test_pairers_conform(pairer):
    assert isinstance(pairer, Pairer)
    option = getattr(pairer, "option", None)
    assert option is None or isinstance(option, str)


@pytest.mark.parametrize(
    "obj,protocol",
    [pytest.param(p.values[0], proto, id=p.id) for kind, proto in
     (("mappers", Mapper), ("normalizers", NameNormalizer), ("analyzers", Analyzer))
     for p in _registered(kind)],
)
def test_stage_objects_conform(obj, protocol):
    assert isinstance(obj, protocol)
    for member in OPTIONAL_MEMBERS.get(protocol.__name__, ()):
        assert not hasattr(obj, member) or getattr(obj, member) is None or member != "digest" or callable(obj.digest)


def test_builtin_pairers_are_registered(host):
    assert {"exact", "fuzzy"} <= set(host.pairers.names())
    assert host.pairers.get("fuzzy").option == "fuzzy_match"


@pytest.mark.parametrize("command", _registered("commands"))
def test_commands_have_help_with_examples(command, run_probe):
    assert isinstance(command, Command)
    assert command.epilog and "examples:" in command.epilog


def test_import_probe_does_not_import_a_framework():
    import subprocess
    import sys

    code = "import sys, probe, probe.cli, probe.pipeline; print('torch' in sys.modules, 'mindspore' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"


def test_trace_shows_registration_calls():
    import os
    import subprocess
    import sys

    env = {**os.environ, "PROBE_TRACE_PLUGINS": "1"}
    done = subprocess.run([sys.executable, "-m", "probe", "plugins", "--json"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "probe_register_commands [hook]" in done.stderr


def test_disable_plugins_by_name():
    import os
    import subprocess
    import sys

    env = {**os.environ, "PROBE_DISABLE_PLUGINS": "pytorch"}
    done = subprocess.run([sys.executable, "-m", "probe", "plugins", "--json"], env=env,
                          capture_output=True, text=True)
    names = [info["name"] for info in json.loads(done.stdout)]
    assert "pytorch" not in names and "probe.builtin.exporters" in names
