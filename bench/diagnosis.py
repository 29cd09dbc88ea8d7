#!/usr/bin/env python
"""Diagnosis accuracy on a corpus of fault / clean cases (the layout of fixtures/diagnosis).

    python bench/diagnosis.py CORPUS_DIR [CORPUS_DIR ...] [--cases] [--json OUT.json]
    python bench/diagnosis.py --speed PAIR_DIR       # PAIR_DIR/{target,golden}/step0 (bench/gen_dump.py)

Every sub-folder with a ``case.json`` is one case: ``probe_args`` name the target and golden
paths, ``accept`` / ``accept_steps`` the right answers. For each case the compare runs once;
then three answers are scored:

* ``probe``: the first suspects of the diagnosis (top-1, top-3);
* ``first error``: the node of the first row whose Result is ``error`` (msProbe's first error row);
* ``-da``: msProbe's first-divergence rule (first node with an output relative error > 50%).

A clean case is right when the verdict is ``noise`` or ``identical`` with no suspects (for the
baselines: when they name nothing). Prints one line per case with ``--cases`` and a table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path

import probe
from probe.analysis import first_divergence
from probe.diagnosis.facts import rank_facts, step_of
from probe.diagnosis.rank import diagnose_facts
from probe.model import ERROR

_ROW_MODULE = re.compile(r"^(Module\..*?\.(?:forward|backward|parameters_grad)\.\d+)(?:\.|$)")
_ROW_API = re.compile(r"^(.*?\.\d+\.(?:forward|backward))(?:\.|$)")


def row_node(row: str) -> str:
    """The call name of a report row (``X.0.forward.output.0`` -> ``X.0.forward``)."""
    match = (_ROW_MODULE if row.startswith(("Module.", "Cell.")) else _ROW_API).match(row)
    return match.group(1) if match else row


def run_case(case_dir: Path) -> dict:
    """Compare and diagnose one case; return the three answers and the timings."""
    case = json.loads((case_dir / "case.json").read_text())
    args = case["probe_args"]
    started = time.perf_counter()
    run = probe.compare(case_dir / args["tp"], case_dir / args["gp"])
    compared = time.perf_counter()
    diagnosis = diagnose_facts([rank_facts(r) for r in run.results])
    diagnosed = time.perf_counter()
    results = sorted(run.results, key=lambda r: (step_of(r.target.path), r.rank or 0))
    first_error = None
    for result in results:
        row = next((r.name for r in result.records if r.verdict == ERROR), None)
        if row is not None:
            first_error = (row_node(row), step_of(result.target.path))
            break
    da = None
    steps = sorted({step_of(r.target.path) for r in results})
    for step in steps:
        found = first_divergence([r for r in results if step_of(r.target.path) == step])
        if found.found:
            da = (found.first().entry, step)
            break
    return {
        "name": case_dir.name, "kind": case["kind"], "accept": set(case.get("accept") or ()),
        "steps": set(case.get("accept_steps") or [0]), "verdict": diagnosis.verdict,
        "probe": [(s.node, s.step, s.kind) for s in diagnosis.suspects],
        "first_error": first_error, "da": da,
        "compare_s": compared - started, "diagnose_s": diagnosed - compared,
        "fault": case.get("fault_kind", ""), "dtype": case.get("dtype_target", ""),
    }


def _hit(answer: tuple | None, case: dict) -> bool:
    return answer is not None and answer[0] in case["accept"] and answer[1] in case["steps"]


def score(cases: list[dict]) -> dict:
    """Top-1 / top-3 over fault cases and right answers over clean cases, per method."""
    faults = [c for c in cases if c["kind"] == "fault"]
    clean = [c for c in cases if c["kind"] != "fault"]
    out = {"fault_cases": len(faults), "clean_cases": len(clean)}
    out["probe"] = {
        "top1": sum(bool(c["probe"]) and _hit(c["probe"][0], c) for c in faults),
        "top3": sum(any(_hit(s, c) for s in c["probe"][:3]) for c in faults),
        "clean_ok": sum(c["verdict"] in ("noise", "identical") and not c["probe"] for c in clean),
    }
    for method in ("first_error", "da"):
        out[method] = {
            "top1": sum(_hit(c[method], c) for c in faults),
            "top3": sum(_hit(c[method], c) for c in faults),
            "clean_ok": sum(c[method] is None for c in clean),
        }
    return out


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def speed(pair: Path, repeat: int = 3) -> int:
    """What diagnosis adds to a statistics compare that writes its CSV (best of ``repeat``).

    The compare runs with the analyzers off (``analyze=False``: otherwise it would already hold
    the diagnosis it is measured against); the diagnosis is then made from its results exactly
    as the analyzer makes it (facts, ranking, ``diagnosis_{ts}.json``). Times are CPU seconds of
    this process and its finished children (a large golden dump is read by a forked child),
    steadier than wall time on a shared machine.
    """
    import tempfile

    from probe.diagnosis.facts import rank_facts as facts_of

    best_compare = best_diag = math.inf
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            started = _cpu()
            run = probe.compare(pair / "target" / "step0", pair / "golden" / "step0", tmp, analyze=False)
            compared = _cpu()
            diagnosis = diagnose_facts([facts_of(r) for r in run.results])
            diagnosis.write(Path(tmp), "00000000000000")
            done = _cpu()
        rows = sum(len(r.records) for r in run.results)
        best_compare, best_diag = min(best_compare, compared - started), min(best_diag, done - compared)
        del run, diagnosis
    print(f"{pair}: {rows} rows; compare + csv {best_compare:.2f} s, diagnosis {best_diag:.2f} s CPU "
          f"(+{100 * best_diag / best_compare:.1f}%)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="+", type=Path)
    parser.add_argument("--cases", action="store_true", help="one line per case")
    parser.add_argument("--json", type=Path, help="write the per-case answers and the scores here")
    parser.add_argument("--speed", action="store_true", help="time diagnosis against the compare of a dump pair")
    args = parser.parse_args(argv)
    if args.speed:
        return max(speed(pair) for pair in args.corpus)
    case_dirs = sorted(p.parent for corpus in args.corpus for p in corpus.glob("*/case.json"))
    if not case_dirs:
        print(f"no case.json under {', '.join(map(str, args.corpus))}", file=sys.stderr)
        return 2
    cases = []
    for case_dir in case_dirs:
        case = run_case(case_dir)
        cases.append(case)
        if args.cases:
            mark = "ok " if (case["kind"] == "fault" and case["probe"] and _hit(case["probe"][0], case)) or (
                case["kind"] != "fault" and not case["probe"]) else "top3" if any(
                _hit(s, case) for s in case["probe"][:3]) else "MISS"
            first = case["probe"][0] if case["probe"] else None
            print(f"{mark:4s} {case['name']:50s} {case['verdict']:9s} {first}", flush=True)
    result = score(cases)
    faults, clean = result["fault_cases"], result["clean_cases"]
    print(f"\n{len(cases)} cases: {faults} fault, {clean} clean")
    print(f"{'method':12s} {'top-1':>12s} {'top-3':>12s} {'clean ok':>12s}")
    for method, label in (("probe", "probe"), ("first_error", "first error"), ("da", "-da")):
        r = result[method]
        def pct(n: int, d: int) -> str:
            return f"{n}/{d} {100 * n / d:3.0f}%" if d else "-"
        print(f"{label:12s} {pct(r['top1'], faults):>12s} {pct(r['top3'], faults):>12s} {pct(r['clean_ok'], clean):>12s}")
    compare_s = sum(c["compare_s"] for c in cases)
    diagnose_s = sum(c["diagnose_s"] for c in cases)
    print(f"time: compare {compare_s:.2f} s, diagnosis {diagnose_s:.2f} s ({100 * diagnose_s / compare_s:.0f}%)")
    if args.json:
        args.json.write_text(json.dumps({"scores": result, "cases": [
            {**c, "accept": sorted(c["accept"]), "steps": sorted(c["steps"])} for c in cases]}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
