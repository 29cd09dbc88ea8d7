#!/usr/bin/env python3
"""Benchmark of graph_visualize on a large synthetic dump pair (default 50k nodes per side).

    python bench/bench_graph.py [--apis 50000] [--work DIR] [--html]

Generates the pair with bench/gen_dump.py (or $PROBE_GEN_DUMP) once, then
times each phase in-process: build both graphs, match, metrics + verdicts, db write,
and the HTML viewer. Prints one line per phase and the peak RSS.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

GEN = Path(os.environ.get("PROBE_GEN_DUMP", Path(__file__).with_name("gen_dump.py")))


def generate(work: Path, apis: int) -> Path:
    """Create (once) a statistics dump pair with ``apis`` entries per side."""
    out = work / f"graph_{apis}"
    if not (out / "golden" / "step0" / "rank0" / "dump.json").exists():
        subprocess.run([sys.executable, str(GEN), "--mode", "statistics", "--apis", str(apis), "--out", str(out),
                        "--mismatch-frac", "0.01", "--force"], check=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apis", type=int, default=50_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/probe-bench"))
    parser.add_argument("--html", action="store_true", help="also time the HTML viewer")
    parser.add_argument("--jobs", type=int, default=1, help="processes building the two graphs (1 = serial)")
    args = parser.parse_args()
    root = generate(args.work, args.apis)
    target, golden = root / "target" / "step0" / "rank0", root / "golden" / "step0" / "rank0"

    from probe.graph.build import build_graph
    from probe.graph.db import VisDbWriter
    from probe.graph.matching import match_graphs
    from probe.graph.metrics import compare_task, compute_metrics
    from probe.graph.node import BENCH, NPU
    from probe.graph.verdict import judge_collections, judge_graph
    from probe.plugins import Host

    host = Host(entrypoints=False)
    _ = host.modes
    times: list[tuple[str, float]] = []

    def phase(name, fn):
        start = time.perf_counter()
        value = fn()
        times.append((name, time.perf_counter() - start))
        return value

    if args.jobs > 1:
        from probe.graph.layout import GraphSource
        from probe.graph.service import build_graphs

        jobs = [(GraphSource(target, 0, 0), NPU), (GraphSource(golden, 0, 0), BENCH)]
        npu, bench = phase(f"build both graphs ({args.jobs} procs)", lambda: build_graphs(jobs, args.jobs))
    else:
        npu = phase("build target graph", lambda: build_graph(target))
        bench = phase("build golden graph", lambda: build_graph(golden, BENCH))
    matched = phase("match", lambda: match_graphs(npu, bench))
    task = compare_task(npu, bench)
    mode, by_node = phase("metrics (statistics mode)", lambda: compute_metrics(
        [(n, n.match) for n in npu.nodes.values() if n.match is not None], npu, bench, task, host))
    phase("verdicts", lambda: (judge_graph(by_node, mode), judge_collections(list(npu.nodes.values()))))
    out = args.work / "out"
    out.mkdir(parents=True, exist_ok=True)

    def write():
        writer = VisDbWriter(out / "compare_bench.vis.db")
        writer.write_config(True, task, npu.micro_steps, False, [0], [0])
        writer.write_graph(npu, True, task)
        writer.write_graph(bench, True, task)
        return writer.close()

    db = phase("write .vis.db", write)
    if args.html:
        from probe.viewer.writer import write_html

        html = phase("write HTML viewer", lambda: write_html(db))
        print(f"html: {html} ({html.stat().st_size / 1e6:.1f} MB)")
    total = sum(t for _, t in times)
    print(f"nodes: target {len(npu)}, golden {len(bench)}, matched pairs {matched}; rows {len(npu.dump.rows)}")
    for name, seconds in times:
        print(f"{name:28s} {seconds:7.2f} s")
    print(f"{'total':28s} {total:7.2f} s; db {db.stat().st_size / 1e6:.1f} MB; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
