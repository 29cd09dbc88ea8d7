#!/usr/bin/env python3
"""Precision and recall of automatic matching on corpora of dump pairs with a ground truth.

    python bench/automatch.py CORPUS [CORPUS ...]          # per case and overall, plain vs --auto-match
    python bench/automatch.py --speed 50000 [--work DIR]   # time of a plain vs an --auto-match compare

A corpus is a directory of cases, or one case: ``<case>/truth.json`` holds
``{"probe_args": ["-tp", T, "-gp", G], "pairs": {target row: golden row | null}}`` (the
format of the automatic-matching fixtures). Scoring: precision = correct pairs / pairs made
on listed rows (a pair on a row whose truth is null is wrong), recall = correct pairs /
non-null truth rows; "renamed recall" counts only the truth pairs whose names differ.

--speed generates a statistics dump pair with bench/gen_dump.py (or
$PROBE_GEN_DUMP; 1% of the target names changed), then runs ``probe compare`` on it once
plainly and once with ``--auto-match`` (best of --repeat runs each), and prints wall and
CPU time (CPU time of all processes: on a shared machine it moves less with the load).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

GEN = Path(os.environ.get("PROBE_GEN_DUMP", Path(__file__).with_name("gen_dump.py")))


@dataclass
class Score:
    made: int = 0
    correct: int = 0
    truth_pairs: int = 0
    renamed_pairs: int = 0
    renamed_correct: int = 0

    def add(self, other: Score) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def line(self) -> str:
        precision = self.correct / self.made if self.made else 1.0
        recall = self.correct / self.truth_pairs if self.truth_pairs else 1.0
        renamed = self.renamed_correct / self.renamed_pairs if self.renamed_pairs else 1.0
        return f"P {precision:.3f}  R {recall:.3f}  renamed R {renamed:.3f}  (made {self.made}, correct {self.correct})"


def cases_of(corpus: Path) -> list[Path]:
    if (corpus / "truth.json").is_file():
        return [corpus]
    return sorted(p.parent for p in corpus.glob("*/truth.json"))


def bench_names(case: Path, args: list[str], auto: bool) -> dict[str, str | None]:
    """``{target row: golden row | None}`` of one compare of the case (nothing written)."""
    import probe

    target, golden = case / args[args.index("-tp") + 1], case / args[args.index("-gp") + 1]
    run = probe.compare(target, golden, output=None, auto_match=auto or None)
    out: dict[str, str | None] = {}
    for result in run:
        for record in result.records:
            pair = record.pair
            out[pair.target.name] = pair.golden.name if pair.golden is not None else None
    return out


def score(truth: dict[str, str | None], bench: dict[str, str | None]) -> Score:
    s = Score()
    for target, golden in truth.items():
        chosen = bench.get(target)
        if golden is not None:
            s.truth_pairs += 1
            if golden != target:
                s.renamed_pairs += 1
        if chosen is None:
            continue
        s.made += 1
        if chosen == golden:
            s.correct += 1
            if golden != target:
                s.renamed_correct += 1
    return s


def run_corpora(corpora: list[Path]) -> None:
    totals = {False: Score(), True: Score()}
    for corpus in corpora:
        for case in cases_of(corpus):
            truth = json.loads((case / "truth.json").read_text())
            print(case.name)
            for auto in (False, True):
                s = score(truth["pairs"], bench_names(case, truth["probe_args"], auto))
                totals[auto].add(s)
                print(f"  {'--auto-match' if auto else 'plain names '}  {s.line()}")
    print("overall")
    for auto in (False, True):
        print(f"  {'--auto-match' if auto else 'plain names '}  {totals[auto].line()}")


def run_speed(apis: int, work: Path, repeat: int) -> None:
    out = work / f"automatch_{apis}"
    if not (out / "golden" / "step0" / "rank0" / "dump.json").exists():
        subprocess.run([sys.executable, str(GEN), "--mode", "statistics", "--apis", str(apis), "--out", str(out),
                        "--mismatch-frac", "0.01", "--force"], check=True)
    target = out / "target" / "step0" / "rank0" / "dump.json"
    golden = out / "golden" / "step0" / "rank0" / "dump.json"
    probe = Path(sys.executable).with_name("probe")
    times: dict[str, tuple[float, float]] = {}
    for label, extra in (("plain", []), ("--auto-match", ["--auto-match"])):
        best_wall = best_cpu = float("inf")
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as tmp:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run([str(probe), "-q", "compare", "-tp", str(target), "-gp", str(golden), "-o", tmp, *extra],
                               check=True, stdout=subprocess.DEVNULL)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
        times[label] = (best_wall, best_cpu)
        print(f"{label:13s} {best_wall:7.2f} s wall  {best_cpu:7.2f} s CPU (all processes)")
    (pw, pc), (aw, ac) = times["plain"], times["--auto-match"]
    print(f"ratio         {aw / pw:.2f}x wall  {ac / pc:.2f}x CPU  ({apis} APIs per side)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="*", type=Path, help="a directory of cases or one case")
    parser.add_argument("--speed", type=int, metavar="APIS", help="time plain vs --auto-match on a generated pair")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "probe-bench")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    if args.corpus:
        run_corpora(args.corpus)
    if args.speed:
        run_speed(args.speed, args.work, args.repeat)
    if not args.corpus and not args.speed:
        parser.error("give a CORPUS or --speed APIS")


if __name__ == "__main__":
    main()
