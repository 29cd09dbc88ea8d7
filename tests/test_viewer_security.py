"""Crafted .vis.db files: every value reaches the viewer page as text, never as markup or script,
and the page's Content-Security-Policy stops what would slip through."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import sqlite3
from importlib import resources

import pytest

from graph_helpers import run
from viewer_browser import browser, open_page, wait  # noqa: F401  (browser is a fixture)

NODE = "Functional.conv2d.0.backward"


def _payloads(tag: str) -> list[str]:
    """Markup that sets ``window.__pwned`` and the title if it ever runs (``tag`` says where it came from)."""
    run_it = f"window.__pwned=(window.__pwned||[]).concat(['{tag}']);document.title='pwned'"
    return [
        f'<img src=x onerror="{run_it}">',
        f"<svg onload=\"{run_it}\"></svg>",
        f"</script><script>{run_it}</script>",
        f'"><iframe srcdoc="<script>parent.{run_it}</script>">',
    ]


def _craft(db) -> dict[str, str]:
    """Put a payload into every column the viewer shows; returns {column: payload}."""
    used = {}
    conn = sqlite3.connect(db)
    with conn:
        def payload(column: str) -> str:
            used[column] = " ".join(_payloads(column))
            return used[column]

        where = "WHERE node_name = ? AND data_source = 'NPU'"
        conn.execute(f"UPDATE tb_nodes SET overflow_level = ? {where}", (payload("overflow_level"), NODE))
        conn.execute(f"UPDATE tb_nodes SET micro_step_id = ? {where}", (payload("micro_step_id"), NODE))
        conn.execute(f"UPDATE tb_nodes SET matched_distributed = ? {where}", (payload("matched_distributed"), NODE))
        conn.execute(f"UPDATE tb_nodes SET parallel_merge_info = ? {where}",
                     (json.dumps([payload("parallel_merge_info")]), NODE))
        out = json.loads(conn.execute(f"SELECT output_data FROM tb_nodes {where}", (NODE,)).fetchone()[0])
        first = next(iter(out))
        out[first]["Err_message"] = payload("Err_message")
        out[first]["Result"] = payload("Result")
        out[first][payload("metric_key")] = payload("metric_value")
        out[NODE + ".output.9<img src=x onerror=window.__pwned=1>"] = {"Max": payload("item_name")}
        conn.execute(f"UPDATE tb_nodes SET output_data = ? {where}", (json.dumps(out), NODE))
        stack_id = conn.execute(f"SELECT stack_id FROM tb_nodes {where}", (NODE,)).fetchone()[0]
        conn.execute("UPDATE tb_stack SET stack_info = ? WHERE id = ?", (json.dumps([payload("stack")]), stack_id))
        colors = json.loads(conn.execute("SELECT node_colors FROM tb_config").fetchone()[0])
        colors["red;background:url(http://127.0.0.1:9/x)"] = {"value": [0.9, 1], "accuracy_level": payload("legend")}
        conn.execute("UPDATE tb_config SET node_colors = ?, task = ?", (json.dumps(colors), payload("task")))
    conn.close()
    return used


def test_page_has_no_markup_sink_and_a_strict_policy(tmp_path):
    """Static checks: no script uses innerHTML-like sinks; the policy hashes exactly the inline script."""
    from probe.viewer.writer import write_html

    assets = resources.files("probe.viewer").joinpath("assets")
    for name in ("common.js", "chart.js", "viewer.js", "diagnosis.js"):
        text = assets.joinpath(name).read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in text.replace("never with innerHTML", ""), f"{name} uses {sink}"
    result = run(tmp_path, "stat_target", "stat_golden")
    _craft(result.db)
    html = write_html(result.db, tmp_path / "page.html").read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1).replace("&#x27;", "'")
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
    script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    # data blocks are base64 only; no payload text anywhere in the file
    for block in re.findall(r'<script id="[^"]+" type="application/octet-stream"[^>]*>(.*?)</script>', html, re.S):
        assert re.fullmatch(r"[A-Za-z0-9+/=]*", block)
    assert "onerror" not in html and "pwned" not in html


def test_crafted_db_runs_nothing_in_the_browser(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from probe.viewer.writer import write_html

    result = run(tmp_path, "stat_target", "stat_golden")
    evil = tmp_path / "<img src=x onerror=window.__pwned=1>.vis.db"
    shutil.copy(result.db, evil)
    used = _craft(evil)
    page = write_html(evil, tmp_path / "page.html")
    open_page(browser, page)
    title = browser.title
    assert title.startswith("probe graph - <img")  # the file name, as text
    # the node as the page opens (overflow badge), then clicked (details: micro step, items, stack)
    browser.find_element(By.ID, "search").send_keys(NODE)
    selector = f'#result-list li[data-side="NPU"][data-name="{NODE}"]'
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, selector))
    browser.find_element(By.CSS_SELECTOR, selector).click()
    wait(browser, lambda d: d.find_element(By.ID, "details-name").text == NODE)
    for level in ("filter-medium", "filter-error"):
        browser.find_element(By.ID, level).click()
    details = browser.find_element(By.ID, "details").text
    for column in ("micro_step_id", "overflow_level", "Err_message", "metric_key", "metric_value", "stack",
                   "matched_distributed", "parallel_merge_info", "item_name"):
        assert f"concat(['{column}'])" in details, f"{column} not shown as text"
    assert "concat(['legend'])" in browser.find_element(By.ID, "legend").text
    assert "concat(['task'])" in browser.find_element(By.ID, "title").text
    row = browser.find_element(By.CSS_SELECTOR, f'#pane-NPU .row[data-name="{NODE}"]')
    assert "concat(['overflow_level'])" in row.text
    browser.save_screenshot(str(tmp_path / "crafted.png"))
    assert browser.execute_script("return window.__pwned || null") is None
    assert browser.title == title
    assert browser.execute_script("return document.querySelectorAll('img, iframe, #details svg, #legend svg').length") == 0
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert set(used) >= {"overflow_level", "micro_step_id"}


def test_policy_blocks_injected_markup(browser, tmp_path):
    """Even markup put into the page by other means cannot run script: the policy is in force."""
    result = run(tmp_path, "stat_target", "stat_golden", html=True)
    open_page(browser, result.html)
    browser.execute_script("""
        window.__violations = [];
        document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective));
        const box = document.createElement('div');
        box.innerHTML = '<img src=x onerror="window.__ran=1">';
        document.body.appendChild(box);
        const s = document.createElement('script');
        s.textContent = 'window.__ran = 2';
        document.body.appendChild(s);
    """)
    wait(browser, lambda d: len(d.execute_script("return window.__violations")) >= 2)
    assert browser.execute_script("return window.__ran || null") is None
    violated = browser.execute_script("return window.__violations")
    assert any(v.startswith("script-src") for v in violated) and any(v.startswith("img-src") for v in violated)


pytestmark = pytest.mark.browser


def test_crafted_diagnosis_runs_nothing(browser, tmp_path, run_probe):
    """A diagnosis JSON is passed around too: its names and evidence reach the chart and lists as text."""
    from selenium.webdriver.common.by import By

    result = run(tmp_path, "stat_target", "stat_golden")
    evil = " ".join(_payloads("diagnosis"))
    points = [{"node": NODE if i == 3 else f"{evil}.{i}", "order": i, "error": 10.0 ** -i, "floor": 1e-3,
               "module": evil, "direction": "forward", "suspect": 1 if i == 3 else None} for i in range(6)]
    doc = {"verdict": evil, "noise_floor": {},
           "suspects": [{"node": NODE, "rank": 0, "step": 0, "kind": evil, "score": 1.5, "evidence": evil}],
           "series": [{"rank": 0, "step": 0, "label": evil, "points": points},
                      {"rank": 0, "step": 0, "label": "second", "points": points}]}
    path = tmp_path / "diagnosis_1.json"
    path.write_text(json.dumps(doc))
    page = tmp_path / "page.html"
    assert run_probe("view", result.db, "-o", page, "--diagnosis", path).code == 0
    open_page(browser, page)
    title = browser.title
    browser.find_element(By.CSS_SELECTOR, "#suspect-list li").click()
    wait(browser, lambda d: d.find_elements(By.ID, "details-note"))
    assert "concat(['diagnosis'])" in browser.find_element(By.ID, "details-note").text
    assert "concat(['diagnosis'])" in browser.find_element(By.ID, "chart-series").text
    from selenium.webdriver.common.action_chains import ActionChains

    hit = browser.find_element(By.CSS_SELECTOR, "#error-chart rect.hit")
    ActionChains(browser).move_to_element_with_offset(hit, -hit.size["width"] // 2 + 2, 0).perform()
    wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".chart-tip").is_displayed())
    assert "concat(['diagnosis'])" in browser.find_element(By.CSS_SELECTOR, ".chart-tip").text
    assert browser.execute_script("return window.__pwned || null") is None and browser.title == title
    assert browser.execute_script("return document.querySelectorAll('img, iframe').length") == 0
