"""Headless Chromium for the viewer tests: a ``browser`` fixture (skips with a reason when Chromium,
chromedriver or selenium is missing) and a wait helper."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = "/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else shutil.which("chromedriver")


@pytest.fixture()
def browser():
    if not CHROMIUM or not DRIVER:
        pytest.skip("headless Chromium/chromedriver not installed (run .ci/install-browser.sh)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed (pip install -r tests/requirements-graph.txt)")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="probe-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--window-size=1600,1000"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait(driver, predicate, timeout=10.0):
    """Wait until ``predicate(driver)`` is truthy; returns its value."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: predicate(d))


def open_page(driver, path: Path) -> None:
    """Load a probe page and wait until its script has drawn it."""
    driver.get(Path(path).as_uri())
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
