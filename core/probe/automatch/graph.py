"""``graph_visualize --auto-match``: node pairs of two graphs from automatic matching."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from probe.automatch.matcher import CallMatch


def auto_node_pairs(npu_source: str, bench_source: str, host: Any) -> dict[str, CallMatch]:
    """``{target node name: CallMatch}`` for two dump directories (graph nodes are dump entries)."""
    from probe.automatch.mapper import load_and_match

    result = load_and_match(Path(npu_source) / "dump.json", Path(bench_source) / "dump.json", host)
    return {m.target: m for m in result.calls}
