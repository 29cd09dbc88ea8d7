"""Every hook of :mod:`probe.hookspecs` has a docstring, a place in docs/architecture.md and a
test here (``test_hook_<name>``) that runs it through a real compare with a small local plugin."""

from __future__ import annotations

import argparse
import inspect
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from probe import hookspecs
from probe.api import KeyMap, Pairing, PairPlan, hookimpl
from probe.cli import build_parser
from probe.errors import PluginError
from probe.interfaces import Analyzer, Command
from probe.modes.tensor import load_tensor
from probe.pipeline import compare
from probe.plugins import Host
from probe.result import Analysis

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "tests" / "data" / "pytorch" / "stat_mix_cnn"
TARGET = CASE / "target" / "step0" / "proc23827" / "dump.json"
GOLDEN = CASE / "golden" / "step0" / "proc23597" / "dump.json"
TENSOR = ROOT / "tests" / "data" / "pytorch" / "tensor_mix_cnn"

HOOKS = sorted(name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("probe_"))


def run(plugin: object, *args, **options):
    host = Host(extra=(plugin,))
    return compare(*(args or (TARGET, GOLDEN)), host=host, analyze=False, **options), host


# --------------------------------------------------------------------------------------
# the meta-tests
# --------------------------------------------------------------------------------------


def test_hooks_were_found() -> None:
    assert "probe_plan_compare" in HOOKS and "probe_register_pairers" in HOOKS


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_and_tested(hook: str) -> None:
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
    assert len(doc) > 80, f"{hook} has no real docstring"
    assert f"``{hook}``" in (ROOT / "docs" / "architecture.md").read_text(), f"{hook} is missing in docs/architecture.md"
    assert callable(getattr(sys.modules[__name__], f"test_hook_{hook}", None)), f"no test_hook_{hook}"


# --------------------------------------------------------------------------------------
# one test per hook
# --------------------------------------------------------------------------------------


def test_hook_probe_register_readers(tmp_path: Path) -> None:
    base = Host().readers.get("msprobe-json")

    class Plugin:
        class Reader:
            name = "renamed-json"

            def sniff(self, path: Path) -> bool:
                return path.name.endswith(".renamed")

            def load(self, path: Path, with_stack: bool = True):
                dump = base.load(path, with_stack)
                dump.info = replace(dump.info, reader=self.name)
                return dump

        @hookimpl
        def probe_register_readers(self, register) -> None:
            register.add(self.Reader.name, self.Reader())

    target, golden = tmp_path / "t.renamed", tmp_path / "g.renamed"
    shutil.copy(TARGET, target)
    shutil.copy(GOLDEN, golden)
    result, _ = run(Plugin(), target, golden)
    assert result[0].target.reader == "renamed-json"
    assert len(result[0]) == len(compare(TARGET, GOLDEN, analyze=False)[0])


def test_hook_probe_register_tensor_loaders(tmp_path: Path) -> None:
    class Plugin:
        @hookimpl
        def probe_register_tensor_loaders(self, register) -> None:
            register.add(".txt", lambda path: np.loadtxt(path))

    path = tmp_path / "a.txt"
    path.write_text("1 2 3\n")
    host = Host(extra=(Plugin(),))
    assert load_tensor(path, host.tensor_loaders.as_dict()).tolist() == [1.0, 2.0, 3.0]

    class Twice:
        @hookimpl
        def probe_register_tensor_loaders(self, register) -> None:
            register.add(".npy", np.load)

    with pytest.raises(PluginError, match="registered twice"):
        Host(extra=(Twice(),)).tensor_loaders


def test_hook_probe_register_normalizers() -> None:
    class Plugin:
        class Prefix:
            name = "prefix-target"

            def applies(self, target_framework: str, golden_framework: str) -> bool:
                return True

            def normalize(self, key: str, side: str) -> str:
                return "x" + key if side == "target" else key

        @hookimpl
        def probe_register_normalizers(self, register) -> None:
            register.add(self.Prefix.name, self.Prefix())

    result, _ = run(Plugin())
    summary = result.summary()
    assert summary.rows and summary.unmatched == summary.rows


def test_hook_probe_register_mappers() -> None:
    class Plugin:
        class Nowhere:
            name = "nowhere"
            priority = 50

            def build(self, ctx):
                return KeyMap(target_key=lambda row: "nowhere") if ctx.options.get("nowhere") else None

        @hookimpl
        def probe_register_mappers(self, register) -> None:
            register.add(self.Nowhere.name, self.Nowhere())

    plugin = Plugin()
    assert run(plugin)[0].summary().unmatched == 0
    mapped = run(plugin, nowhere=True)[0].summary()
    assert mapped.unmatched == mapped.rows


def test_hook_probe_register_pairers(tmp_path: Path) -> None:
    class Plugin:
        class Lonely:
            name = "lonely"
            option = "lonely"

            def pair(self, target, golden, key_map, ctx) -> Pairing:
                from probe.api import Pair

                return Pairing([Pair(row, None) for row in target.rows], len(golden.rows))

        @hookimpl
        def probe_register_pairers(self, register) -> None:
            register.add(self.Lonely.name, self.Lonely())

    plugin = Plugin()
    assert run(plugin)[0].summary().unmatched == 0
    lonely = run(plugin, lonely=True)[0].summary()
    assert lonely.unmatched == lonely.rows and lonely.golden_only > 0

    class Planner(Plugin):  # a plan may name its pairer
        @hookimpl
        def probe_plan_compare(self, request):
            return [PairPlan("one", request.target, request.golden, pairers=("lonely",))]

    named = run(Planner())[0].summary()
    assert named.unmatched == named.rows


def test_hook_probe_register_modes() -> None:
    class Plugin:
        class Count:
            name = "count"

            def accepts(self, target, golden) -> bool:
                return False

            def columns(self, with_stack, extra_metrics):
                return ["NPU Name", "Matched"]

            def compute(self, pairs, ctx):
                from probe.api import RowResult

                return [RowResult(p, (p.golden is not None,)) for p in pairs]

            def judge(self, group) -> None:
                return None

            def render(self, row, with_stack):
                return [row.name, row.metrics[0]]

        @hookimpl
        def probe_register_modes(self, register) -> None:
            register.add(self.Count.name, self.Count())

    result, _ = run(Plugin(), metric_mode="count")
    assert result[0].columns == ["NPU Name", "Matched"]
    assert all(row["Matched"] is True for row in result[0].as_dicts())


def test_hook_probe_register_tensor_metrics() -> None:
    class Plugin:
        class Ones:
            column = "Ones"

            def __call__(self, target, golden) -> float:
                return float(np.count_nonzero(target == 1))

        @hookimpl
        def probe_register_tensor_metrics(self, register) -> None:
            register.add(self.Ones.column, self.Ones())

    result, _ = run(Plugin(), TENSOR / "target/step0/rank0/dump.json", TENSOR / "golden/step0/rank0/dump.json")
    assert "Ones" in result[0].columns
    values = [row["Ones"] for row in result[0].as_dicts() if isinstance(row["Ones"], float)]
    assert values and all(v >= 0 for v in values)


def test_hook_probe_register_exporters(tmp_path: Path) -> None:
    class Plugin:
        class Names:
            name = "names"
            suffix = ".txt"

            def write(self, result, path: Path) -> list[Path]:
                from probe.api import atomic_write

                with atomic_write(path, "w", encoding="utf-8") as handle:
                    handle.writelines(f"{record.name}\n" for record in result.records)
                return [path]

        @hookimpl
        def probe_register_exporters(self, register) -> None:
            register.add(self.Names.name, self.Names())

    result, _ = run(Plugin(), TARGET, GOLDEN, tmp_path, formats=("names",))
    (path,) = result.files
    assert path.suffix == ".txt" and len(path.read_text().splitlines()) == len(result[0])


def test_hook_probe_register_graph_rules(tmp_path: Path) -> None:
    """A registered rule decides what the graph treats as a recompute stack (the core has none)."""
    from test_graph_recompute import A1, G, GB, M1, NORMAL, write_recompute_dump

    from probe.graph.service import GraphOptions, run_graph

    class AnyStackRecomputes:
        name = "any-stack"

        def is_recompute_stack(self, frames):
            return frames == NORMAL

    class Plugin:
        @hookimpl
        def probe_register_graph_rules(self, register):
            register.add("any-stack", AnyStackRecomputes())

    dump = write_recompute_dump(tmp_path / "dump", recompute_stack=NORMAL)

    def roots(host: Host) -> list[str]:
        run = run_graph(GraphOptions(target=dump, output=tmp_path / f"out{len(list(tmp_path.iterdir()))}", jobs=1),
                        host)
        return [c.name for c in run.graphs[0].root.children]

    assert "any-stack" in Host(entrypoints=False, extra=(Plugin(),)).graph_rules
    assert roots(Host(entrypoints=False)) == [G, M1, A1, GB, "Module.model.decoder.mlp.MLP.backward.1"]
    assert roots(Host(entrypoints=False, extra=(Plugin(),))) == [G, A1, GB]


def test_hook_probe_register_commands(capsys) -> None:
    class Plugin:
        @hookimpl
        def probe_register_commands(self, register) -> None:
            def add(parser: argparse.ArgumentParser) -> None:
                parser.add_argument("--who", default="world")

            def hello(args: argparse.Namespace, host) -> int:
                print(f"hello {args.who}")
                return 3

            register.add("hello", Command(name="hello", help="say hello", add_arguments=add, run=hello))

    host = Host(extra=(Plugin(),))
    args = build_parser(host).parse_args(["hello", "--who", "probe"])
    assert args.handler.run(args, host) == 3
    assert capsys.readouterr().out == "hello probe\n"


def test_hook_probe_register_analyzers() -> None:
    class Plugin:
        class Rows:
            name = "rows"

            def enabled(self, request) -> bool:
                return True

            def digest(self, request, result) -> int:
                return len(result.records)

            def analyze(self, request, digests) -> Analysis:
                return Analysis(self.name, shown=[f"{sum(digests)} rows"], data=sum(digests))

        @hookimpl
        def probe_register_analyzers(self, register) -> None:
            register.add(self.Rows.name, self.Rows())

    assert isinstance(Plugin.Rows(), Analyzer)
    run_ = compare(TARGET, GOLDEN, host=Host(extra=(Plugin(),)), compare_only=True)
    assert run_.analysis("rows").data == len(run_[0]) > 0


def test_hook_probe_add_compare_options() -> None:
    class Plugin:
        @hookimpl
        def probe_add_compare_options(self, parser) -> None:
            parser.add_argument("--shout", action="store_true", default=None)

    host = Host(extra=(Plugin(),))
    args = build_parser(host).parse_args(["compare", "-tp", str(TARGET), "-gp", str(GOLDEN), "--shout"])
    from probe.builtin.commands import request_from_args

    assert request_from_args(args, host).options["shout"] is True


def test_hook_probe_plan_compare(tmp_path: Path) -> None:
    class Plugin:
        @hookimpl
        def probe_plan_compare(self, request):
            return [PairPlan("mine", request.target, request.golden, output_stem="mine", output_subdir="sub")]

    result, _ = run(Plugin(), TARGET, GOLDEN, tmp_path)
    assert result[0].label == "mine"
    assert [p.relative_to(tmp_path).as_posix().rsplit("_", 1)[0] for p in result.files] == ["sub/mine"]


def test_plan_compare_rejects_objects_that_are_not_plans(tmp_path: Path) -> None:
    class Legacy:  # the old job objects with a run() method are no longer accepted
        label = "legacy"

        def run(self, host, request, progress):  # pragma: no cover - must never be called
            raise AssertionError("legacy job ran")

    class Plugin:
        @hookimpl
        def probe_plan_compare(self, request):
            return [Legacy()]

    with pytest.raises(PluginError, match="returned Legacy, not a PairPlan"):
        run(Plugin(), TARGET, GOLDEN, tmp_path)


def test_hook_probe_detect_framework() -> None:
    class Plugin:
        @hookimpl
        def probe_detect_framework(self, path: str) -> str | None:
            return "myfw" if path.endswith("dump.json") else None

    host = Host(extra=(Plugin(),))
    assert host.detect_framework(path=str(TARGET)) == "myfw"
    assert Host().detect_framework(path=str(TARGET)) == "pytorch"
