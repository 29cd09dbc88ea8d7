"""``graph_visualize --auto-match``: node pairs of two graphs from automatic matching."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from probe.automatch.mapper import load_and_match, match_dumps
from probe.automatch.matcher import CallMatch


def auto_node_pairs(npu: Any, bench: Any, registries: Any) -> dict[str, CallMatch]:
    """``{target node name: CallMatch}`` for two graphs (their nodes are dump entries).

    Uses the rows the graphs were built from, or reads the dumps again when a graph has none.
    """
    if npu.dump is not None and bench.dump is not None:
        result = match_dumps(npu.dump, bench.dump, registries.normalizers.values() if registries else ())
    else:
        result = load_and_match(Path(npu.source) / "dump.json", Path(bench.source) / "dump.json", registries)
    return {m.target: m for m in result.calls}
