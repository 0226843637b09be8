"""The prediction in a real browser: choosing an option (htmx on top of a plain link) marks it,
says right or wrong and why, keeps the step, and the prediction panel stays clean under axe."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

import scenes
from tests.support.axe import blocking_violations

BEAT = scenes.load_scene("05").beats[0]
RIGHT = chr(ord("A") + BEAT.predict.answer)
WRONG = next(chr(ord("A") + i) for i in range(len(BEAT.predict.options)) if i != BEAT.predict.answer)


def test_choosing_an_option_gives_feedback_without_moving_the_step(page: Page, live_server, console_errors):
    page.goto(f"{live_server}/scenes/05?beat={BEAT.id}&step=4")
    page.wait_for_function("window.htmx !== undefined && document.documentElement.classList.contains('js')")
    page.click(f"#guess-{WRONG}")
    page.wait_for_url(re.compile(rf"guess={WRONG}"))
    expect(page.locator("#predict .feedback")).to_contain_text(f"you chose {WRONG}, the answer is {RIGHT}")
    expect(page.locator(f"#guess-{WRONG}")).to_have_attribute("aria-current", "true")
    assert parse_qs(urlsplit(page.url).query)["step"] == ["4"]
    page.click(f"#guess-{RIGHT}")
    page.wait_for_url(re.compile(rf"guess={RIGHT}"))
    expect(page.locator("#predict .feedback")).to_contain_text(f"Right: {RIGHT}.")
    page.reload()
    expect(page.locator("#predict .feedback")).to_contain_text(f"Right: {RIGHT}.")
    page.click("#predict .feedback >> text=Clear my answer")
    expect(page.locator("#predict details.reveal")).to_have_count(1)
    assert console_errors == []


def test_choosing_works_without_javascript(browser, live_server):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server}/scenes/05?beat={BEAT.id}&step=2")
    page.click(f"#guess-{WRONG}")
    expect(page.locator("#predict .feedback")).to_contain_text("Why not")
    assert "step=2" in page.url
    context.close()


@pytest.mark.parametrize("guess", [RIGHT, WRONG])
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_on_the_prediction_after_a_guess(page: Page, live_server, guess, theme):
    page.context.add_cookies([{"name": "theme", "value": theme, "url": live_server}])
    page.goto(f"{live_server}/scenes/05?beat={BEAT.id}&step=4&guess={guess}")
    page.locator("#predict details.why-not summary").click()
    assert blocking_violations(page) == []
