"""Every test passes or skips with a reason when an optional dependency is missing (issue 12, item 19)."""

from __future__ import annotations

import ast
from pathlib import Path

OPTIONAL = {"torch", "selenium", "tensorboard", "dask", "distributed", "xlsxwriter", "tb_graph_ascend"}
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


def _skipped_modules(tree: ast.AST) -> set[str]:
    """Root modules the file asks ``pytest.importorskip`` for (later plain imports of them are fine)."""
    roots = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip" and node.args
                and isinstance(node.args[0], ast.Constant)):
            roots.add(str(node.args[0].value).split(".")[0])
    return roots


def test_optional_modules_are_imported_through_importorskip():
    bare = []
    for path in sorted(TESTS.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        guarded = _guarded_lines(tree)
        skipped = _skipped_modules(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                roots = [node.module.split(".")[0]]
            else:
                continue
            if (set(roots) & OPTIONAL) - skipped and node.lineno not in guarded:
                bare.append(f"{path.name}:{node.lineno}")
    assert not bare, f"import optional dependencies with pytest.importorskip(..., reason=...): {bare}"
