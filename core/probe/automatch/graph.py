"""``graph_visualize --auto-match``: node pairs of two graphs from automatic matching."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from probe.automatch.matcher import CallMatch


def auto_node_pairs(npu_source: str, bench_source: str, host: Any) -> dict[str, CallMatch]:
    """``{target node name: CallMatch}`` for two dump directories (graph nodes are dump entries)."""
    from probe.automatch.mapper import match_dumps
    from probe.dumps import load_pair

    target, golden = load_pair(Path(npu_source) / "dump.json", Path(bench_source) / "dump.json", host)
    return {m.target: m for m in match_dumps(target, golden, host).calls}
