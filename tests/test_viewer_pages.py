"""The viewer page on several steps/ranks: selector, chart series, labelled filters, worst verdict inside
collapsed nodes (headless Chromium)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from graph_helpers import run
from viewer_browser import browser, open_page, wait  # noqa: F401  (browser is a fixture)

pytestmark = pytest.mark.browser
CASES = Path(__file__).parent / "data" / "diagnosis"  # shared with the diagnosis tests
LR_STEP1 = CASES / "s11_convgn_lr_step1_u2_fp32"  # two steps; the fault appears in step 1


def _verdict(p):
    return None if p is None else "error" if p >= 0.6 else "warning" if p >= 0.3 else "pass"


def _worst_inside(db: Path, step: int = 0, rank: int = 0) -> dict[str, tuple[str | None, str | None]]:
    """{node: (own verdict, worst verdict of its descendants)} from the db, independently of the page."""
    rows = sqlite3.connect(db).execute(
        "SELECT node_name, up_node, precision_index, matched_node_link FROM tb_nodes "
        "WHERE data_source = 'NPU' AND step = ? AND rank = ?", (step, rank)).fetchall()
    parent = {name: up for name, up, _p, _m in rows}
    own = {name: _verdict(p) if link and link != "[]" else None for name, _up, p, link in rows}
    order = {None: 0, "pass": 1, "warning": 2, "error": 3}
    worst: dict[str, str | None] = {}
    for name in own:
        up = parent[name]
        while up:
            if order[own[name]] > order[worst.get(up)]:
                worst[up] = own[name]
            up = parent.get(up)
    return {name: (own[name], worst.get(name)) for name in own}


def test_every_step_in_one_page_with_a_selector(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    result = run(tmp_path, str(LR_STEP1 / "target"), str(LR_STEP1 / "golden"), html=True)
    open_page(browser, result.html)
    select = Select(browser.find_element(By.ID, "graph-select"))
    assert [o.text for o in select.options] == ["step 0, rank 0", "step 1, rank 0"]
    assert "step 0, rank 0" in browser.find_element(By.ID, "title").text
    # the chart has one series per step, switchable
    labels = [x.text for x in browser.find_elements(By.CSS_SELECTOR, "#chart-series label")]
    assert labels == ["step0/rank0", "step1/rank0"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#error-chart path.line")) == 2
    browser.find_element(By.CSS_SELECTOR, '#chart-series input[data-series="0"]').click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "#error-chart path.line")) == 1
    select.select_by_index(1)
    wait(browser, lambda d: "step 1, rank 0" in d.find_element(By.ID, "title").text
         and d.execute_script("return document.body.dataset.ready") == "1")
    # the step-1 tree is the step-1 graph of the db
    node_count = sqlite3.connect(result.db).execute(
        "SELECT count(*) FROM tb_nodes WHERE data_source = 'NPU' AND step = 1").fetchone()[0]
    assert browser.find_element(By.CSS_SELECTOR, "#pane-NPU h2 .badge").text == f"{node_count} nodes"
    # a click on the chart (step-1 series) opens that op in both trees
    hit = browser.find_element(By.CSS_SELECTOR, "#error-chart rect.hit")
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).move_to_element_with_offset(hit, hit.size["width"] // 5, 0).click().perform()
    wait(browser, lambda d: d.find_elements(By.ID, "details-name"))
    name = browser.find_element(By.ID, "details-name").text
    assert browser.find_elements(By.CSS_SELECTOR, f'#pane-NPU .row.selected[data-name="{name}"]')
    assert browser.find_elements(By.CSS_SELECTOR, f'#pane-Bench .row.selected[data-name="{name}"]')
    # and the other way: a node picked in the tree is ringed on the chart
    browser.find_element(By.ID, "search").send_keys("Functional.conv2d.2.forward")
    item = '#result-list li[data-side="NPU"][data-name="Functional.conv2d.2.forward"]'
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, item))
    browser.find_element(By.CSS_SELECTOR, item).click()
    ring = browser.find_element(By.CSS_SELECTOR, "#error-chart circle.selected-point")
    assert ring.get_attribute("data-node") == "Functional.conv2d.2.forward"
    browser.save_screenshot(str(tmp_path / "step1.png"))


def test_filters_are_labelled_and_collapsed_nodes_show_the_worst_inside(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    result = run(tmp_path, str(LR_STEP1 / "target"), str(LR_STEP1 / "golden"), html=True)
    open_page(browser, result.html)
    assert browser.find_element(By.ID, "overflow-filters").text.startswith("Overflow level:")
    assert browser.find_element(By.ID, "precision-filters").text.startswith("Verdict:")
    Select(browser.find_element(By.ID, "graph-select")).select_by_index(1)  # the step with the fault
    wait(browser, lambda d: "step 1" in d.find_element(By.ID, "title").text)
    expected = _worst_inside(result.db, step=1)
    rows = browser.find_elements(By.CSS_SELECTOR, "#pane-NPU .row")
    checked = hidden = 0
    for row in rows:
        name = row.get_attribute("data-name")
        own, worst = expected[name]
        rank = {None: 0, "pass": 1, "warning": 2, "error": 3}
        badge = row.find_elements(By.CSS_SELECTOR, ".badge.inside")
        if worst in ("warning", "error") and rank[worst] > rank[own]:
            assert badge and badge[0].get_attribute("data-inside") == worst, name
            hidden += 1
        else:
            assert not badge, name
        checked += 1
    browser.save_screenshot(str(tmp_path / "worst-inside.png"))
    assert checked > 3 and hidden >= 1  # a pass (or unmatched) parent holds an error child here


def test_large_db_one_page_per_graph_linked(browser, tmp_path, monkeypatch):
    """Above the size limit each step/rank gets its own page; the selector and the chart link them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    import probe
    from probe.viewer import writer

    result = run(tmp_path, str(LR_STEP1 / "target"), str(LR_STEP1 / "golden"))
    diagnosis = probe.diagnose(LR_STEP1 / "target", LR_STEP1 / "golden")
    monkeypatch.setattr(writer, "SPLIT_BYTES", 1)
    page = writer.write_html(result.db, tmp_path / "view.html", diagnosis=diagnosis)
    pages = sorted(p.name for p in tmp_path.glob("view*.html"))
    assert pages == ["view.html", "view_step1_rank0.html"]
    step0, step1 = page.read_text(), (tmp_path / "view_step1_rank0.html").read_text()
    assert 'id="graph-0"' in step0 and 'id="graph-1"' not in step0
    assert 'id="graph-1"' in step1 and 'id="graph-0"' not in step1
    open_page(browser, page)
    assert "step 0, rank 0" in browser.find_element(By.ID, "title").text
    # suspect 1 is in step 1: its marker opens the other page at that node
    first = diagnosis.suspects[0]
    assert first.step == 1
    browser.find_element(By.CSS_SELECTOR, "#suspect-list li").click()
    wait(browser, lambda d: d.current_url.split("#")[0].endswith("view_step1_rank0.html"))
    open_page_ready = lambda d: d.execute_script("return document.body.dataset.ready") == "1"  # noqa: E731
    wait(browser, open_page_ready)
    wait(browser, lambda d: d.find_elements(By.ID, "details-name"))
    assert browser.find_element(By.ID, "details-name").text == first.node
    assert first.evidence in browser.find_element(By.ID, "details-note").text
    assert browser.find_elements(By.CSS_SELECTOR, f'#pane-NPU .row.selected[data-name="{first.node}"]')
    # and back with the selector
    Select(browser.find_element(By.ID, "graph-select")).select_by_index(0)
    wait(browser, lambda d: d.current_url.endswith("/view.html"))
    wait(browser, open_page_ready)
    assert "step 0, rank 0" in browser.find_element(By.ID, "title").text
