"""The docs pages in a browser: screenshots on a desktop and a phone, no sideways scroll of the
page on a phone (wide code blocks and tables scroll inside their own boxes), and axe finds no
serious or critical violation in either theme."""

import pytest
from playwright.sync_api import Page, expect

from tests.support.axe import blocking_violations

SCREENS = {"desktop": (1280, 800), "phone": (360, 740)}
PAGES = ["/docs/http-api", "/docs/scenario-format", "/docs/readme", "/docs"]


@pytest.mark.parametrize("screen", sorted(SCREENS))
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_docs_screenshots(page: Page, live_server, screenshot_dir, screen, theme, console_errors):
    width, height = SCREENS[screen]
    page.set_viewport_size({"width": width, "height": height})
    page.context.add_cookies([{"name": "theme", "value": theme, "url": live_server}])
    page.goto(f"{live_server}/docs/http-api")
    expect(page.locator("article.doc h1")).to_have_text("HTTP API")
    page.screenshot(path=str(screenshot_dir / f"docs-http-api-{screen}-{theme}.png"))
    page.locator("#errors").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / f"docs-http-api-errors-{screen}-{theme}.png"))
    page.goto(f"{live_server}/docs/scenario-format#the-top-level")  # the long field tables
    page.screenshot(path=str(screenshot_dir / f"docs-scenario-format-{screen}-{theme}.png"))
    assert console_errors == []


@pytest.mark.parametrize("path", PAGES)
def test_a_docs_page_does_not_scroll_sideways_on_a_phone(page: Page, live_server, path):
    page.set_viewport_size({"width": 360, "height": 740})
    page.goto(live_server + path)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    # the wide blocks scroll inside themselves instead
    for box in page.locator(".doc pre, .doc-table").all():
        assert box.evaluate("el => getComputedStyle(el).overflowX") == "auto"
    # and a wide table is one card per row, which fits the screen without scrolling
    for box in page.locator(".doc-table.stack").all():
        assert box.evaluate("el => el.scrollWidth <= el.clientWidth + 1")


@pytest.mark.parametrize("path", PAGES + ["/docs/no-such-page"])
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_docs_pages_are_clean_under_axe(page: Page, live_server, path, theme):
    page.context.add_cookies([{"name": "theme", "value": theme, "url": live_server}])
    page.goto(live_server + path)
    assert blocking_violations(page) == []
