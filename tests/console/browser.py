"""A real headless Chromium driven by Selenium, for the console's tests and ``tools/console_screenshots.py``.

Debian's ``chromium`` and ``chromium-driver`` (``/usr/bin/chromium``, ``/usr/bin/chromedriver``) are
installed by ``tests/conftest.py`` when missing and the tests run as root with apt-get, as kcat is;
otherwise :func:`chromium_or_skip` skips the calling test, saying why.  The driver is given by path,
so Selenium Manager never downloads a browser or driver.
"""

from __future__ import annotations

import shutil
import time
from typing import Any, Callable

CHROMIUM = ("chromium", "chromium-browser")
DRIVER = "chromedriver"


def chromium_paths() -> tuple[str, str] | None:
    """The Chromium binary and its driver, or None when either is missing."""
    browser = next((p for p in map(shutil.which, CHROMIUM) if p), None)
    driver = shutil.which(DRIVER)
    return (browser, driver) if browser and driver else None


def chromium_missing_reason() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (it is in the test extra)"
    if chromium_paths() is None:
        return ("Debian's chromium and chromium-driver are not installed (tests/conftest.py installs them when "
                "run as root with apt-get)")
    return None


def chromium_or_skip() -> None:
    import pytest

    reason = chromium_missing_reason()
    if reason:
        pytest.skip(reason)


def start_browser(width: int = 1280, height: int = 900) -> Any:
    """A headless Chromium WebDriver (the caller quits it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    paths = chromium_paths()
    assert paths is not None, chromium_missing_reason()
    browser, driver = paths
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "a condition",
             interval: float = 0.2) -> Any:
    """Poll ``predicate`` until it returns something true; its value (AssertionError naming ``what`` on
    timeout).  Exceptions while polling count as not yet (the page may be re-rendering)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = value
        except Exception as e:  # noqa: BLE001 - a stale element while the page re-renders
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
        time.sleep(interval)


def text_of(driver: Any, css: str) -> str:
    """The text of the first element matching ``css`` ('' if none)."""
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.CSS_SELECTOR, css)
    return found[0].text if found else ""
