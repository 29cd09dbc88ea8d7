"""Every test passes or skips with a reason when an optional dependency is missing (issue 12, item 19).

Checked statically: an optional module may be imported only inside ``try/except ImportError``,
in a file that asks ``pytest.importorskip`` for it, or in a test that takes a fixture that does.
"""

from __future__ import annotations

import ast
from pathlib import Path

OPTIONAL = {"torch", "selenium", "tensorboard", "dask", "distributed", "xlsxwriter", "tb_graph_ascend",
            "matplotlib"}
TESTS = Path(__file__).parent


def _guarded_lines(tree: ast.AST) -> set[int]:
    """Lines inside ``try: ... except ImportError`` (or ModuleNotFoundError) blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            names = {getattr(h.type, "id", None) for h in node.handlers} | {
                getattr(e, "id", None) for h in node.handlers if isinstance(h.type, ast.Tuple) for e in h.type.elts}
            if names & {"ImportError", "ModuleNotFoundError", "Exception"}:
                for stmt in node.body:
                    lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _skipped_modules(node: ast.AST) -> set[str]:
    """Root modules ``node`` asks ``pytest.importorskip`` for."""
    roots = set()
    for call in ast.walk(node):
        if (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "importorskip" and call.args
                and isinstance(call.args[0], ast.Constant)):
            roots.add(str(call.args[0].value).split(".")[0])
    return roots


def _functions(tree: ast.AST) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


def _skipping_fixtures(trees: list[ast.AST]) -> dict[str, set[str]]:
    """Fixture (function) name -> the optional modules it importorskips, over every test module."""
    found: dict[str, set[str]] = {}
    for tree in trees:
        for function in _functions(tree):
            roots = _skipped_modules(function)
            if roots:
                found.setdefault(function.name, set()).update(roots)
    return found


def _imports(node: ast.AST) -> list[tuple[int, set[str]]]:
    out = []
    for item in ast.walk(node):
        if isinstance(item, ast.Import):
            out.append((item.lineno, {alias.name.split(".")[0] for alias in item.names}))
        elif isinstance(item, ast.ImportFrom) and item.module and not item.level:
            out.append((item.lineno, {item.module.split(".")[0]}))
    return out


def test_optional_modules_are_imported_through_importorskip():
    trees = {path: ast.parse(path.read_text(), str(path)) for path in sorted(TESTS.glob("*.py"))}
    fixtures = _skipping_fixtures(list(trees.values()))
    bare = []
    for path, tree in trees.items():
        guarded = _guarded_lines(tree)
        skipped = _skipped_modules(tree)
        allowed_in: dict[int, set[str]] = {}
        for function in _functions(tree):
            via = set().union(*(fixtures.get(a.arg, set()) for a in function.args.args))
            for line in range(function.lineno, (function.end_lineno or function.lineno) + 1):
                allowed_in.setdefault(line, set()).update(via)
        for line, roots in _imports(tree):
            if (roots & OPTIONAL) - skipped - allowed_in.get(line, set()) and line not in guarded:
                bare.append(f"{path.name}:{line}")
    assert not bare, f"import optional dependencies with pytest.importorskip(..., reason=...): {bare}"
