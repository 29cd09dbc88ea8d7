"""End to end: the HTML viewer in headless Chromium (search, precision filter, expand, details)."""

from __future__ import annotations

import pytest

from graph_helpers import run
from viewer_browser import browser, wait  # noqa: F401  (browser is a fixture)

pytestmark = pytest.mark.browser


def _wait(driver, predicate, timeout=10.0):
    return wait(driver, predicate, timeout)


def test_viewer_search_filter_expand(browser, tmp_path):
    from selenium.webdriver.common.by import By

    result = run(tmp_path, "stat_target", "stat_golden", html=True)
    browser.get(result.html.as_uri())
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    assert browser.execute_script("return window.__errors || null") is None
    npu_rows = browser.find_elements(By.CSS_SELECTOR, "#pane-NPU .tree .row")
    labels = [r.get_attribute("data-name") for r in npu_rows]
    assert "DefaultModel" in labels and "Module.conv.Conv2d.backward.0" in labels  # root expanded
    assert "Functional.conv2d.0.backward" not in labels  # lazy: children of collapsed nodes absent

    # fuzzy, case-insensitive search, then jump to the node
    browser.find_element(By.ID, "search").send_keys("CONV2D BACKW")
    _wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#result-list li")) > 0)
    items = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#result-list li")]
    assert items[0].startswith("Functional.conv2d.0.backward") or items[0].startswith("Module.conv.Conv2d.backward.0")
    target = browser.find_element(
        By.CSS_SELECTOR, '#result-list li[data-side="NPU"][data-name="Functional.conv2d.0.backward"]')
    target.click()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#pane-NPU .row.selected[data-name="Functional.conv2d.0.backward"]'))
    # synced: the golden twin is revealed and selected too
    assert browser.find_elements(By.CSS_SELECTOR, '#pane-Bench .row.selected[data-name="Functional.conv2d.0.backward"]')
    assert browser.find_element(By.ID, "details-name").text == "Functional.conv2d.0.backward"
    assert browser.find_element(By.ID, "details-verdict").text == "warning"
    details = browser.find_element(By.ID, "details").text
    assert "NormRelativeErr" in details and "Stack" in details
    # the page embeds compressed columnar data; the details table shows the db's own values
    import json
    import sqlite3

    html = result.html.read_text()
    assert 'data-encoding="gzip+base64"' in html and "Functional.conv2d.0.backward" not in html
    stored = sqlite3.connect(result.db).execute(
        "SELECT output_data FROM tb_nodes WHERE data_source = 'NPU' AND node_name = 'Functional.conv2d.0.backward'"
    ).fetchone()[0]
    item = next(v for v in json.loads(stored).values() if "Max" in v)
    assert item["Max"] in details and item["NormRelativeErr"] in details

    # precision filter: warning nodes listed, the conv2d backward among them
    browser.find_element(By.ID, "search").clear()
    browser.find_element(By.ID, "filter-warning").click()
    _wait(browser, lambda d: "warning" in d.find_element(By.ID, "results-title").text)
    items = browser.find_elements(By.CSS_SELECTOR, "#result-list li")
    assert "Functional.conv2d.0.backward" in [li.get_attribute("data-name") for li in items]
    assert {li.get_attribute("data-note") for li in items} == {"warning"}

    # expand a collapsed module by its toggle: children appear in both panes (synced)
    toggle = browser.find_element(By.CSS_SELECTOR, '#pane-NPU .row[data-name="Module.fc.Linear.backward.0"] .toggle')
    toggle.click()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#pane-NPU .row[data-name="Functional.linear.0.backward"]'))
    assert browser.find_elements(By.CSS_SELECTOR, '#pane-Bench .row[data-name="Functional.linear.0.backward"]')
    color = browser.find_element(By.CSS_SELECTOR, '#pane-NPU .row[data-name="Functional.conv2d.0.backward"]').value_of_css_property("background-color")
    assert color == "rgba(255, 220, 127, 1)"  # the warning colour of the legend (#FFDC7F)
    shot = tmp_path / "viewer.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def test_viewer_manual_match_exports_mapping(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from probe.graph.matching import load_mapping, node_pairs
    from probe.graph.build import build_graph
    from graph_helpers import DATA

    result = run(tmp_path, "fuzzy_target", "fuzzy_golden", html=True)
    browser.get(result.html.as_uri())
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    browser.find_element(By.ID, "filter-unmatched").click()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#result-list li"))
    first = browser.find_elements(By.CSS_SELECTOR, "#result-list li")[0]
    npu_name = first.get_attribute("data-name")
    first.click()
    assert browser.find_element(By.ID, "pick-npu").text == npu_name
    # pick an unmatched golden node of the same API through the search list
    api = npu_name.split(".")[1]
    browser.find_element(By.ID, "search").send_keys(api)
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#result-list li[data-side="Bench"]'))
    bench_name = "-"
    for li in browser.find_elements(By.CSS_SELECTOR, '#result-list li[data-side="Bench"]'):
        li.click()
        bench_name = browser.find_element(By.ID, "pick-bench").text
        if bench_name != "-":
            break
    assert bench_name != "-", f"no unmatched golden node found for {api}"
    browser.find_element(By.ID, "add-pair").click()
    browser.find_element(By.ID, "export-yaml").click()
    text = browser.find_element(By.ID, "yaml-out").get_attribute("value")
    mapping_file = tmp_path / "mapping.yaml"
    mapping_file.write_text(text)
    doc = load_mapping(mapping_file)
    assert doc[npu_name] == bench_name
    pairs = node_pairs(doc, build_graph(DATA / "fuzzy_target"))
    assert pairs[npu_name] == bench_name


def test_exported_mapping_drives_probe_compare_dm(browser, tmp_path):
    """A pair picked in the viewer, exported as YAML, pairs the rows in ``probe compare -dm``."""
    from selenium.webdriver.common.by import By

    import probe
    from graph_helpers import DATA

    npu_name, bench_name = "Functional.layer_norm.2.forward", "Functional.layer_norm.1.forward"
    result = run(tmp_path, "fuzzy_target", "fuzzy_golden", html=True)
    browser.get(result.html.as_uri())
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    for side, name in (("NPU", npu_name), ("Bench", bench_name)):
        search = browser.find_element(By.ID, "search")
        search.clear()
        search.send_keys(name)
        selector = f'#result-list li[data-side="{side}"][data-name="{name}"]'
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, selector))
        browser.find_element(By.CSS_SELECTOR, selector).click()
    assert browser.find_element(By.ID, "pick-npu").text == npu_name
    assert browser.find_element(By.ID, "pick-bench").text == bench_name
    browser.find_element(By.ID, "add-pair").click()
    browser.find_element(By.ID, "export-yaml").click()
    mapping_file = tmp_path / "mapping.yaml"
    mapping_file.write_text(browser.find_element(By.ID, "yaml-out").get_attribute("value"))

    def bench_of(**options):
        rows = probe.compare(DATA / "fuzzy_target/dump.json", DATA / "fuzzy_golden/dump.json", **options)[0]
        return {row["NPU Name"]: row["Bench Name"] for row in rows}

    plain = bench_of()
    mapped = bench_of(data_mapping=str(mapping_file))
    for part in ("input.0", "output.0"):
        assert plain[f"{npu_name}.{part}"] == "N/A"
        assert mapped[f"{npu_name}.{part}"] == f"{bench_name}.{part}"
