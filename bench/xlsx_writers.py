#!/usr/bin/env python3
"""Measure probe's streaming xlsx writer against XlsxWriter (constant_memory) on a real report.

Each writer runs in its own child process: the child compares a generated dump pair
(``bench/gen_dump.py``, statistics mode) in memory, then writes the same report rows as
xlsx with one writer; only the write is timed. Peak RSS is the child's high-water mark minus
its size before the write. The cell values of both files are read back and compared.

    python bench/xlsx_writers.py --data /tmp/bench-data --apis 50000 --repeat 3
    python bench/xlsx_writers.py --data /tmp/bench-data --apis 200000 --repeat 1

XlsxWriter is optional (``pip install xlsxwriter``); nothing here runs in CI.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_mib() -> float:
    with open("/proc/self/statm") as handle:
        import os

        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def write_home_made(result, path: Path) -> None:
    from probe.exporters import XlsxExporter

    XlsxExporter().write(result, path)


def write_xlsxwriter(result, path: Path) -> None:
    """The same sheet through XlsxWriter: same cells (special floats as text), same fills."""
    import xlsxwriter

    from probe.exporters import HIGHLIGHT_COLUMN, _rows

    columns = result.columns
    fill = columns.index(HIGHLIGHT_COLUMN) if HIGHLIGHT_COLUMN in columns else None
    book = xlsxwriter.Workbook(str(path), {"constant_memory": True, "strings_to_numbers": False,
                                           "strings_to_formulas": False, "strings_to_urls": False})
    formats = {"red": book.add_format({"bg_color": "#FF0000"}), "yellow": book.add_format({"bg_color": "#FFFF00"})}
    sheet = book.add_worksheet("Sheet1")
    write_string, write_number, write_boolean = sheet.write_string, sheet.write_number, sheet.write_boolean
    sheet.write_row(0, 0, columns)
    for r, row in enumerate(_rows(result, ("inf", "-inf")), start=1):
        style = formats.get(row[fill]) if fill is not None else None
        for c, value in enumerate(row):
            cls = value.__class__
            if cls is str:
                if value:
                    write_string(r, c, value, style)
            elif cls is float:
                if math.isfinite(value):
                    write_number(r, c, value, style)
                else:
                    write_string(r, c, "nan" if value != value else ("inf" if value > 0 else "-inf"), style)
            elif cls is int:
                write_number(r, c, value, style)
            elif cls is bool:
                write_boolean(r, c, value, style)
            elif value is None:
                continue
            else:
                write_string(r, c, str(value), style)
    book.close()


WRITERS = {"probe": write_home_made, "xlsxwriter": write_xlsxwriter}


def child(args: argparse.Namespace) -> None:
    """Compare in memory, then time one writer; prints one JSON line."""
    from probe.pipeline import compare

    root = Path(args.dump)
    run = compare(root / "target" / "step0" / "rank0", root / "golden" / "step0" / "rank0", None)
    result = run[0]
    before = _current_mib()
    start = time.perf_counter()
    WRITERS[args.writer](result, Path(args.out))
    wall = time.perf_counter() - start
    print(json.dumps({"wall": wall, "rss_add_mib": max(0.0, _rss_mib() - before), "rows": len(result),
                      "size": Path(args.out).stat().st_size}))


def cells(path: Path) -> list[list[str]]:
    """Every cell value of Sheet1 as text (shared or inline strings, numbers as written)."""
    import xml.etree.ElementTree as ET

    ns = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
    with zipfile.ZipFile(path) as book:
        shared: list[str] = []
        if "xl/sharedStrings.xml" in book.namelist():
            shared = ["".join(t.text or "" for t in si.iter(ns + "t"))
                      for si in ET.fromstring(book.read("xl/sharedStrings.xml")).iter(ns + "si")]
        rows = []
        for _, row in ET.iterparse(book.open("xl/worksheets/sheet1.xml")):
            if row.tag != ns + "row":
                continue
            out = []
            for c in row.iter(ns + "c"):
                kind = c.get("t")
                if kind == "inlineStr":
                    out.append("".join(t.text or "" for t in c.iter(ns + "t")))
                elif kind == "s":
                    out.append(shared[int(c.find(ns + "v").text)])
                else:
                    v = c.find(ns + "v")
                    out.append("" if v is None else repr(float(v.text)) if kind is None else v.text)
            rows.append(out)
            row.clear()
        return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="cache directory of generated dumps (required)")
    parser.add_argument("--apis", type=int, default=50000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-check", action="store_true", help="skip reading both files back (slow at 200k)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--writer", choices=sorted(WRITERS), help=argparse.SUPPRESS)
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    if not args.data:
        parser.error("--data is required")
    dump = Path(args.data) / f"statistics-{args.apis}apis-1ranks"
    if not (dump / "golden" / "step0").is_dir():
        subprocess.run([sys.executable, str(HERE / "gen_dump.py"), "--mode", "statistics", "--apis",
                        str(args.apis), "--out", str(dump), "--force"], check=True)
    figures: dict[str, list[dict]] = {name: [] for name in WRITERS}
    for _ in range(args.repeat):
        for name in WRITERS:  # alternate, so load changes hit both
            out = Path(args.data) / f"report-{name}.xlsx"
            line = subprocess.run([sys.executable, __file__, "--child", "--writer", name, "--dump", str(dump),
                                   "--out", str(out)], check=True, capture_output=True, text=True).stdout
            figures[name].append(json.loads(line.strip().splitlines()[-1]))
    same = args.no_check or cells(Path(args.data) / "report-probe.xlsx") == cells(Path(args.data) / "report-xlsxwriter.xlsx")
    print(f"{args.apis} APIs, {figures['probe'][0]['rows']} rows, median of {args.repeat}; same cell values: {'not checked' if args.no_check else same}")
    print("| writer | write time | added peak RSS | file size |")
    print("|---|---|---|---|")
    for name, runs in figures.items():
        wall = statistics.median(r["wall"] for r in runs)
        rss = statistics.median(r["rss_add_mib"] for r in runs)
        print(f"| {name} | {wall:.2f} s | {rss:.0f} MiB | {runs[0]['size'] / 2**20:.1f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
