"""N-way graph viewer in headless Chromium: target selector, a verdict dot per target, disagreement."""

from __future__ import annotations

import sqlite3

import pytest

from viewer_browser import browser, wait  # noqa: F401  (browser is a fixture)
from test_regression_nway_graph import GOLDEN, TARGETS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from probe.graph.service import GraphOptions
    from probe.regression.nway_graph import run_graph_many

    out = tmp_path_factory.mktemp("nway-html")
    options = GraphOptions(target=GOLDEN, golden=GOLDEN, output=out, html=True, jobs=1)  # target: one per -tp
    run = run_graph_many(options, list(TARGETS.values()), list(TARGETS), jobs=1)
    assert run.html is not None
    return run


def _disagreeing(db):
    from probe.regression.nway_data import load_nway

    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        names = [n for (n,) in conn.execute(
            "SELECT node_name FROM tb_nodes WHERE data_source = 'Bench' ORDER BY node_order")]
        payload = load_nway(conn, 0, 0, names)
    finally:
        conn.close()
    return [names[i] for i in payload["disagree"]]


def _row(driver, name):
    return driver.find_element("css selector", f'#pane-Bench .row[data-name="{name}"]')


def test_nway_viewer_selector_dots_and_disagreement(browser, page, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(page.html.as_uri())
    wait(browser, lambda d: d.execute_script("return document.body.dataset.nwayReady") == "1")
    assert browser.execute_script("return window.__errors || null") is None
    select = Select(browser.find_element(By.ID, "nway-target"))
    assert [o.text for o in select.options] == list(TARGETS)

    # the root is expanded: every rendered golden row has one dot per target, in label order
    rows = browser.find_elements(By.CSS_SELECTOR, "#pane-Bench .row[data-name]")
    assert rows
    for row in rows:
        dots = row.find_elements(By.CSS_SELECTOR, ".nway-dot")
        assert [d.get_attribute("data-target") for d in dots] == list(TARGETS)

    # the disagreement list is the db's, and a click reveals the node in the golden pane
    expected = _disagreeing(page.db)
    browser.find_element(By.ID, "nway-disagree").click()
    items = browser.find_elements(By.CSS_SELECTOR, "#result-list li")
    assert [li.get_attribute("data-name") for li in items] == expected
    relu = next(li for li in items if li.get_attribute("data-name") == "Functional.relu.0.forward")
    relu.click()
    wait(browser, lambda d: d.find_elements(
        By.CSS_SELECTOR, '#pane-Bench .row.selected[data-name="Functional.relu.0.forward"]'))
    row = _row(browser, "Functional.relu.0.forward")
    verdicts = [d.get_attribute("data-verdict") for d in row.find_elements(By.CSS_SELECTOR, ".nway-dot")]
    assert verdicts == ["warning", "pass", "warning"]
    assert "nway-disagree" in row.get_attribute("class").split()
    assert "nway-warning" in row.get_attribute("class").split()  # coloured by the first target
    agreeing = _row(browser, "Functional.max_pool2d.0.forward")
    assert "nway-disagree" not in agreeing.get_attribute("class").split()

    # choosing another target recolours the golden graph with that target's verdicts
    select.select_by_visible_text("extra")
    wait(browser, lambda d: "nway-pass" in _row(d, "Functional.relu.0.forward").get_attribute("class").split())
    colour = browser.execute_script(
        "return getComputedStyle(arguments[0]).backgroundColor", _row(browser, "Functional.relu.0.forward"))
    assert colour == "rgb(255, 252, 243)"  # the legend's pass colour
    select.select_by_visible_text("multi")
    wait(browser, lambda d: "nway-warning" in _row(d, "Functional.relu.0.forward").get_attribute("class").split())
    shot = tmp_path / "nway.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def test_plain_compare_page_has_no_nway_controls(browser, page):  # noqa: F811
    from selenium.webdriver.common.by import By

    from probe.viewer.writer import write_html

    plain = write_html(page.target_dbs[0])
    browser.get(plain.as_uri())
    wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    assert not browser.find_elements(By.ID, "nway")
    assert not browser.find_elements(By.CSS_SELECTOR, ".nway-dot")
