"""Shared helpers of the graph tests."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data" / "graph"


def host():
    """A host with the built-in plugins (metric modes, commands) and probe-pytorch's graph rules."""
    from probe.plugins import Host
    from probe_pytorch import plugin as pytorch_plugin

    return Host(entrypoints=False, extra=(pytorch_plugin,))


def run(tmp_path: Path, target: str, golden: str | None = None, **kwargs):
    """Run graph_visualize on test data directories, in this process (so the GraphRun keeps the
    graphs) unless ``jobs`` says otherwise."""
    from probe.graph.service import GraphOptions, run_graph

    kwargs.setdefault("jobs", 1)
    options = GraphOptions(
        target=DATA / target,
        golden=DATA / golden if golden else None,
        output=tmp_path,
        **kwargs,
    )
    return run_graph(options, host())
