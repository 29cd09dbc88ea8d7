"""Issue 17 acceptance: the "error along the network" chart on real dumps with an injected fault.

The viewer (``probe graph --html``) and the diagnosis page (``probe diagnose --html``) are opened in
headless Chromium: the first suspect's marker must sit at the fault's position in the chart, and a
click on it must open that node. Screenshots go to the test's tmp dir (and to $PROBE_TEST_ARTIFACTS
when set). ``--png`` writes a picture of the chart of the right size.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from pathlib import Path

import pytest

from viewer_browser import browser, open_page, wait  # noqa: F401  (browser is a fixture)

CASES = Path(__file__).parent / "data" / "diagnosis"  # shared with the diagnosis tests
DIV_SCALE = CASES / "s09_convgn_div_channel_scale_fp32"  # one step: inf/NaN from a division
LR_STEP1 = CASES / "s11_convgn_lr_step1_u2_fp32"  # two steps: a weight update gone wrong, seen in step 1


def _case(case: Path) -> dict:
    return json.loads((case / "case.json").read_text())


def _args(case: Path) -> list[str]:
    args = _case(case)["probe_args"]
    return ["-tp", str(case / args["tp"]), "-gp", str(case / args["gp"])]


def _keep(shot: Path) -> None:
    target = os.environ.get("PROBE_TEST_ARTIFACTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(target) / shot.name)


def _fault_point(diagnosis: dict, accept: list[str], steps: list[int]) -> tuple[dict, dict]:
    """The series and point of the fault in the diagnosis (the accepted node the first suspect names)."""
    first = diagnosis["suspects"][0]
    assert first["node"] in accept and first["step"] in steps, f"first suspect {first} is not the injected fault"
    series = next(s for s in diagnosis["series"] if (s["step"], s["rank"]) == (first["step"], first["rank"]))
    point = next(p for p in series["points"] if p["node"] == first["node"])
    return series, point


def _marker_sits_on(browser, order: float) -> None:
    """Suspect 1's marker is drawn at x(order) of the chart's own axis (within a pixel)."""
    from selenium.webdriver.common.by import By

    chart = browser.find_element(By.ID, "error-chart")
    left, right = float(chart.get_attribute("data-left")), float(chart.get_attribute("data-right"))
    lo, hi = float(chart.get_attribute("data-order-min")), float(chart.get_attribute("data-order-max"))
    expected_x = left + (order - lo) / (hi - lo) * (right - left)
    box = browser.execute_script(
        "const c = document.getElementById('error-chart').getBoundingClientRect();"
        "const m = document.querySelector('.suspect-marker[data-suspect=\"1\"] circle').getBoundingClientRect();"
        "return [m.left + m.width / 2 - c.left, m.width];")
    assert abs(box[0] - expected_x) <= 1.0, (box, expected_x)
    assert box[1] >= 12  # a visible marker, not a dot


@pytest.mark.browser
@pytest.mark.parametrize("case", [DIV_SCALE, LR_STEP1], ids=lambda c: c.name[:3])
def test_viewer_chart_marks_the_fault_and_opens_it(browser, run_probe, tmp_path, case):
    from selenium.webdriver.common.by import By

    import probe

    truth = _case(case)
    done = run_probe("graph", *_args(case), "-o", tmp_path, "--html")
    assert done.code == 0, done.out + done.err
    page = next(tmp_path.glob("compare_*.html"))
    diagnosis = probe.diagnose(*_args(case)[1::2]).to_dict()
    series, point = _fault_point(diagnosis, truth["accept"], truth["accept_steps"])
    node = point["node"]

    open_page(browser, page)
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-panel:not([hidden]) #error-chart")
    # the series of the fault's step is drawn; the others are switched off to test the marker alone
    for toggle in browser.find_elements(By.CSS_SELECTOR, "#chart-series input"):
        label = toggle.find_element(By.XPATH, "..").text
        if (label == series["label"]) != toggle.is_selected():
            toggle.click()
    marker = browser.find_element(By.CSS_SELECTOR, '.suspect-marker[data-suspect="1"]')
    assert marker.get_attribute("data-node") == node
    _marker_sits_on(browser, point["order"])
    # the suspect list says the same, with the evidence
    first_item = browser.find_element(By.CSS_SELECTOR, "#suspect-list li")
    assert node in first_item.text and diagnosis["suspects"][0]["evidence"] in first_item.text

    marker.click()
    wait(browser, lambda d: d.find_elements(By.ID, "details-name") and d.find_element(By.ID, "details-name").text == node)
    assert f"step {series['step']}, rank {series['rank']}" in browser.find_element(By.ID, "title").text
    assert browser.find_elements(By.CSS_SELECTOR, f'#pane-NPU .row.selected[data-name="{node}"]')
    assert browser.find_elements(By.CSS_SELECTOR, f'#pane-Bench .row.selected[data-name="{node}"]')
    assert diagnosis["suspects"][0]["evidence"] in browser.find_element(By.ID, "details-note").text
    assert browser.find_element(By.ID, "details-verdict").text == "error"
    # hovering the chart names an op
    from selenium.webdriver.common.action_chains import ActionChains

    # the chart was redrawn with the selected node ringed on the marker's point
    assert browser.find_element(By.CSS_SELECTOR, "#error-chart circle.selected-point").get_attribute("data-node") == node
    marker = browser.find_element(By.CSS_SELECTOR, '.suspect-marker[data-suspect="1"]')
    ActionChains(browser).move_to_element(marker).move_by_offset(0, 30).perform()
    wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".chart-tip").is_displayed())
    assert ".forward" in browser.find_element(By.CSS_SELECTOR, ".chart-tip").text
    shot = tmp_path / f"viewer-chart-{case.name[:3]}.png"
    browser.save_screenshot(str(shot))
    _keep(shot)
    assert shot.stat().st_size > 20_000


@pytest.mark.browser
def test_diagnose_html_page_and_png(browser, run_probe, tmp_path):
    from selenium.webdriver.common.by import By

    png = "--png" if _has_matplotlib() else None  # the PNG part has its own test that skips
    truth = _case(LR_STEP1)
    done = run_probe("diagnose", *_args(LR_STEP1), "-o", tmp_path, "--html", *([png] if png else []))
    assert done.code == 0, done.out + done.err
    (json_file,) = tmp_path.glob("diagnosis_*.json")
    page = json_file.with_suffix(".html")
    assert f"diagnosis page: {page}" in done.out
    diagnosis = json.loads(json_file.read_text())
    series, point = _fault_point(diagnosis, truth["accept"], truth["accept_steps"])

    html = page.read_text()
    # nothing to fetch: works offline (the only URL is the SVG namespace name)
    assert not re.search(r"(src|href)\s*=|<link|@import", html)
    assert set(re.findall(r"https?://[^\s\"']+", html)) == {"http://www.w3.org/2000/svg"}
    open_page(browser, page)
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert browser.find_element(By.ID, "verdict").text == diagnosis["verdict"] == "divergent"
    for toggle in browser.find_elements(By.CSS_SELECTOR, "#chart-series input"):
        if (toggle.find_element(By.XPATH, "..").text == series["label"]) != toggle.is_selected():
            toggle.click()
    _marker_sits_on(browser, point["order"])
    items = browser.find_elements(By.CSS_SELECTOR, "#suspect-list li")
    assert [li.get_attribute("data-node") for li in items] == [s["node"] for s in diagnosis["suspects"]]
    browser.find_element(By.CSS_SELECTOR, '.suspect-marker[data-suspect="1"]').click()
    assert browser.find_element(By.ID, "details-name").text == point["node"]
    assert diagnosis["suspects"][0]["evidence"] in browser.find_element(By.CSS_SELECTOR, ".suspect-note").text
    shot = tmp_path / "diagnosis-page.png"
    browser.save_screenshot(str(shot))
    _keep(shot)
    if png:
        _check_png(json_file.with_suffix(".png"))


def _has_matplotlib() -> bool:
    from importlib.util import find_spec

    return find_spec("matplotlib") is not None


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def _check_png(path: Path) -> None:
    assert path.is_file()
    assert _png_size(path) == (1200, 420)  # 12 x 4.2 inches at 100 dpi
    assert 20_000 < path.stat().st_size < 1_000_000


def test_png_of_a_diagnosis_fixture(run_probe, tmp_path):
    if not _has_matplotlib():
        pytest.skip("matplotlib not installed (pip install 'probe[png]'): --png is optional")
    done = run_probe("diagnose", *_args(DIV_SCALE), "-o", tmp_path, "--png")
    assert done.code == 0, done.out + done.err
    (picture,) = tmp_path.glob("diagnosis_*.png")
    assert f"diagnosis picture: {picture}" in done.out
    _check_png(picture)
    _keep(picture)


def test_png_without_matplotlib_is_one_line(run_probe, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    done = run_probe("diagnose", *_args(DIV_SCALE), "-o", tmp_path, "--png")
    assert done.code == 2 and "--png needs matplotlib" in done.err
    assert not list(tmp_path.glob("*"))  # refused before any work


def test_compare_html_writes_the_page_beside_the_reports(run_probe, tmp_path):
    done = run_probe("compare", *_args(DIV_SCALE), "-o", tmp_path, "--html")
    assert done.code == 0, done.out + done.err
    (json_file,) = tmp_path.glob("diagnosis_*.json")
    page = json_file.with_suffix(".html")
    assert page.is_file() and list(tmp_path.glob("compare_result_*.csv"))
    assert f"diagnosis page: {page}" in done.out
    # the page embeds the diagnosis' own suspects (decoded from its data block)
    import base64
    import gzip
    import re

    block = re.search(r'<script id="chart-data"[^>]*>([A-Za-z0-9+/=]+)</script>', page.read_text()).group(1)
    data = json.loads(gzip.decompress(base64.b64decode(block)))
    assert [s["node"] for s in data["suspects"]] == [s["node"] for s in json.loads(json_file.read_text())["suspects"]]
    assert data["series"][0]["total"] == len(json.loads(json_file.read_text())["series"][0]["points"])
