#!/usr/bin/env python3
"""Benchmark the regression workflows: N-way compare and ``probe diff``.

Generates (with ``bench/gen_dump.py``, cached under ``--data``) dump pairs of the same
network with the same seed and different perturbations; the generator's target side is the
same in every pair, so it serves as the common golden and the perturbed sides as targets.
Then times, as child processes (wall time, peak RSS of the largest process):

- ``probe compare -gp G -tp T1 ... -tp Tn`` (one run, one pool) against n two-way compares
  run one after the other with the same ``-j``;
- ``probe diff`` of two of the reports written (CSV), and of the JSON versions.

    python bench/regression.py --apis 20000 --targets 3 --ranks 2 --jobs 2

Nothing here runs in CI: benchmarks are run on demand.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import timed  # noqa: E402  (bench/run.py: wall time and peak RSS of a child process)

PERTURB = ("1e-3", "1e-2", "1e-4", "1e-1", "3e-3", "3e-2")


def generate(data: Path, apis: int, ranks: int, perturb: str) -> Path:
    """A cached dump pair; returns its root (``target/`` and ``golden/`` inside)."""
    root = data / f"reg_a{apis}_r{ranks}_p{perturb}"
    if not (root / "golden").is_dir():
        gen = HERE / "gen_dump.py"
        subprocess.run([sys.executable, str(gen), "--mode", "statistics", "--apis", str(apis), "--ranks", str(ranks),
                        "--perturb", perturb, "--seed", "7", "--out", str(root), "--force"],
                       check=True, stdout=subprocess.DEVNULL)
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apis", type=int, default=20000)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--targets", type=int, default=3, choices=range(2, len(PERTURB) + 1))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "probe-bench")
    args = parser.parse_args(argv)
    probe = [sys.executable, "-m", "probe"]
    roots = [generate(args.data, args.apis, args.ranks, p) for p in PERTURB[: args.targets]]
    golden = roots[0] / "target/step0"
    targets = [r / "golden/step0" for r in roots]
    work = Path(tempfile.mkdtemp(prefix="probe-bench-reg-"))
    log = work / "log.txt"
    try:
        nway = [*probe, "compare", "-gp", str(golden), "-o", str(work / "nway"), "-c", "-j", str(args.jobs),
                "--format", "csv,json"]
        for index, target in enumerate(targets):
            nway += ["-tp", str(target), "--label", f"t{index}"]
        n_run = timed(nway, log)
        two = [timed([*probe, "compare", "-gp", str(golden), "-tp", str(t), "-o", str(work / f"two{i}"), "-c",
                      "-j", str(args.jobs), "--format", "csv,json"], log) for i, t in enumerate(targets)]
        old, new = work / "nway/t0", work / "nway/t1"
        diff_dir = timed([*probe, "diff", str(old), str(new), "-o", str(work / "diff")], log)
        json_old = sorted(old.glob("*.json"))[0]
        json_new = sorted(new.glob("*.json"))[0]
        diff_json = timed([*probe, "diff", str(json_old), str(json_new)], log)
        rows = sum(1 for p in old.glob("*.csv") for _ in open(p, encoding="utf-8")) - len(list(old.glob("*.csv")))
        print(f"{args.targets} targets, {args.ranks} ranks, {args.apis} entries per rank, -j {args.jobs}")
        print(f"N-way compare (one run)      {n_run.wall:7.2f} s  peak {n_run.peak_mib:7.0f} MiB  exit {n_run.code}")
        print(f"{args.targets} two-way compares in turn  {sum(r.wall for r in two):7.2f} s  "
              f"peak {max(r.peak_mib for r in two):7.0f} MiB")
        print(f"diff of two output dirs      {diff_dir.wall:7.2f} s  peak {diff_dir.peak_mib:7.0f} MiB  "
              f"({rows} rows per side, csv+json+md written)")
        print(f"diff of two JSON reports     {diff_json.wall:7.2f} s  peak {diff_json.peak_mib:7.0f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
