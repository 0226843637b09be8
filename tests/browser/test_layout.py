"""The scene's layout in a real browser: what the first screen shows, and that stepping (by
mouse or by the Step key) never moves the page.

Issue 8 measured a jump of about 900 px per Step click: the focused Step link sat inside the
diagram panel, htmx swaps that panel by inserting the new one before removing the old, and
removing the focused link made Chromium lay out the page with both panels in it, so scroll
anchoring "kept" the old panel in place by scrolling a whole diagram down. The stage now opts
out of scroll anchoring (static/app.css); these tests pin the behaviour, not the mechanism.
"""

import pytest
from playwright.sync_api import Page, expect

import scenes

TIMEOUT_MS = 10_000
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 360, "height": 740}
STEP_BEAT = "/scenes/05?beat=min-isr-refuses"
COMPARE_BEAT = "/scenes/06?beat=hw-truncation-loses"
BUILT = [s.id for s in scenes.list_scenes() if s.built]
PLAIN_BEATS = [
    f"/scenes/{scene_id}?beat={beat.id}"
    for scene_id in BUILT
    for beat in scenes.load_scene(scene_id).beats
    if beat.compare is None
]
COMPARE_BEATS = [
    f"/scenes/{scene_id}?beat={beat.id}"
    for scene_id in BUILT
    for beat in scenes.load_scene(scene_id).beats
    if beat.compare is not None
]

CAPTION_CLEAR_OF_BAR = """() => { const c = document.getElementById('caption').getBoundingClientRect();
  return c.top >= 0 && c.bottom <= document.getElementById('stepbar').getBoundingClientRect().top; }"""
BOX_JS = """sel => { const e = document.querySelector(sel); if (!e) return null;
  const r = e.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }"""


def ready(page: Page) -> None:
    page.wait_for_function("window.htmx !== undefined && document.documentElement.classList.contains('js')")


def box(page: Page, selector: str) -> dict:
    found = page.evaluate(BOX_JS, selector)
    assert found is not None, f"{selector} is not on the page"
    return found


# Step's link within the beat; None at the beat's last stop, where Step reads "Next beat" (data-next)
FORWARD_JS = "(e => e && !e.dataset.next ? (e.href || null) : null)(document.getElementById('step-forward'))"


def forward_href(page: Page) -> str | None:
    return page.evaluate(FORWARD_JS)


def step_and_wait(page: Page, how: str) -> None:
    """One step by `how` ("click", "ArrowRight" or "n"); returns once the swap has landed."""
    before = forward_href(page)
    assert before, "the Step link is missing or disabled"
    if how == "click":
        page.click("#step-forward")
    else:
        page.keyboard.press(how)
    page.wait_for_function("old => (document.getElementById('step-forward') || {}).href !== old", arg=before)


@pytest.mark.parametrize("how", ["click", "key"])
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280x800", "360x740"])
@pytest.mark.parametrize("path", [STEP_BEAT, COMPARE_BEAT], ids=["plain", "compare"])
def test_stepping_never_moves_the_page(page: Page, live_server, console_errors, size, how, path):
    page.set_viewport_size(size)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(live_server + path)
    ready(page)
    # scrolled a little, as a reader would be: at scrollY 0 the browser never anchors, which
    # would hide the bug this test is about
    page.evaluate("window.scrollTo(0, 40)")
    page.wait_for_function("scrollY === 40")

    def press(i: int) -> None:
        step_and_wait(page, "click" if how == "click" else ("ArrowRight" if i % 2 == 0 else "n"))

    if size is PHONE:
        # the Step bar is pinned to the screen's bottom; the first step scrolls the caption clear of
        # it when it is not (tests/browser/test_new_learner_layout.py), and then nothing moves
        press(1)
        page.wait_for_function(CAPTION_CLEAR_OF_BAR)
    top, scroll = box(page, "#diagram")["top"], page.evaluate("scrollY")
    for i in range(10):
        press(i)
        diagram = box(page, "#diagram")
        assert diagram["top"] == top, f"step {i + 1}: the diagram moved from {top} to {diagram['top']}"
        assert page.evaluate("scrollY") == scroll, f"step {i + 1}: the page scrolled"
        if size is DESKTOP:
            assert 0 <= diagram["top"] < size["height"], f"step {i + 1}: the diagram's top left the screen"
            assert diagram["bottom"] > 0
        else:
            assert page.evaluate(CAPTION_CLEAR_OF_BAR), f"step {i + 1}: the caption is under the bar"
    assert console_errors == []


def test_step_key_goes_back_and_leaves_fields_alone(page: Page, live_server, console_errors):
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + STEP_BEAT)
    ready(page)
    expect(page.locator("#step-forward")).to_have_attribute("aria-keyshortcuts", "ArrowRight N")
    expect(page.locator(".stepbar .key-hint")).to_be_visible()
    step_and_wait(page, "n")
    step_and_wait(page, "ArrowRight")
    stepped = page.url
    expect(page.locator("#step-back")).to_have_attribute("aria-keyshortcuts", "ArrowLeft P")
    page.keyboard.press("p")
    page.wait_for_function("u => location.href !== u", arg=stepped)
    # keys typed into a field, or pressed on the scrubber, are the field's: the Step key stays out
    page.fill("#ask", "")
    page.locator("#ask").press_sequentially("np")
    expect(page.locator("#ask")).to_have_value("np")
    for selector in ("#ask", "#step", "#knob-acks"):
        taken = page.evaluate(
            """sel => { const e = new KeyboardEvent('keydown', {key: 'n', bubbles: true, cancelable: true});
              document.querySelector(sel).dispatchEvent(e); return e.defaultPrevented; }""",
            selector,
        )
        assert taken is False, f"the Step key took a key pressed in {selector}"
    assert console_errors == []


def test_the_step_key_at_a_beats_last_stop_goes_on_to_the_next_beat(page: Page, live_server, console_errors):
    """At the last stop Step becomes "Next beat", and the Step key follows it."""
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + "/scenes/01?beat=first-record&step=999")
    ready(page)
    expect(page.locator("#caption-next")).to_be_visible()
    assert forward_href(page) is None
    assert "beat=consumer-pulls" in (page.locator("#step-forward").get_attribute("href") or "")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('consumer-pulls')")
    assert console_errors == []


def test_on_a_phone_step_itself_goes_on_at_a_beats_last_stop(page: Page, live_server, console_errors):
    """The new-learner check at 360x740: at a beat's end Step was greyed out and the "Next beat"
    link sat under the pinned bar, a dead end for a finger. Step itself now reads "Next beat"."""
    page.set_viewport_size({"width": 360, "height": 740})
    page.goto(live_server + "/scenes/03?beat=hot-partition&step=999")
    ready(page)
    button = page.locator("#step-forward")
    expect(button).to_have_text("Next beat ▶")
    button.click()
    page.wait_for_function("() => location.search.includes('add-partitions')")
    expect(page.locator("#step-forward")).to_have_text("Step ▶")
    assert console_errors == []


@pytest.mark.parametrize("path", PLAIN_BEATS)
def test_first_screen_at_1280x800(page: Page, live_server, path):
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + path)
    ready(page)
    for selector in ("#diagram", "#caption", "#step-forward", "#knobs select, #knobs input[type=range]"):
        found = box(page, selector)
        assert 0 <= found["top"] and found["bottom"] <= DESKTOP["height"], f"{selector} is at {found}"
    title = box(page, ".scene-header h1")
    assert title["bottom"] - title["top"] < 45, "the scene title takes more than one line"


@pytest.mark.parametrize("path", COMPARE_BEATS)
def test_compared_runs_keep_the_caption_and_step_on_the_first_screen(page: Page, live_server, path):
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + path)
    ready(page)
    assert 0 <= box(page, "#diagram")["top"] < 200
    for selector in ("#caption", "#step-forward"):
        found = box(page, selector)
        assert 0 <= found["top"] and found["bottom"] <= DESKTOP["height"], f"{selector} is at {found}"


PHONE_PATHS = [STEP_BEAT + "&step=20", "/scenes/d3?beat=rack-loss-survives&step=90", COMPARE_BEAT]


@pytest.mark.parametrize("path", PHONE_PATHS)
def test_phone_is_one_column_in_reading_order(page: Page, live_server, path):
    page.set_viewport_size(PHONE)
    page.goto(live_server + path)
    ready(page)
    diagram, caption = box(page, "#diagram"), box(page, "#caption")
    knobs, beat = box(page, "#knobs"), box(page, "#beat")
    bar = box(page, "#stepbar")
    assert 0 <= diagram["top"] < caption["top"] < knobs["top"] < beat["top"]
    # only the compact Step bar is pinned, at the bottom; the caption follows the diagram in the page
    # (a pinned caption left about 300 px of the screen for the diagram)
    assert bar["bottom"] == PHONE["height"] and bar["top"] > PHONE["height"] - 80
    assert abs(caption["top"] - diagram["bottom"]) <= 2
    problems = page.evaluate(
        """() => {
      const out = [];
      for (const el of document.querySelectorAll('main *')) {
        // inside the drawing is the diagram's own business (tests/web/test_diagram.py)
        if (el.closest('.visually-hidden') || (el.parentElement && el.parentElement.closest('svg'))) continue;
        const r = el.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) continue;
        if (r.right > innerWidth + 1 || r.left < -1) out.push('wide: ' + el.tagName + '.' + el.className);
        const text = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
        const size = parseFloat(getComputedStyle(el).fontSize);
        if (text && size < 11) out.push('small: ' + el.tagName + '.' + el.className);
      }
      return out;
    }"""
    )
    assert problems == []
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0


@pytest.mark.parametrize("size", [{"width": 800, "height": 900}, PHONE], ids=["800x900", "360x740"])
def test_embed_shows_diagram_bar_then_caption(page: Page, live_server, console_errors, size):
    page.set_viewport_size(size)
    page.goto(live_server + "/embed/05?beat=standard-setup&step=3")
    ready(page)
    diagram, caption, bar = box(page, "#diagram"), box(page, "#caption"), box(page, "#stepbar")
    if size is PHONE:  # the bar is pinned to the bottom of the screen, the caption follows the diagram
        assert diagram["top"] < caption["top"] and bar["bottom"] == size["height"]
        step_and_wait(page, "click")  # it scrolls the caption clear of the bar, once
        page.wait_for_function(CAPTION_CLEAR_OF_BAR)
    else:
        assert diagram["top"] < bar["top"] < caption["top"] < caption["bottom"] <= size["height"]
    top = box(page, "#diagram")["top"]
    for _ in range(3):
        step_and_wait(page, "click")
        assert box(page, "#diagram")["top"] == top
    assert console_errors == []


@pytest.mark.parametrize("scroll_to", [300, 700, 1000, 1500])
@pytest.mark.parametrize("path", [STEP_BEAT, COMPARE_BEAT], ids=["plain", "compare"])
def test_step_key_keeps_a_scrolled_reader_in_place(page: Page, live_server, console_errors, path, scroll_to):
    """Reading the knobs or the log further down, the Step key steps without moving the page
    (focus moves to the swapped Step link after the first press, the case that used to jump)."""
    page.set_viewport_size(DESKTOP)
    page.goto(live_server + path)
    ready(page)
    page.evaluate(f"window.scrollTo(0, {scroll_to})")
    page.wait_for_function(f"scrollY === {scroll_to}")
    for i in range(6):
        step_and_wait(page, "ArrowRight")
        assert page.evaluate("scrollY") == scroll_to, f"step {i + 1}: the page scrolled"
    assert console_errors == []
