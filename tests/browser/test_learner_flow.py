"""What a new learner's test found, pinned in a real browser: nothing of the diagram stays under
the Step bar, actions taken below the viewer bring the diagram into view, the Step button stays
put under the pointer, and the keyboard works on the Step bar, the beat buttons and the glossary."""

import pytest
from playwright.sync_api import Page, expect

# the page geometry helpers and constants are the layout tests' own
from tests.browser.test_layout import (
    COMPARE_BEATS,
    DESKTOP,
    FORWARD_JS,
    PHONE,
    STEP_BEAT,
    TIMEOUT_MS,
    box,
    ready,
    step_and_wait,
)


def settle(page: Page) -> None:
    page.wait_for_function("!document.querySelector('.htmx-request')")
    page.wait_for_timeout(100)  # the reveal runs on the next animation frame


@pytest.mark.parametrize("path", COMPARE_BEATS)
def test_compared_drawings_clear_the_caption_and_bar_at_1280x800(page: Page, live_server, path):
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + path)
    ready(page)
    foot = box(page, ".viewer-foot")
    bottoms = page.evaluate(
        "() => [...document.querySelectorAll('#diagram svg.cluster')]"
        ".map(e => e.getBoundingClientRect()).filter(r => r.width > 0).map(r => r.bottom)"
    )
    assert len(bottoms) == 2 and max(bottoms) <= foot["top"], f"drawings end at {bottoms}, the bar at {foot}"


@pytest.mark.parametrize("path", [STEP_BEAT + "&step=20", COMPARE_BEATS[0]])
def test_phone_pins_only_the_bar_and_the_page_scrolls_clear_of_it(page: Page, live_server, path):
    page.set_viewport_size(PHONE)
    page.goto(live_server + path)
    ready(page)
    bar = box(page, "#stepbar")
    assert bar["bottom"] == PHONE["height"] and bar["top"] > PHONE["height"] - 80, bar
    diagram, caption = box(page, "#diagram"), box(page, "#caption")
    assert abs(caption["top"] - diagram["bottom"]) <= 2, "the caption is not right under the diagram"
    # scrolled so the diagram's end is at the bottom of the screen, it is above the bar
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    last = page.evaluate(
        "() => { const ch = [...document.querySelectorAll('main *')].filter(e => !e.closest('#stepbar')"
        " && e.getBoundingClientRect().height > 0);"
        " return Math.max(...ch.map(e => e.getBoundingClientRect().bottom)); }"
    )
    assert last <= box(page, "#stepbar")["top"] + 1, "the end of the page stays under the bar"


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280x800", "360x740"])
def test_step_button_stays_put_across_steps(page: Page, live_server, size):
    page.set_viewport_size(size)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(live_server + "/scenes/04?beat=quorum-loses&step=18")
    ready(page)
    first = box(page, "#step-forward")
    for i in range(10):
        step_and_wait(page, "click")
        assert box(page, "#step-forward") == first, f"step {i + 1}: the Step button moved"


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280x800", "360x740"])
@pytest.mark.parametrize(
    "control",
    ["#fault-crash-1", "#run-quiet", ".beat-nav li:nth-child(2) a", "#beat .focus a"],
    ids=["fault", "quiet", "beat", "key-moment"],
)
def test_actions_below_the_viewer_bring_the_diagram_into_view(
    page: Page, live_server, console_errors, size, control
):
    page.set_viewport_size(size)
    page.set_default_timeout(TIMEOUT_MS)
    start = "&a=crash:1@3&step=4" if control == "#run-quiet" else "&step=3"  # quiet: after a fault
    page.goto(live_server + STEP_BEAT + start)
    ready(page)
    link = page.locator(control).first
    link.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, 400)")  # read on, as the learner did
    link.scroll_into_view_if_needed()
    before = page.url
    link.click()
    page.wait_for_function("u => location.href !== u", arg=before)
    settle(page)
    top = box(page, ".viewer")["top"]
    assert -1 <= top <= size["height"] / 3, f"the viewer's top is at {top}"
    assert console_errors == []


def test_space_presses_step_and_back(page: Page, live_server, console_errors):
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + STEP_BEAT + "&step=3")
    ready(page)
    page.evaluate("window.scrollTo(0, 40)")
    page.focus("#step-forward")
    expect(page.locator("#step-forward")).to_have_attribute("role", "button")
    before = page.url
    page.keyboard.press("Space")
    page.wait_for_function("u => location.href !== u", arg=before)
    settle(page)
    assert page.evaluate("scrollY") == 40, "Space scrolled the page"
    assert page.evaluate("document.activeElement.id") == "step-forward"
    stepped = page.url
    page.focus("#step-back")
    page.keyboard.press("Space")
    page.wait_for_function("u => location.href !== u", arg=stepped)
    assert page.url == before or "step=" in page.url
    assert console_errors == []


def test_focus_stays_on_the_chosen_beat(page: Page, live_server, console_errors):
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + STEP_BEAT)
    ready(page)
    target = page.locator(".beat-nav li:nth-child(3) a")
    target_id = target.get_attribute("id")
    target.focus()
    before = page.url
    page.keyboard.press("Enter")
    page.wait_for_function("u => location.href !== u", arg=before)
    settle(page)
    assert page.evaluate("document.activeElement.id") == target_id
    expect(page.locator("#" + target_id)).to_have_attribute("aria-current", "step")
    assert console_errors == []


def test_tab_goes_from_step_to_the_caption_and_the_controls_before_the_legend(page: Page, live_server):
    """From Step, Tab reads on: the caption under it, then the controls; the legend's glossary
    terms come after them (the whole order: tests/browser/test_new_learner_layout.py)."""
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + STEP_BEAT + "&step=3")
    ready(page)
    page.focus("#step-forward")
    seen = []
    while not seen or seen[-1] not in ("controls", "legend"):
        page.keyboard.press("Tab")
        seen.append(
            page.evaluate(
                "() => { const e = document.activeElement; return e.closest('#controls') ? 'controls'"
                " : e.closest('.legend') ? 'legend' : e.closest('#caption') ? 'caption' : 'other'; }"
            )
        )
        assert len(seen) < 40, seen
    assert seen[-1] == "controls", f"Tab reached the legend before the controls: {seen}"


def test_phone_keeps_focused_controls_clear_of_the_bar(page: Page, live_server):
    page.set_viewport_size(PHONE)
    page.goto(live_server + STEP_BEAT + "&step=3")
    ready(page)
    page.focus("#step-forward")
    covered = []
    for _ in range(25):
        page.keyboard.press("Tab")
        found = page.evaluate(
            "() => { const e = document.activeElement; if (e.closest('#stepbar')) return null;"
            " const r = e.getBoundingClientRect();"
            " return {id: e.id || e.textContent.trim().slice(0, 30), bottom: r.bottom}; }"
        )
        if found and found["bottom"] > box(page, "#stepbar")["top"]:
            covered.append(found)
    assert covered == []


def test_glossary_tooltip_stays_inside_a_phone_screen(page: Page, live_server):
    page.set_viewport_size(PHONE)
    page.goto(live_server + "/scenes/04")
    ready(page)
    terms = page.locator(".gl-term")
    worst = 0.0
    for i in range(min(terms.count(), 30)):
        term = terms.nth(i)
        term.focus()
        page.wait_for_timeout(50)
        right = page.evaluate(
            "id => { const t = document.getElementById(id); const r = t.getBoundingClientRect();"
            " return r.width ? r.right : 0; }",
            term.get_attribute("popovertarget"),
        )
        worst = max(worst, right)
    assert 0 < worst <= PHONE["width"], f"a definition reaches x = {worst}"


def test_last_stop_offers_the_next_beat(page: Page, live_server, console_errors):
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + STEP_BEAT + "&step=9999")
    ready(page)
    # Step itself goes on to the next beat (a phone has no Step key), as does the caption's link
    expect(page.locator("#step-forward")).to_have_text("Next beat ▶")
    assert "beat=" in (page.locator("#step-forward").get_attribute("href") or "")
    nxt = page.locator("#caption-next")
    expect(nxt).to_contain_text("Next beat:")
    before = page.url
    nxt.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("u => location.href !== u", arg=before)
    settle(page)
    assert "beat=" in page.url and page.url != before
    assert page.evaluate("document.activeElement.id") == "step-forward"
    assert console_errors == []


def test_at_the_last_stop_focus_moves_from_step_to_the_next_beat(page: Page, live_server, console_errors):
    """At the end of a beat Step becomes "Next beat"; focus stays on it, never dropping to <body>."""
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + "/scenes/05?beat=rf1-cap")
    ready(page)
    page.focus("#step-forward")
    for _ in range(20):
        if not page.evaluate(FORWARD_JS):
            break
        before = page.url
        page.keyboard.press("Enter")
        page.wait_for_function("u => location.href !== u", arg=before)
        settle(page)
    assert not page.evaluate(FORWARD_JS), "never reached the end"
    # Step itself now offers the next beat, so focus stays on it
    assert page.evaluate("document.activeElement.id") == "step-forward"
    expect(page.locator("#step-forward")).to_have_text("Next beat ▶")
    assert console_errors == []
