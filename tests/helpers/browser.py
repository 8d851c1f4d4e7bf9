"""Headless Chromium (Debian's ``chromium`` and ``chromium-driver``, which ``.ci/run`` installs)
driven by Selenium, for the tests of the page of ``gitflow-agents serve``. Without them a test
skips and says what to install."""

from __future__ import annotations

import shutil
import struct
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

INSTALL = "apt-get install chromium chromium-driver; pip install -e '.[dev]' (selenium)"


def _program(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium under Selenium, closed afterwards; skips without one."""
    webdriver = pytest.importorskip("selenium.webdriver", reason=f"selenium missing: {INSTALL}")
    browser = _program("chromium", "chromium-browser", "google-chrome")
    driver_path = _program("chromedriver")
    if browser is None or driver_path is None:
        pytest.skip(f"headless Chromium and its driver are missing: {INSTALL}")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (
        "--headless=new",
        "--no-sandbox",  # root in CI's container
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        "--no-first-run",
    ):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=driver_path)  # no Selenium Manager download
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, condition: Callable[[Any], Any], timeout: float = 30.0) -> Any:
    """``condition(driver)`` once it is truthy (Selenium's wait; fails the test at ``timeout``);
    an element missing or gone stale (the page is loading, or redrew it) is asked again —
    chromedriver says the latter now and then as an unknown error, "Node with given id does
    not belong to the document", rather than as a stale element (a test failed on it once)."""
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
        WebDriverException,
    )
    from selenium.webdriver.support.ui import WebDriverWait

    def asked(d: Any) -> Any:
        try:
            return condition(d)
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc.msg or ""):
                return False
            raise

    ignored = (NoSuchElementException, StaleElementReferenceException)
    return WebDriverWait(driver, timeout, 0.05, ignored_exceptions=ignored).until(asked)


def png_colours(png: bytes) -> int:
    """How many different byte values the pixel data of ``png`` holds (1 for a blank image;
    the filter byte of each row counts too)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    position, data = 8, b""
    while position < len(png):
        (length,) = struct.unpack(">I", png[position : position + 4])
        kind = png[position + 4 : position + 8]
        if kind == b"IDAT":
            data += png[position + 8 : position + 8 + length]
        position += 12 + length
    return len(set(zlib.decompress(data)))
