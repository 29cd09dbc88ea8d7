#!/usr/bin/env python3
"""Benchmark ``probe compare`` (and optionally msProbe) on generated dump pairs.

Generates a target/golden dump pair with ``bench/gen_dump.py`` (cached under ``--data``),
runs ``probe compare`` ``--repeat`` times as a child process and reports the wall time and
peak resident memory of each run and their medians. When ``PROBE_BENCH_MSPROBE`` names an
msProbe executable (e.g. ``/path/to/venv/bin/msprobe``), msProbe runs on the same data in
the same session, alternating with probe, and the ratios are printed.

    python bench/run.py --apis 50000 --mode statistics
    PROBE_BENCH_MSPROBE=/opt/msprobe/bin/msprobe python bench/run.py --apis 200000 --format xlsx
    python bench/run.py --mode tensor --apis 1500 --tensor-elems 65536 --jobs 2
    python bench/run.py --apis 10000 --ranks 8 --markdown   # prints a table row for docs
    python bench/run.py --suite --repeat 1 --msprobe /opt/msprobe/bin/msprobe   # every issue 15 target

Peak memory is that of the largest single process of the run (as ``/usr/bin/time -v``
reports it) and, in ``tree`` columns, the sampled sum over the whole process tree.
Nothing here runs in CI: benchmarks are run on demand.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Run:
    """One timed child process."""

    wall: float
    cpu: float
    peak_mib: float
    tree_mib: float
    code: int


@dataclass
class Series:
    tool: str
    runs: list[Run] = field(default_factory=list)

    def median(self, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in self.runs)


def dump_dir(args: argparse.Namespace) -> Path:
    """The cached dump pair for these generator settings (generated when missing)."""
    name = f"{args.mode}-{args.apis}apis-{args.ranks}ranks"
    if args.mode == "tensor":
        name += f"-{args.tensor_elems}x{args.dtype}"
    out = Path(args.data) / name
    if not (out / "golden" / "step0").is_dir():
        cmd = [sys.executable, str(HERE / "gen_dump.py"), "--mode", args.mode, "--apis", str(args.apis),
               "--ranks", str(args.ranks), "--tensor-elems", str(args.tensor_elems), "--dtype", args.dtype,
               "--out", str(out), "--force"]
        print("generating:", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return out


def data_bytes(root: Path) -> int:
    """Bytes of tensor files under both sides (msProbe's GB/s counts both dumps)."""
    total = 0
    for side in ("target", "golden"):
        for path in (root / side).rglob("dump_tensor_data/*"):
            total += path.stat().st_size
    return total


def json_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("dump.json"))


def _tree_rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants, from /proc (0 when unreadable)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as handle:
                total += int(handle.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
            with open(f"/proc/{p}/task/{p}/children") as handle:
                todo.extend(int(c) for c in handle.read().split())
        except (OSError, ValueError):
            continue
    return total


def child_env() -> dict[str, str]:
    """The environment of timed runs: this one, but with Python's byte-code cache allowed, as
    on a user's machine (``PYTHONDONTWRITEBYTECODE`` would recompile every module per run)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd``; wall time, CPU time and peak RSS from wait4, tree RSS sampled."""
    env = child_env() if env is None else env
    with open(log, "ab") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        peak_tree = [0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.05):
                peak_tree[0] = max(peak_tree[0], _tree_rss_kib(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        stop.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, peak_tree[0] / 1024, proc.returncode)


def evict(root: Path) -> None:
    """Drop the dump files from the page cache (cold-cache runs)."""
    for path in dump_files(root):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm(root: Path) -> None:
    """Read the dump files once (warm-cache runs: the first timed run does not pay for what
    an earlier workload evicted from the page cache)."""
    buffer = bytearray(8 << 20)
    for path in dump_files(root):
        with open(path, "rb", buffering=0) as handle:
            while handle.readinto(buffer):
                pass


def dump_files(root: Path) -> list[Path]:
    """Every file of a generated dump pair."""
    return [path for path in root.rglob("*") if path.is_file()]


RECORDED_MSPROBE = {
    # (mode, APIs, ranks, format): (wall s, peak GiB) of msProbe 26.2 on the generated dumps,
    # measured side by side on a 2-vCPU machine (docs/performance.md: the CSV figures in round
    # eight, xlsx and tensor in round four; 8 ranks: an earlier machine)
    ("statistics", 50000, 1, "csv"): (47.5, 0.98),
    ("statistics", 200000, 1, "csv"): (199.1, 3.04),
    ("statistics", 200000, 1, "xlsx"): (558.8, 8.00),
    ("md5", 50000, 1, "csv"): (33.2, 0.95),
    ("md5", 200000, 1, "csv"): (138.4, 2.92),
    ("statistics", 10000, 8, "csv"): (65.1, 0.42),
    ("tensor", 765, 1, "csv"): (9.98, 0.38),
}
"""msProbe's figures printed when it is not run (``--msprobe`` / ``PROBE_BENCH_MSPROBE``)."""
TARGETS = {"statistics": 25.0, "md5": 25.0, "tensor": 10.0}
"""Speed-up over msProbe each mode aims at (issue 15); memory: <= 1/4 of msProbe's."""


def step_dirs(root: Path) -> tuple[Path, Path]:
    return root / "target" / "step0", root / "golden" / "step0"


def probe_cmd(args: argparse.Namespace, root: Path, out: Path) -> list[str]:
    target, golden = step_dirs(root)
    cmd = [*args.probe.split(), "compare", "-tp", str(target), "-gp", str(golden), "-o", str(out)]
    if args.format == "xlsx":
        cmd.append("--xlsx")
    if args.jobs:
        cmd += ["-j", str(args.jobs)]
    return cmd + args.probe_args


def msprobe_cmd(exe: str, args: argparse.Namespace, root: Path, out: Path) -> list[str]:
    target, golden = step_dirs(root)
    cmd = [exe, "compare", "-tp", str(target), "-gp", str(golden), "-o", str(out)]
    return cmd + (["--xlsx"] if args.format == "xlsx" else [])


@dataclass
class Outcome:
    """The medians of one workload, probe against msProbe (measured or recorded)."""

    name: str
    probe: Series
    size: int
    mode: str
    ms_wall: float | None = None
    ms_peak_gb: float | None = None
    ms_source: str = ""

    @property
    def speed(self) -> float | None:
        return self.ms_wall / self.probe.median("wall") if self.ms_wall else None

    @property
    def memory(self) -> float | None:
        return self.probe.median("peak_mib") / 1024 / self.ms_peak_gb if self.ms_peak_gb else None


def measure(args: argparse.Namespace) -> Outcome:
    """Run probe (and msProbe when asked) on one generated workload; print every run."""
    root = dump_dir(args)
    work = Path(tempfile.mkdtemp(prefix="probe-bench-out-"))
    log = work / "runs.log"
    size = data_bytes(root) if args.mode == "tensor" else json_bytes(root)
    print(f"data: {root} ({size / 1e9:.3f} GB {'tensor files' if args.mode == 'tensor' else 'dump.json'}, both sides)")
    series = [Series("probe")]
    exe = args.msprobe
    if exe:
        series.append(Series("msprobe"))
    ms_repeat = args.msprobe_repeat if args.msprobe_repeat is not None else args.repeat
    if not args.cold:
        warm(root)
    try:
        for i in range(max(args.repeat, ms_repeat if exe else 0)):
            for s in series:
                if i >= (args.repeat if s.tool == "probe" else ms_repeat):
                    continue
                out = work / f"{s.tool}{i}"
                cmd = probe_cmd(args, root, out) if s.tool == "probe" else msprobe_cmd(exe, args, root, out)
                if args.cold:
                    evict(root)
                run = timed(cmd, log)
                s.runs.append(run)
                rate = f" {size / run.wall / 1e9:.2f} GB/s" if args.mode == "tensor" else ""
                print(f"{s.tool:8s} run {i}: rc={run.code} wall={run.wall:.2f}s cpu={run.cpu:.2f}s "
                      f"peak={run.peak_mib:.0f} MiB tree={run.tree_mib:.0f} MiB{rate}", flush=True)
                if run.code not in (0, 1):
                    print(f"  failed; see {log}", file=sys.stderr)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        if not any(r.code not in (0, 1) for s in series for r in s.runs):
            shutil.rmtree(work, ignore_errors=True)
    print()
    for s in series:
        rate = f"  {size / s.median('wall') / 1e9:.2f} GB/s" if args.mode == "tensor" else ""
        print(f"{s.tool:8s} median wall {s.median('wall'):7.2f}s  cpu {s.median('cpu'):7.2f}s  "
              f"peak {s.median('peak_mib'):6.0f} MiB  tree {s.median('tree_mib'):6.0f} MiB{rate}  (n={len(s.runs)})")
    outcome = Outcome(workload_name(args, size), series[0], size, args.mode)
    recorded = RECORDED_MSPROBE.get((args.mode, args.apis, args.ranks, args.format))
    if exe:
        m = series[1]
        outcome.ms_wall, outcome.ms_peak_gb, outcome.ms_source = m.median("wall"), m.median("peak_mib") / 1024, "measured"
    elif recorded:
        outcome.ms_wall, outcome.ms_peak_gb = recorded
        outcome.ms_source = "recorded"
        print(f"msprobe  {outcome.ms_wall:7.2f}s  peak {outcome.ms_peak_gb * 1024:6.0f} MiB  "
              "(RECORDED figures (docs/performance.md), not run now)")
    if outcome.speed is not None:
        target = TARGETS.get(args.mode, 25.0)
        memory = outcome.memory or 0.0
        print(f"probe vs msProbe ({outcome.ms_source}): {outcome.speed:.1f}x faster (target >= {target:.0f}x: "
              f"{'met' if outcome.speed >= target else 'not met'}), memory {memory:.2f} of msProbe's "
              f"(target <= 0.25: {'met' if memory <= 0.25 else 'not met'})")
    else:
        print("msProbe: no recorded figures for these settings; pass --msprobe EXE to run it")
    return outcome


def workload_name(args: argparse.Namespace, size: int) -> str:
    what = f"{args.mode}, {args.apis:,} APIs" + (f" x {args.ranks} ranks" if args.ranks > 1 else "")
    what += f", {args.format}"
    if args.mode == "tensor":
        what += f", {size / 1e9:.2f} GB"
    return what


SUITE = [
    # (bench arguments, the issue 15 target it checks)
    (["--mode", "statistics", "--apis", "50000"], "speed"),
    (["--mode", "statistics", "--apis", "200000"], "speed"),
    (["--mode", "md5", "--apis", "50000"], "speed"),
    (["--mode", "md5", "--apis", "200000"], "speed"),
    (["--mode", "statistics", "--apis", "200000", "--format", "xlsx"], "speed"),
    (["--mode", "tensor", "--apis", "765", "--tensor-elems", "65536"], "tensor"),
    (["--mode", "statistics", "--apis", "1000000", "--repeat", "1"], "scale"),
]
"""Every issue 15 workload ``--suite`` runs, in order."""
SCALE_LIMITS = (60.0, 2.5)
"""A 1M-API statistics pair: at most this many seconds and GB of peak memory (issue 15)."""
TENSOR_RATE = 1.2
"""GB/s tensor mode aims at on the ~1 GB dump."""
HELP_LIMIT = 0.3


def help_seconds(probe: str, runs: int = 5) -> float:
    """Median wall time of ``probe --help``."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([*probe.split(), "--help"], stdout=subprocess.DEVNULL, check=True, env=child_env())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def suite(parser: argparse.ArgumentParser, common: list[str]) -> int:
    """Run every workload of :data:`SUITE` and print the issue 15 targets side by side."""
    lines: list[list[str]] = []
    peaks: list[tuple[int, float]] = []
    for extra, kind in SUITE:
        args = parser.parse_args([*common, *extra])
        if kind == "scale":
            args.msprobe = None  # msProbe needs about 20 minutes and 15 GB here; the target is absolute
        print(f"\n== {' '.join(extra)}", flush=True)
        o = measure(args)
        wall, peak_gb = o.probe.median("wall"), o.probe.median("peak_mib") / 1024
        ms = f"{o.ms_wall:.1f} s / {o.ms_peak_gb:.2f} GB ({o.ms_source})" if o.ms_wall else "not run"
        if kind == "speed":
            ok = o.speed is not None and o.speed >= 25 and (o.memory or 1) <= 0.25
            goal = ">= 25x, memory <= 1/4"
            ratio = f"{o.speed:.1f}x, {o.memory:.2f}" if o.speed else "-"
        elif kind == "tensor":
            rate = o.size / wall / 1e9
            ok = rate >= TENSOR_RATE and (o.speed or 0) >= 10
            goal = f">= {TENSOR_RATE} GB/s, >= 10x"
            ratio = f"{rate:.2f} GB/s, {o.speed:.1f}x" if o.speed else f"{rate:.2f} GB/s"
        else:
            ok = wall <= SCALE_LIMITS[0] and peak_gb <= SCALE_LIMITS[1]
            goal = f"<= {SCALE_LIMITS[0]:.0f} s, <= {SCALE_LIMITS[1]} GB"
            ratio = "-"
        if args.mode == "statistics" and args.format == "csv":
            peaks.append((args.apis, peak_gb))
        lines.append([o.name, f"{wall:.2f} s / {peak_gb:.2f} GB", ms, ratio, goal, verdict(ok)])
    if len(peaks) >= 2:
        (a0, p0), (a1, p1) = peaks[0], peaks[-1]
        growth = p1 / p0
        lines.append([f"memory growth, {a0:,} -> {a1:,} APIs ({a1 / a0:.0f}x)", f"{growth:.1f}x", "", "",
                      f"< {a1 / a0:.0f}x (sub-linear)", verdict(growth < a1 / a0)])
    probe_help = help_seconds(parser.parse_args(common).probe)
    lines.append(["probe --help", f"{probe_help:.2f} s", "", "", f"< {HELP_LIMIT} s", verdict(probe_help < HELP_LIMIT)])
    print("\n| workload | probe wall / peak | msProbe wall / peak | speed-up, memory share | target | |")
    print("| --- | --- | --- | --- | --- | --- |")
    for cells in lines:
        print("| " + " | ".join(cells) + " |")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["statistics", "md5", "tensor"], default="statistics")
    ap.add_argument("--apis", type=int, default=10000, help="entries per rank in dump.json")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--tensor-elems", type=int, default=4096, help="elements per tensor (tensor mode)")
    ap.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    ap.add_argument("--format", choices=["csv", "xlsx"], default="csv")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool (median reported)")
    ap.add_argument("--msprobe-repeat", type=int, default=None, help="runs of msProbe (default: --repeat)")
    ap.add_argument("--jobs", type=int, default=0, help="probe -j (default: probe's own default)")
    ap.add_argument("--cold", action="store_true", help="evict the dump from the page cache before each run")
    ap.add_argument("--data", default=os.environ.get("PROBE_BENCH_DATA", str(Path(tempfile.gettempdir()) / "probe-bench")),
                    help="where generated dumps are cached (env PROBE_BENCH_DATA)")
    ap.add_argument("--probe", default=f"{sys.executable} -m probe", help="probe command line")
    ap.add_argument("--probe-args", nargs=argparse.REMAINDER, default=[], help="extra probe compare arguments")
    ap.add_argument("--markdown", action="store_true", help="print a docs/performance.md table row")
    ap.add_argument("--suite", action="store_true",
                    help="run every issue 15 workload (statistics/md5/xlsx/tensor/1M-API scale, --help) and "
                         "print one table of targets; other options apply to each run")
    ap.add_argument("--msprobe", metavar="EXE", default=os.environ.get("PROBE_BENCH_MSPROBE"),
                    help="run this msprobe executable side by side (takes minutes; env PROBE_BENCH_MSPROBE); "
                         "without it the recorded msProbe figures are printed, labelled as such")
    argv = sys.argv[1:] if argv is None else argv
    args = ap.parse_args(argv)
    if args.suite:
        return suite(ap, [a for a in argv if a != "--suite"])
    outcome = measure(args)
    if args.markdown:
        p = outcome.probe
        cells = [outcome.name, f"{p.median('wall'):.2f} s", f"{p.median('peak_mib') / 1024:.2f} GB"]
        if outcome.ms_source == "measured":
            cells += [f"{outcome.ms_wall:.1f} s", f"{outcome.ms_peak_gb:.2f} GB", f"{outcome.speed:.1f}x"]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
