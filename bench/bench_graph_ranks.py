#!/usr/bin/env python3
"""Multi-rank graph compare, serial against worker processes.

    python bench/bench_graph_ranks.py [--ranks 4] [--apis 10000] [--jobs 1 2] [--repeat 2]

Generates a target/golden pair with bench/gen_dump.py --ranks N once, then runs
graph_visualize on step0 (every rank pair) with each --jobs value in turn and prints the wall
time of each run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

GEN = Path(__file__).with_name("gen_dump.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--apis", type=int, default=10_000, help="entries per rank")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/probe-bench"))
    args = parser.parse_args()
    root = args.work / f"ranks{args.ranks}_{args.apis}"
    if not (root / "golden" / "step0" / f"rank{args.ranks - 1}" / "dump.json").exists():
        subprocess.run([sys.executable, str(GEN), "--apis", str(args.apis), "--ranks", str(args.ranks),
                        "--out", str(root), "--force"], check=True)

    from probe.graph.service import GraphOptions, run_graph
    from probe.plugins import Host

    host = Host()
    _ = host.modes
    for _round in range(args.repeat):
        for jobs in args.jobs:
            start = time.perf_counter()
            run = run_graph(GraphOptions(target=root / "target" / "step0", golden=root / "golden" / "step0",
                                         output=args.work / f"out_jobs{jobs}", jobs=jobs), host)
            print(f"jobs={jobs}: {run.nodes} nodes, {time.perf_counter() - start:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
