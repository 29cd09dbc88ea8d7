#!/usr/bin/env python3
"""Benchmark the "error along the network" chart at scale (on demand, never in CI).

Builds a synthetic diagnosis with ``--points`` ops per series (log-normal errors, a noise floor,
module calls, a few suspects), then times: the chart data (downsampling), the self-contained page,
the PNG (when matplotlib is installed) and, with ``--browser``, headless Chromium from opening the
page to the chart drawn, plus one redraw (a series toggled).

    python bench/bench_chart.py --points 200000 --series 2 --browser
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path


def synthetic(points: int, series: int, seed: int = 3) -> dict:
    """A diagnosis dict in the shared contract: ``series`` lines of ``points`` ops each."""
    rng = random.Random(seed)
    out = []
    suspects = []
    for k in range(series):
        pts = []
        for i in range(points):
            backward = i >= points // 2
            pts.append({"node": f"Functional.op_{i % 97}.{i}.{'backward' if backward else 'forward'}", "order": i,
                        "error": rng.lognormvariate(-9 + 3 * (i > points // 3), 1.2), "floor": 3e-4 if not backward else 1e-3,
                        "module": f"Module.layers.{(i // 50) % 400}.Block.forward.0", "direction": "backward" if backward else "forward",
                        "suspect": None})
        for i in rng.sample(range(points), 5):
            suspects.append({"node": pts[i]["node"], "rank": k, "step": 0, "kind": "introduced", "score": 1.0, "evidence": "synthetic"})
        out.append({"rank": k, "step": 0, "label": f"step0/rank{k}", "points": pts})
    return {"verdict": "divergent", "suspects": suspects, "series": out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--series", type=int, default=2)
    parser.add_argument("--browser", action="store_true", help="also time the page in headless Chromium")
    args = parser.parse_args()
    from probe.viewer.chart import chart_data, render_diagnosis_html, write_png

    diagnosis = synthetic(args.points, args.series)
    t0 = time.perf_counter()
    data = chart_data(diagnosis)
    t1 = time.perf_counter()
    html = render_diagnosis_html(diagnosis)
    t2 = time.perf_counter()
    drawn = sum(len(s["order"]) for s in data["series"])
    print(f"{args.series} x {args.points} points: chart data {t1 - t0:.2f} s ({drawn} points drawn), "
          f"page {t2 - t1:.2f} s, {len(html) / 1e6:.2f} MB")
    work = Path(tempfile.mkdtemp(prefix="probe-bench-chart-"))
    try:
        try:
            t3 = time.perf_counter()
            write_png(diagnosis, work / "chart.png")
            print(f"png {time.perf_counter() - t3:.2f} s, {(work / 'chart.png').stat().st_size / 1e3:.0f} kB")
        except Exception as exc:  # matplotlib missing: say so, go on
            print(f"png skipped: {exc}")
        if args.browser:
            page = work / "chart.html"
            page.write_text(html)
            _browser(page)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _browser(page: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="probe-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", "--window-size=1600,1000"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        t0 = time.perf_counter()
        driver.get(page.as_uri())
        while driver.execute_script("return document.body.dataset.ready") != "1":
            time.sleep(0.02)
        print(f"browser: page open to chart drawn {time.perf_counter() - t0:.2f} s")
        redraw = driver.execute_script(
            "const t = performance.now(); const box = document.querySelector('#chart-series input');"
            "box.click(); box.click(); return performance.now() - t;")
        print(f"browser: two redraws (series toggled off and on) {redraw:.0f} ms")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
