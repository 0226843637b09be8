"""The browser's history in a real browser: stepping through a beat replaces the current entry
(the new-learner check had to press the browser's Back dozens of times to leave a beat), while a
new beat adds one; the address keeps the whole state, so a reload lands on the same step."""

from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Page, expect

from tests.browser.test_layout import DESKTOP, TIMEOUT_MS, ready, step_and_wait


def step_in_url(page: Page) -> str:
    return parse_qs(urlsplit(page.url).query)["step"][0]


def test_steps_replace_the_history_entry_and_a_new_beat_adds_one(page: Page, live_server, console_errors):
    page.set_viewport_size(DESKTOP)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(live_server + "/")
    page.goto(live_server + "/scenes/01")
    ready(page)
    entries = page.evaluate("history.length")
    for _ in range(4):
        step_and_wait(page, "click")
    assert page.evaluate("history.length") == entries, "a step added a history entry"
    step = step_in_url(page)
    assert int(step) > 0
    forward = page.locator("#step-forward").get_attribute("href")

    page.reload()
    ready(page)
    assert step_in_url(page) == step
    expect(page.locator("#step-forward")).to_have_attribute("href", forward)

    page.click("#beat-link-consumer-pulls")
    page.wait_for_function("() => location.search.includes('beat=consumer-pulls')")
    assert page.evaluate("history.length") == entries + 1, "a new beat must add one history entry"

    page.go_back()  # back to the first beat, at the step it had reached
    page.wait_for_function("() => location.search.includes('beat=first-record')")
    assert step_in_url(page) == step
    expect(page.locator("#step-forward")).to_have_attribute("href", forward)
    page.go_back()  # and one more Back leaves the scene
    page.wait_for_url(live_server + "/")
    assert console_errors == []
