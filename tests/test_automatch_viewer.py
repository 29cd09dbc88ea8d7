"""The viewer shows automatic pairs (--auto-match): confidence, review marks, manual matching starts from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from viewer_browser import browser, open_page, wait  # noqa: F401  (browser is a fixture)

pytestmark = pytest.mark.browser

PYTORCH = Path(__file__).parent / "data" / "pytorch"


def _graph(tmp_path: Path, case: str):
    from probe.graph.service import GraphOptions, run_graph
    from probe.plugins import default_host

    options = GraphOptions(target=PYTORCH / case / "target" / "step0" / "rank0",
                           golden=PYTORCH / case / "golden" / "step0" / "rank0",
                           output=tmp_path, auto_match=True, html=True, jobs=1)
    run = run_graph(options, default_host())
    npu = next(g for g in run.graphs if g.side == "NPU")
    return run, npu


def test_viewer_marks_low_confidence_pairs_and_proposes_them(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from probe.graph.matching import load_mapping

    run, npu = _graph(tmp_path, "nan_inf_cnn")  # NaN/inf on one side: some pairs are less sure
    auto = npu.auto_matches
    review = sorted(n for n, (c, _) in auto.items() if c < 0.8)
    assert review and len(review) < len(auto)
    open_page(browser, run.html)
    # manual matching starts from the automatic proposal: every automatic pair of a node is listed
    listed = browser.find_elements(By.CSS_SELECTOR, "#pair-list li")
    paired = [n for n in auto if npu.nodes[n].match is not None]
    assert len(listed) == len(paired)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#pair-list li.review")) == len(
        [n for n in paired if auto[n][0] < 0.8])
    # a low-confidence node is marked in the tree and its details say why
    name = review[0]
    browser.find_element(By.ID, "search").send_keys(name)
    selector = f'#result-list li[data-side="NPU"][data-name="{name}"]'
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, selector))
    browser.find_element(By.CSS_SELECTOR, selector).click()
    row = browser.find_element(By.CSS_SELECTOR, f'#pane-NPU .row[data-name="{name}"]')
    assert "review" in row.get_attribute("class").split()
    assert row.find_element(By.CSS_SELECTOR, ".badge.auto.review").text == f"review {auto[name][0]:.2f}"
    details = browser.find_element(By.ID, "details-auto").text
    assert f"{auto[name][0]:.2f}" in details and "review" in details
    browser.save_screenshot(str(tmp_path / "auto_match_viewer.png"))
    # the exported mapping holds the proposal, confidence as a comment
    browser.find_element(By.ID, "export-yaml").click()
    text = browser.find_element(By.ID, "yaml-out").get_attribute("value")
    assert f"  # auto, confidence {auto[name][0]:.3f}" in text
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(text)
    assert load_mapping(mapping)[name] == npu.nodes[name].match.name


def test_manual_pair_replaces_the_proposal(browser, tmp_path):
    from selenium.webdriver.common.by import By

    run, npu = _graph(tmp_path, "data_mapping_tfm")  # modules up/down vs fc1/fc2
    assert npu.nodes["Module.up.Linear.forward.0"].match.name == "Module.fc1.Linear.forward.0"
    open_page(browser, run.html)
    before = len(browser.find_elements(By.CSS_SELECTOR, "#pair-list li"))
    assert any("Module.up.Linear.forward.0 → Module.fc1.Linear.forward.0 (auto" in li.text
               for li in browser.find_elements(By.CSS_SELECTOR, "#pair-list li"))
    for side, name in (("NPU", "Module.up.Linear.forward.0"), ("Bench", "Module.fc2.Linear.forward.0")):
        # automatically paired nodes can be picked again
        search = browser.find_element(By.ID, "search")
        search.clear()
        search.send_keys(name)
        selector = f'#result-list li[data-side="{side}"][data-name="{name}"]'
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, selector))
        browser.find_element(By.CSS_SELECTOR, selector).click()
    assert browser.find_element(By.ID, "pick-npu").text == "Module.up.Linear.forward.0"
    browser.find_element(By.ID, "add-pair").click()
    items = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#pair-list li")]
    assert len(items) == before
    assert "Module.up.Linear.forward.0 → Module.fc2.Linear.forward.0" in items
