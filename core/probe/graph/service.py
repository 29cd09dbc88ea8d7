"""``graph_visualize`` end to end: discover, build, match, judge, link ranks, write the db."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import probe.runtime as runtime
import probe.stages as stages
from probe.automatch.graph import auto_node_pairs
from probe.errors import InputError
from probe.io import no_space, prepare_output_dir, temp_dir, write_error

from probe.graph.build import build_graph
from probe.graph.db import VisDbWriter, write_part
from probe.graph.distributed import CommOp, comm_ops, link_comm_ops
from probe.graph.export_json import write_graph_json
from probe.graph.layout import GraphSource, discover, pair_sources
from probe.graph.matching import is_pair_mapping, load_mapping, match_by_row_pairs, match_graphs
from probe.graph.merge import merge_side
from probe.graph.metrics import compare_task, compute_metrics
from probe.graph.node import BENCH, NPU, Graph, GraphNode
from probe.graph.rules import GraphRuleSet
from probe.graph.overflow import check_overflow, load_rules
from probe.graph.verdict import judge_collections, judge_graph
from probe.model import MatchContext, Pair
from probe.plugins import Host, default_host
from probe.viewer.writer import write_html


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
    layer_mapping: Path | bool | None = None
    """A mapping file, or ``True`` for ``-lm`` without one (modules pair by path, any class)."""
    overflow_check: bool = False
    overflow_rules: Path | None = None
    """Extra false-positive rules for ``-oc`` (added to ``probe/data/overflow_rules.yaml``)."""
    fuzzy_match: bool = False
    auto_match: bool = False
    """Pair nodes whose names differ from structure and statistics (``--auto-match``)."""
    tensor_log: bool = False
    progress_log: bool = False
    merge: list[MergeOptions] = field(default_factory=list)
    html: bool = False
    file_type: str = "db"
    """``json``: a parallel-merge build writes ``step<S>/rank<R>/{construct,dump,stack}.json``
    instead of the db."""
    timestamp: str | None = None
    jobs: int | None = None
    """Worker processes, each handling whole (target rank, golden rank) pairs: build, match,
    metrics, verdicts and its own part of the db. ``None``: one per CPU when there are several
    pairs (see docs/performance.md); ``1``: everything in this process."""


@dataclass
class GraphRun:
    """What a run produced."""

    db: Path | None
    graphs: list[Graph]
    """The graphs written (empty when worker processes built them)."""
    html: Path | None = None
    nodes: int = 0
    matched: int = 0
    json_dirs: list[Path] = field(default_factory=list)
    """``--file_type json``: one dump-format directory per merged graph."""


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


def _compare_pairs(npu: Graph, bench: Graph, options: GraphOptions, host: Host | None) -> list[Pair] | None:
    """The row pairs ``probe compare -lm FILE`` makes for these dumps (``None`` without ``-lm``).

    A layer mapping is applied by the registered mappers and pairers (probe-mindspore's
    ``-lm``), exactly as in the compare, so the graph judges the rows the report judges. A
    mapping of node or row names (``{npu name: bench name}``), which only the graph reads, and
    a host without a layer mapper leave matching to :func:`match_graphs`.
    """
    if host is None or not isinstance(options.layer_mapping, (str, Path)) or npu.dump is None or bench.dump is None:
        return None  # no -lm, or -lm without a file (modules pair by path in match_graphs)
    if is_pair_mapping(load_mapping(options.layer_mapping)):
        return None
    settings = {"layer_mapping": str(options.layer_mapping)}
    ctx = MatchContext(target=npu.dump, golden=bench.dump, options=settings, normalizers=host.normalizers.values())
    if stages.build_key_map(host, ctx) is None:
        return None
    return stages.pair(npu.dump, bench.dump, host, settings).pairs


def compare_pair(
    npu: Graph, bench: Graph, options: GraphOptions, host: Host | None, merged: bool = False
) -> tuple[str, int]:
    """Match, compute metrics and judge one NPU/Bench graph pair; returns (task, matched)."""
    task = compare_task(npu, bench)
    if (npu.framework != bench.framework and options.layer_mapping is None and not options.auto_match
            and _renamer(host, npu, bench) is None):
        raise InputError(
            f"is a {bench.framework} dump and the target is {npu.framework}: pass -lm/--layer_mapping", bench.source
        )
    row_pairs = _compare_pairs(npu, bench, options, host)
    matched = match_by_row_pairs(npu, bench, row_pairs) if row_pairs is not None else 0
    auto = None
    if options.auto_match and not merged:
        found = auto_node_pairs(npu, bench, host)
        auto = {name: m.golden for name, m in found.items()}
    matched += match_graphs(
        npu, bench, fuzzy=options.fuzzy_match or merged, mapping=options.layer_mapping,
        rename=_renamer(host, npu, bench), auto=auto,
    )
    if auto is not None:  # confidences of the pairs automatic matching made (a mapping file wins)
        npu.auto_matches = {name: (m.confidence, m.why) for name, m in found.items()
                            if (node := npu.nodes.get(name)) is not None and node.match is not None
                            and node.match.name == m.golden}
    pairs = [(n, n.match) for n in npu.nodes.values() if n.match is not None]
    mode, by_node = compute_metrics(pairs, npu, bench, task, host, merged=merged, row_pairs=row_pairs)
    judge_graph(by_node, mode)
    judge_collections(list(npu.nodes.values()))
    if options.tensor_log:
        print_tensor_log(by_node)
    _share_micro_steps(npu, bench)
    return task, matched


def print_tensor_log(by_node: dict[GraphNode, list]) -> None:
    """``-tensor_log``: one line per compared row with its metrics, as ``probe compare`` prints them."""
    for node, records in by_node.items():
        for pair in (record.pair for record in records):
            if pair.golden is None:
                continue
            values = node.metrics.get(pair.target.name)
            if values is None:
                continue
            metrics = ", ".join(f"{name} {value}" for name, value in values.items()) or "md5 only"
            print(f"[{pair.target.name}] Compare result: {metrics}, bench {pair.golden.name}", flush=True)


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


def graph_rules(host: Host | None) -> GraphRuleSet:
    """The graph rules registered with ``host`` (the default host's without one)."""
    return GraphRuleSet((host or default_host()).graph_rules.values())


def _build(source: GraphSource, side: str, host: Host | None) -> Graph:
    """The graph of one source, its dump.json read by the host's registered reader."""
    dump_path = source.directory / "dump.json"
    reader = stages.pick_reader(dump_path, host) if host is not None and dump_path.exists() else None
    return build_graph(source.directory, side, source.step, source.rank, reader, graph_rules(host))


def _build_chunk(jobs: list[tuple[GraphSource, str]]) -> list[Graph]:
    return [_build(*job, _worker_host()) for job in jobs]


def build_graphs(jobs: list[tuple[GraphSource, str]], host: Host | None, workers: int = 1) -> list[Graph]:
    """Build the graph of every (source, side), in parallel processes when ``workers > 1``."""
    if workers <= 1:
        return [_build(*job, host) for job in jobs]
    return [g for chunk in runtime.parallel_map(_build_chunk, [[job] for job in jobs], workers=workers)
            for g in chunk]


@dataclass
class PairResult:
    """What one (target, golden) pair produced, small enough to send between processes."""

    task: str
    matched: int
    micro_steps: int
    nodes: int
    keys: list[tuple[str, int, int]]
    """(side, step, rank) of every graph written."""
    comm: list[tuple[str, int, int, list[CommOp]]]
    """(side, step, rank, communications) for the cross-rank pass."""
    graphs: list[Graph] = field(default_factory=list)


def _process_pair(
    npu_source: GraphSource, bench_source: GraphSource | None, options: GraphOptions, rules, host: Host | None,
) -> tuple[list[Graph], str, int]:
    """Build, match, compute metrics and verdicts (and overflow levels) of one pair."""
    npu = _build(npu_source, NPU, host)
    graphs = [npu]
    task, matched = "", 0
    if bench_source is not None:
        bench = _build(bench_source, BENCH, host)
        graphs.append(bench)
        task, matched = compare_pair(npu, bench, options, host)
    if options.overflow_check:
        for graph in graphs:
            check_overflow(graph, rules)
    return graphs, task, matched


def _summary(graphs: list[Graph], task: str, matched: int, nodes: int, options: GraphOptions, link: bool) -> PairResult:
    compare = options.golden is not None
    comm = [(g.side, g.step, g.rank, comm_ops(g, compare, options.overflow_check)) for g in graphs] if link else []
    return PairResult(task, matched, max(g.micro_steps for g in graphs), nodes,
                      [(g.side, g.step, g.rank) for g in graphs], comm)


_WORKER_HOST: Host | None = None


def _worker_host() -> Host | None:
    global _WORKER_HOST
    if _WORKER_HOST is None:
        _WORKER_HOST = Host()
    return _WORKER_HOST


def _pair_worker(
    npu_source: GraphSource, bench_source: GraphSource | None, options: GraphOptions, rules, link: bool, part: Path,
) -> PairResult:
    """One pair end to end in a worker process; its db rows go to the scratch file ``part``."""
    graphs, task, matched = _process_pair(npu_source, bench_source, options, rules, _worker_host())
    nodes = write_part(part, graphs, options.golden is not None, task)
    return _summary(graphs, task, matched, nodes, options, link)


def _pair_unit(unit: tuple[int, GraphSource, GraphSource | None], options: GraphOptions, rules, link: bool,
               scratch: Path) -> PairResult:
    """:func:`_pair_worker` for one ``(index, target, golden)`` unit; its rows go to ``part{index}.db``."""
    index, npu_source, bench_source = unit
    return _pair_worker(npu_source, bench_source, options, rules, link, scratch / f"part{index}.db")


def default_jobs(pairs: int) -> int:
    """Worker processes used when ``GraphOptions.jobs`` is not set."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, pairs)) if pairs > 1 else 1


def _run_pairs(
    pairs: list[tuple[GraphSource, GraphSource | None]], options: GraphOptions, rules, host: Host | None,
    writer: VisDbWriter, link: bool, progress: Progress,
) -> list[PairResult]:
    """Process every pair, serially or in worker processes, writing its rows into ``writer``."""
    compare = options.golden is not None
    workers = options.jobs if options.jobs is not None else default_jobs(len(pairs))
    workers = max(1, min(workers, len(pairs)))
    results: list[PairResult] = []
    if workers == 1:
        for npu_source, bench_source in pairs:
            graphs, task, matched = _process_pair(npu_source, bench_source, options, rules, host)
            nodes = sum(writer.write_graph(g, compare, task) for g in graphs)
            result = _summary(graphs, task, matched, nodes, options, link)
            result.graphs = graphs
            results.append(result)
            progress.step()
        return results
    scratch = temp_dir(options.output, "graph")
    try:
        units = [(i, npu_source, bench_source) for i, (npu_source, bench_source) in enumerate(pairs)]
        for (index, _, _), result in zip(units, runtime.run_each(_pair_unit, units, options, rules, link, scratch,
                                                                 workers=workers)):
            results.append(result)
            writer.copy_part(scratch / f"part{index}.db")
            (scratch / f"part{index}.db").unlink()
            progress.step()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def _link_in_db(results: list[PairResult], writer: VisDbWriter) -> int:
    """The cross-rank pass: link the communications of every side and step, update the db rows."""
    groups: dict[tuple[str, int], dict[int, list[CommOp]]] = defaultdict(dict)
    for result in results:
        for side, step, rank, ops in result.comm:
            groups[(side, step)][rank] = ops
    by_graph = {(g.side, g.step, g.rank): g for r in results for g in r.graphs}
    updates: list[tuple[str, str]] = []
    for (side, step), ops_by_rank in groups.items():
        if len(ops_by_rank) < 2:
            continue
        for (rank, name), entry in link_comm_ops(ops_by_rank).items():
            updates.append((f"{side}_{step}_{rank}_{name}", json.dumps(entry)))
            graph = by_graph.get((side, step, rank))
            if graph is not None:
                graph.nodes[name].distributed = entry
    writer.update_distributed(updates)
    return len(updates)


def _merged_graphs(kind: str, pairs, options: GraphOptions, rules, host: Host | None) -> tuple[list[Graph], str, int]:
    """Parallel-merge mode: build every rank, merge each side, compare the merged graphs."""
    compare = options.golden is not None
    golden_sources: list[GraphSource] = []
    if compare:
        kind_g, golden_sources = discover(options.golden, (host or default_host()).plan_compare)
        if kind_g != kind:
            raise InputError(f"has layout '{kind_g}' but the target path has layout '{kind}'", options.golden)
    jobs = [(s, NPU) for s, _ in pairs] + [(g, BENCH) for g in golden_sources]
    built_all = build_graphs(jobs, host)
    framework_rules = graph_rules(host)
    npu_graphs = merge_side(built_all[: len(pairs)], options.merge[0], options.target, framework_rules)
    bench_graphs = (merge_side(built_all[len(pairs):], options.merge[-1], options.golden, framework_rules)
                    if compare else [])
    if compare and len(npu_graphs) != len(bench_graphs):
        raise InputError(
            f"merges into {len(bench_graphs)} graphs but the target merges into {len(npu_graphs)}; "
            "both sides need the same data-parallel size", options.golden,
        )
    graphs: list[Graph] = []
    task, matched = "", 0
    for index, npu_graph in enumerate(npu_graphs):
        bench_graph = bench_graphs[index] if compare else None
        if bench_graph is not None:
            bench_graph.rank, bench_graph.step = npu_graph.rank, npu_graph.step
            task, count = compare_pair(npu_graph, bench_graph, options, host, True)
            matched += count
        for graph in (npu_graph, bench_graph):
            if graph is not None:
                if options.overflow_check:
                    check_overflow(graph, rules)
                graphs.append(graph)
    return graphs, task, matched


def run_graph(options: GraphOptions, host: Host | None = None) -> GraphRun:
    """Run ``graph_visualize``; returns the db written (and the graphs, for callers and tests)."""
    prepare_output_dir(options.output)
    stamp = options.timestamp or time.strftime("%Y%m%d%H%M%S")
    compare = options.golden is not None
    merged = bool(options.merge)
    rules = load_rules(options.overflow_rules) if options.overflow_check else None
    plan = (host or default_host()).plan_compare
    if compare and not merged:
        kind, pairs = pair_sources(options.target, options.golden, plan)
    else:
        kind, sources = discover(options.target, plan)
        pairs = [(s, None) for s in sources]
    progress = Progress(options.progress_log, len(pairs) + 1)
    if options.file_type == "json":
        if not merged or compare:
            raise InputError("--file_type json is only supported for a parallel-merge build")
        graphs, _task, _matched = _merged_graphs(kind, pairs, options, rules, host)
        dirs = [write_graph_json(g, options.output) for g in graphs]
        progress.done = len(pairs)
        progress.step("done")
        return GraphRun(db=None, graphs=graphs, nodes=sum(len(g) for g in graphs), json_dirs=dirs)
    db_path = options.output / f"{'compare' if compare else 'build'}_{stamp}.vis.db"
    writer = VisDbWriter(db_path)
    try:
        if merged:
            graphs, task, matched = _merged_graphs(kind, pairs, options, rules, host)
            nodes = sum(writer.write_graph(g, compare, task) for g in graphs)
            micro_steps = max((g.micro_steps for g in graphs), default=1)
            keys = [(g.side, g.step, g.rank) for g in graphs]
            progress.done = len(pairs)
        else:
            link = kind in ("ranks", "steps")
            results = _run_pairs(pairs, options, rules, host, writer, link, progress)
            _link_in_db(results, writer)
            graphs = [g for r in results for g in r.graphs]
            task = next((r.task for r in reversed(results) if r.task), "")
            matched = sum(r.matched for r in results)
            nodes = sum(r.nodes for r in results)
            micro_steps = max((r.micro_steps for r in results), default=1)
            keys = [k for r in results for k in r.keys]
        writer.write_config(compare, task, micro_steps, options.overflow_check,
                            (k[2] for k in keys), (k[1] for k in keys))
        db = writer.close()
    except BaseException as exc:
        writer.abort()
        if no_space(exc):
            raise write_error(exc, db_path) from None
        raise
    run = GraphRun(db=db, graphs=graphs, nodes=nodes, matched=matched)
    if options.html:
        run.html = write_html(db)
    progress.step("done")
    return run


def matched_pairs(graph: Graph) -> list[tuple[GraphNode, GraphNode]]:
    """(NPU node, Bench node) pairs of a compared NPU graph, in node order."""
    return [(n, n.match) for n in sorted(graph.nodes.values(), key=lambda n: n.order) if n.match is not None]
