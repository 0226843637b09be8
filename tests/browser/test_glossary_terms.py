"""Glossary terms in a real browser: a term's definition shows on hover, on keyboard focus and on
a tap or click (a native popover, so also without JavaScript), in both themes; /glossary and a
page with an open definition stay clean under axe."""

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

BLOCKING_IMPACTS = {"serious", "critical"}
TERM = "#beat .gl-term"


def _blocking(page: Page) -> list[str]:
    results = Axe().run(page)
    return [f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
            for v in results.response["violations"] if v.get("impact") in BLOCKING_IMPACTS]


def _tip(page: Page, term):
    return page.locator("#" + term.get_attribute("popovertarget"))


def test_hover_and_focus_show_the_definition(page: Page, live_server, console_errors):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}/scenes/05")
    term = page.locator(TERM).nth(2)
    tip = _tip(page, term)
    expect(tip).to_be_hidden()
    term.hover()
    expect(tip).to_be_visible()
    page.mouse.move(0, 0)
    expect(tip).to_be_hidden()
    page.locator(TERM).nth(1).focus()
    page.keyboard.press("Tab")  # keyboard focus on the third term
    assert page.evaluate("document.activeElement.getAttribute('popovertarget')") == term.get_attribute(
        "popovertarget")
    expect(tip).to_be_visible()
    page.keyboard.press("Tab")  # the definition holds nothing focusable: focus moves to the next term
    assert page.evaluate("document.activeElement.classList.contains('gl-term')")
    assert console_errors == []


def test_escape_hides_a_hover_or_focus_definition(page: Page, live_server):
    """WCAG 1.4.13: content shown on hover or focus can be dismissed without moving away."""
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}/scenes/05")
    term = page.locator(TERM).nth(2)
    tip = _tip(page, term)
    page.locator(TERM).nth(1).focus()
    page.keyboard.press("Tab")
    expect(tip).to_be_visible()
    page.keyboard.press("Escape")
    expect(tip).to_be_hidden()
    assert page.evaluate("document.activeElement.getAttribute('popovertarget')") == term.get_attribute(
        "popovertarget")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")  # focus leaves and comes back: the definition shows again
    expect(tip).to_be_visible()


def test_the_glossary_page_does_not_scroll_sideways_on_a_phone(page: Page, live_server):
    page.set_viewport_size({"width": 360, "height": 740})
    page.goto(f"{live_server}/glossary")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_tap_opens_the_definition_and_escape_closes_it(browser, live_server, theme):
    context = browser.new_context(viewport={"width": 360, "height": 740}, has_touch=True, is_mobile=True,
                                  java_script_enabled=False)
    context.add_cookies([{"name": "theme", "value": theme, "url": live_server}])
    page = context.new_page()
    page.goto(f"{live_server}/scenes/05")
    term = page.locator(TERM).first
    tip = _tip(page, term)
    term.tap()
    expect(tip).to_be_visible()
    assert tip.evaluate("el => el.matches(':popover-open')")
    box = tip.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 360  # on screen, no sideways scroll
    page.keyboard.press("Escape")
    # closed as a card; while the term keeps the focus the same text may stay as its tooltip
    assert not tip.evaluate("el => el.matches(':popover-open')")
    page.locator("h1").tap()  # a tap elsewhere leaves nothing open
    expect(tip).to_be_hidden()
    context.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_glossary_page_and_an_open_definition_are_clean_under_axe(page: Page, live_server, theme):
    page.context.add_cookies([{"name": "theme", "value": theme, "url": live_server}])
    page.goto(f"{live_server}/glossary#glossary-hw")
    expect(page.locator("#glossary-hw")).to_be_visible()
    assert _blocking(page) == []
    page.goto(f"{live_server}/scenes/04")  # a scene with a definition open
    page.locator(".legend .gl-term").first.click()
    assert _blocking(page) == []
