"""The shape of the code: layers without import loops, plugins on the public API only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core" / "probe"
PLUGIN_DIRS = sorted(ROOT.glob("plugins/*/probe_*")) + [ROOT / "tests" / "plugins"]

LAZY_ALLOWED = {
    # optional or heavy third-party modules, imported where they are first needed
    "numpy", "yaml", "rich", "openpyxl", "dask", "torch", "tensorboard", "selenium", "matplotlib",
    "concurrent", "multiprocessing", "tempfile", "shutil", "pickle", "importlib", "ctypes",
}
"""Top-level package names a core function may import lazily (start-up time, optional extras)."""

LAZY_CORE_MODULES = {
    # registration modules hand out stage objects whose modules pull numpy/yaml/rich;
    # importing them only when first used keeps ``probe --help`` fast
    ("probe/builtin/modes.py", "probe.modes.md5"),
    ("probe/builtin/modes.py", "probe.modes.statistics"),
    ("probe/builtin/modes.py", "probe.modes.tensor"),
    # statistics rules are imported by the analyzers at start-up; its numpy column
    # renderer and judge only when rows are judged or a report is rendered
    ("probe/modes/statistics.py", "probe.modes.stat_columns"),
    ("probe/modes/statistics.py", "probe.modes.stat_judge"),
    ("probe/builtin/exporters.py", "probe.export_stream"),
    ("probe/builtin/analysis.py", "probe.analysis.analyzers"),
    ("probe/builtin/analysis.py", "probe.analysis.merge"),
    ("probe/builtin/commands.py", "probe.console"),
    ("probe/automatch/plugin.py", "probe.automatch.mapper"),
    ("probe/automatch/plugin.py", "probe.automatch.report"),
    ("probe/automatch/plugin.py", "probe.io"),
    ("probe/builtin/graph_commands.py", "probe.graph.service"),
    ("probe/builtin/graph_commands.py", "probe.viewer.writer"),
    ("probe/builtin/graph_commands.py", "probe.graph.merge"),
    ("probe/builtin/analysis.py", "probe.diagnosis.analyzer"),
    # the diagnosis judges a column at a time with numpy, once a compare has rows
    ("probe/diagnosis/rank.py", "probe.diagnosis.columns"),
    ("probe/builtin/analysis.py", "probe.builtin.diagnose_command"),
    ("probe/builtin/diagnose_command.py", "probe.console"),
    ("probe/builtin/commands.py", "probe.regression.console"),
    ("probe/builtin/graph_commands.py", "probe.regression.console"),
    # modules a plain compare never uses (report diff, n-way, the diagnosis chart): imported
    # by the command or option that needs them, not at every start-up
    ("probe/__init__.py", "probe.regression.diff"),
    ("probe/__init__.py", "probe.regression.nway"),
    ("probe/regression/commands.py", "probe.regression.diff"),
    ("probe/builtin/diagnose_command.py", "probe.viewer.chart"),
    ("probe/diagnosis/analyzer.py", "probe.viewer.chart"),
    # the xlsx writer and its zip stream (about 3 ms at start-up), which a CSV report never uses
    ("probe/exporters.py", "probe.xlsx"),
    # the automatic matcher and the module tree reader, registered at start-up, used only by -am
    ("probe/automatch/mapper.py", "probe.automatch.matcher"),
    ("probe/automatch/mapper.py", "probe.graph.build"),
}
"""(file, probe module) pairs kept lazy because the module imports numpy, yaml or rich."""


def _module_name(path: Path) -> str:
    rel = path.relative_to(CORE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[ast.AST, str, bool]]:
    """``(node, imported module, inside a function)`` for every import of ``tree``."""
    out: list[tuple[ast.AST, str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                out.extend((child, alias.name, inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = module.split(".") if is_package else module.split(".")[:-1]
                    package = package[: len(package) - child.level + 1]
                    base = ".".join(package + ([base] if base else []))
                submodules = [f"{base}.{a.name}" for a in child.names if _is_module(f"{base}.{a.name}")]
                # ``from probe import runtime`` imports the module probe.runtime, not probe's names
                out.extend((child, target, inner) for target in submodules or [base])
            visit(child, inner)

    visit(tree, False)
    return out


def _core_graph() -> dict[str, set[str]]:
    files = {(_module_name(p)): p for p in CORE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text())
        targets = {target for _, target, _ in _imports(tree, name, path.name == "__init__.py")}
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_core_has_no_import_loop() -> None:
    graph = _core_graph()
    assert "probe.pipeline" in graph and graph["probe.pipeline"], "the import graph was not read"
    assert _cycles(graph) == []


def test_a_loop_is_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_core_imports_inside_functions_are_only_for_heavy_or_optional_modules() -> None:
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        name = _module_name(path)
        rel = path.relative_to(CORE.parent).as_posix()
        for node, target, inner in _imports(ast.parse(path.read_text()), name, path.name == "__init__.py"):
            if not inner or not target:
                continue
            top = target.split(".")[0]
            if top in LAZY_ALLOWED or (rel, target) in LAZY_CORE_MODULES:
                continue
            offenders.append(f"{rel}:{node.lineno}: {target}")
    assert offenders == []


def _is_module(dotted: str) -> bool:
    path = CORE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


@pytest.mark.parametrize("directory", PLUGIN_DIRS, ids=lambda p: p.name)
def test_plugins_import_only_the_public_api(directory: Path) -> None:
    bad = []
    for path in sorted(directory.rglob("*.py")):
        for node, target, _ in _imports(ast.parse(path.read_text()), path.stem, False):
            if target == "probe" or target.startswith("probe."):
                if target != "probe.api":
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {target}")
    assert bad == []


LAYERS = {
    "types": {"probe.model", "probe.result", "probe.errors", "probe.registry", "probe.version"},
    "interfaces": {"probe.hookspecs", "probe.interfaces"},
}


def test_bottom_layers_import_only_downwards() -> None:
    graph = _core_graph()
    allowed = set()
    for layer, modules in LAYERS.items():
        allowed |= modules
        for module in modules:
            assert graph[module] <= allowed, f"{module} ({layer}) imports {sorted(graph[module] - allowed)}"
    assert graph["probe.model"] == set(), "plain data types import nothing of probe"


def test_command_line_start_up_imports_no_heavy_module() -> None:
    import subprocess
    import sys

    code = ("import sys; from probe.cli import build_parser; from probe.plugins import Host; "
            "build_parser(Host()); print(sorted(m for m in ('numpy', 'yaml', 'rich', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_compare_whose_stderr_is_no_terminal_imports_no_progress_bar(tmp_path) -> None:
    import subprocess
    import sys

    from conftest import DATA

    case = DATA / "pytorch" / "L1_tfm"
    code = ("import sys; from probe.cli import main; sys.argv = ['probe', '-q', 'compare', '-tp', sys.argv[1], "
            "'-gp', sys.argv[2], '-o', sys.argv[3]]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('rich.progress' in sys.modules, 'rich' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(case / "target"), str(case / "golden"), str(tmp_path)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split()[-2:] == ["False", "True"]  # the summary is printed with rich
    assert list(tmp_path.iterdir())  # the compare ran
