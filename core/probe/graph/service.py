"""``graph_visualize`` end to end: discover, build, match, judge, link ranks, write the db."""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from probe.errors import InputError

from probe.graph.build import build_graph
from probe.graph.db import VisDbWriter
from probe.graph.distributed import link_ranks
from probe.graph.layout import GraphSource, discover, pair_sources
from probe.graph.matching import match_graphs
from probe.graph.metrics import compare_task, compute_metrics
from probe.graph.node import BENCH, NPU, Graph, GraphNode
from probe.graph.overflow import check_overflow, load_rules
from probe.graph.verdict import judge_collections, judge_graph

if TYPE_CHECKING:  # pragma: no cover
    from probe.plugins import Host

log = logging.getLogger(__name__)
_TRAILING_NUMBER = re.compile(r"(\d+)$")


@dataclass
class MergeOptions:
    """Parallel-merge parameters of one side."""

    rank_size: int
    tp: int
    pp: int
    vpp: int = 1
    order: str = "tp-cp-ep-dp-pp"


@dataclass
class GraphOptions:
    """Everything ``graph_visualize`` was asked to do."""

    target: Path
    output: Path
    golden: Path | None = None
    layer_mapping: Path | None = None
    overflow_check: bool = False
    overflow_rules: Path | None = None
    """Extra false-positive rules for ``-oc`` (added to ``probe/data/overflow_rules.yaml``)."""
    fuzzy_match: bool = False
    tensor_log: bool = False
    progress_log: bool = False
    merge: list[MergeOptions] = field(default_factory=list)
    html: bool = False
    timestamp: str | None = None
    jobs: int | None = None
    """Processes that build graphs (default 1: shipping a built graph back costs about as much
    as building it, see docs/performance.md)."""


@dataclass
class GraphRun:
    """What a run produced."""

    db: Path
    graphs: list[Graph]
    html: Path | None = None
    nodes: int = 0
    matched: int = 0


class Progress:
    """Prints ``PROGRESS: {json}`` lines when asked (the plugin's conversion page reads them)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled
        self.total = max(total, 1)
        self.done = 0

    def step(self, status: str = "building") -> None:
        self.done += 1
        if self.enabled:
            pct = min(100, round(100 * self.done / self.total))
            print(f"PROGRESS: {json.dumps({'progress': pct, 'status': status})}", file=sys.stdout, flush=True)


def _renamer(host: Host | None, npu: Graph, bench: Graph):
    """Name normalizers of the host that apply to this framework pair (e.g. Cell -> Module)."""
    if host is None or npu.framework == bench.framework:
        return None
    try:
        active = [n for n in host.normalizers.values() if n.applies(npu.framework, bench.framework)]
    except Exception:  # noqa: BLE001 - no normalizers available
        return None
    if not active:
        return None

    def rename(name: str) -> str:
        t_key, g_key = name, None
        for norm in active:
            t_key = norm.normalize(t_key, "target")
        return t_key if g_key is None else g_key

    return rename


def compare_pair(
    npu: Graph, bench: Graph, options: GraphOptions, host: Host | None, merged: bool = False
) -> tuple[str, int]:
    """Match, compute metrics and judge one NPU/Bench graph pair; returns (task, matched)."""
    task = compare_task(npu, bench)
    if npu.framework != bench.framework and options.layer_mapping is None and _renamer(host, npu, bench) is None:
        raise InputError(
            f"is a {bench.framework} dump and the target is {npu.framework}: pass -lm/--layer_mapping", bench.source
        )
    matched = match_graphs(
        npu, bench, fuzzy=options.fuzzy_match or merged, mapping=options.layer_mapping,
        rename=_renamer(host, npu, bench),
    )
    pairs = [(n, n.match) for n in npu.nodes.values() if n.match is not None]
    by_node = compute_metrics(pairs, npu, bench, task, host)
    judge_graph(by_node, task, merged)
    judge_collections(list(npu.nodes.values()))
    if options.tensor_log:
        for node, rows in by_node.items():
            log.info("compared %s with %s: %d rows", node.name, node.match.name if node.match else "-", len(rows))
    _share_micro_steps(npu, bench)
    return task, matched


def _share_micro_steps(npu: Graph, bench: Graph) -> None:
    """Matched bench nodes take the NPU micro step; unmatched bench top nodes their trailing number."""
    for top in bench.root.children:
        if top.match is not None:
            value = top.match.micro_step
        else:
            found = _TRAILING_NUMBER.search(top.name)
            value = int(found.group(1)) if found else 0
            value = min(value, npu.micro_steps - 1)
        stack = [top]
        while stack:
            node = stack.pop()
            node.micro_step = node.match.micro_step if node.match is not None else value
            stack.extend(node.children)
    bench.micro_steps = npu.micro_steps


def _build(source: GraphSource, side: str) -> Graph:
    return build_graph(source.directory, side, source.step, source.rank)


def _build_one(job: tuple[GraphSource, str]) -> Graph:
    return _build(*job)


def build_graphs(jobs: list[tuple[GraphSource, str]], workers: int = 1) -> list[Graph]:
    """Build the graph of every (source, side), in parallel processes when ``workers > 1``."""
    workers = min(workers, len(jobs))
    if workers <= 1:
        return [_build(*job) for job in jobs]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_build_one, jobs))


def run_graph(options: GraphOptions, host: Host | None = None) -> GraphRun:
    """Run ``graph_visualize``; returns the db written (and the graphs, for callers and tests)."""
    options.output.mkdir(parents=True, exist_ok=True)
    stamp = options.timestamp or time.strftime("%Y%m%d%H%M%S")
    compare = options.golden is not None
    merged = bool(options.merge)
    workers = options.jobs or 1
    rules = load_rules(options.overflow_rules) if options.overflow_check else None
    if compare and not merged:
        kind, pairs = pair_sources(options.target, options.golden)
    else:
        kind, sources = discover(options.target)
        pairs = [(s, None) for s in sources]
    progress = Progress(options.progress_log, len(pairs) + 1)
    graphs: list[Graph] = []
    task = ""
    matched = 0
    if merged:
        from probe.graph.merge import merge_side

        golden_sources: list[GraphSource] = []
        if compare:
            kind_g, golden_sources = discover(options.golden)
            if kind_g != kind:
                raise InputError(f"has layout '{kind_g}' but the target path has layout '{kind}'", options.golden)
        jobs = [(s, NPU) for s, _ in pairs] + [(g, BENCH) for g in golden_sources]
        built_all = build_graphs(jobs, workers)
        npu_graphs = merge_side(built_all[: len(pairs)], options.merge[0], options.target)
        bench_graphs = merge_side(built_all[len(pairs):], options.merge[-1], options.golden) if compare else []
        if compare and len(npu_graphs) != len(bench_graphs):
            raise InputError(
                f"merges into {len(bench_graphs)} graphs but the target merges into {len(npu_graphs)}; "
                "both sides need the same data-parallel size", options.golden,
            )
        built = list(zip(npu_graphs, bench_graphs)) if compare else [(g, None) for g in npu_graphs]
        for npu_graph, bench_graph in built:
            if bench_graph is not None:
                bench_graph.rank, bench_graph.step = npu_graph.rank, npu_graph.step
    else:
        jobs = [(s, NPU) for s, _ in pairs] + [(g, BENCH) for _, g in pairs if g is not None]
        built_all = build_graphs(jobs, workers)
        bench_iter = iter(built_all[len(pairs):])
        built = [(n, next(bench_iter) if g is not None else None) for n, (_, g) in zip(built_all, pairs)]
    for npu_graph, bench_graph in built:
        if bench_graph is not None:
            task, count = compare_pair(npu_graph, bench_graph, options, host, merged)
            matched += count
        if options.overflow_check:
            check_overflow(npu_graph, rules)
            if bench_graph is not None:
                check_overflow(bench_graph, rules)
        graphs.append(npu_graph)
        if bench_graph is not None:
            graphs.append(bench_graph)
        progress.step()
    if kind in ("ranks", "steps") and not merged:
        groups: dict[tuple[str, int], list[Graph]] = defaultdict(list)
        for graph in graphs:
            groups[(graph.side, graph.step)].append(graph)
        for group in groups.values():
            if len(group) > 1:
                link_ranks(group, compare=compare, overflow=options.overflow_check)
    db_path = options.output / f"{'compare' if compare else 'build'}_{stamp}.vis.db"
    writer = VisDbWriter(db_path)
    nodes = 0
    try:
        writer.write_config(
            compare, task, max(g.micro_steps for g in graphs) if graphs else 1, options.overflow_check,
            (g.rank for g in graphs), (g.step for g in graphs),
        )
        for graph in graphs:
            nodes += writer.write_graph(graph, compare, task)
        db = writer.close()
    except BaseException:
        writer.abort()
        raise
    run = GraphRun(db=db, graphs=graphs, nodes=nodes, matched=matched)
    if options.html:
        from probe.viewer.writer import write_html

        run.html = write_html(db)
    progress.step("done")
    return run


def matched_pairs(graph: Graph) -> list[tuple[GraphNode, GraphNode]]:
    """(NPU node, Bench node) pairs of a compared NPU graph, in node order."""
    return [(n, n.match) for n in sorted(graph.nodes.values(), key=lambda n: n.order) if n.match is not None]
