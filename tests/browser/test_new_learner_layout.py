"""What issue 10's new-learner check of scenes 01, 01a and 02 found in the layout, pinned in a real
browser: the Step button moved while stepping (the drawing and the caption changed height), the
caption hid behind the phone's pinned Step bar, Tab zigzagged across the page, and the beat's
prediction sat below the fold at 1280x800."""

import pytest
from playwright.sync_api import Page

import scenes
from tests.browser.test_layout import DESKTOP, PHONE, TIMEOUT_MS, box, forward_href, ready, step_and_wait

FIRST_BEATS = {
    scene_id: scenes.load_scene(scene_id).beats[0].id for scene_id in ("01", "01a", "02", "03", "04")
}
STEPS = 6

CLEAR_OF_BAR = """() => { const c = document.getElementById('caption').getBoundingClientRect();
  const bar = document.getElementById('stepbar').getBoundingClientRect();
  return c.top >= 0 && c.bottom <= bar.top; }"""


def caption_clear_of_bar(page: Page) -> bool:
    return page.evaluate(CLEAR_OF_BAR)


def open_beat(page: Page, live_server, scene_id: str, size: dict) -> None:
    page.set_viewport_size(size)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{live_server}/scenes/{scene_id}?beat={FIRST_BEATS[scene_id]}")
    ready(page)


# -- 1. stepping never moves the Step button or the page ---------------------------------------


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280x800", "360x740"])
@pytest.mark.parametrize("scene_id", ["01", "02", "04"])
def test_the_step_button_and_the_page_stay_put_while_stepping(
    page: Page, live_server, console_errors, scene_id, size
):
    open_beat(page, live_server, scene_id, size)
    if size is PHONE and not caption_clear_of_bar(page):
        # a drawing taller than the phone's screen: the first step brings the caption clear of the
        # pinned bar (the test below); from then on nothing moves
        step_and_wait(page, "click")
        assert caption_clear_of_bar(page)
    button, scroll = box(page, "#step-forward"), page.evaluate("scrollY")
    for i in range(STEPS):
        if not forward_href(page):
            break
        step_and_wait(page, "click" if i % 2 == 0 else "ArrowRight")
        assert box(page, "#step-forward") == button, f"step {i + 1}: the Step button moved"
        assert page.evaluate("scrollY") == scroll, f"step {i + 1}: the page scrolled"
    assert console_errors == []


@pytest.mark.parametrize(
    "path", ["/scenes/02?beat=two-groups&fine=1", "/scenes/05?beat=min-isr-refuses&fine=1&step=16"]
)
def test_one_engine_step_at_a_time_keeps_the_caption_and_the_page_still(page: Page, live_server, path):
    """With fine=1 the caption tells each engine step (and a stop's key moment); its box has room for
    the tallest of them, so the phone's page does not scroll again after the first step."""
    page.set_viewport_size(PHONE)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(live_server + path)
    ready(page)
    step_and_wait(page, "click")
    page.wait_for_function(CLEAR_OF_BAR)
    caption, scroll = box(page, "#caption"), page.evaluate("scrollY")
    for i in range(STEPS):
        step_and_wait(page, "click")
        assert box(page, "#caption") == caption, f"engine step {i + 1}: the caption changed its box"
        assert page.evaluate("scrollY") == scroll


# -- 2. on a phone the caption is above the pinned bar after every step ------------------------


@pytest.mark.parametrize("scene_id", ["01", "01a", "02", "03", "04"])
def test_on_a_phone_the_caption_is_clear_of_the_pinned_bar_after_every_step(
    page: Page, live_server, console_errors, scene_id
):
    open_beat(page, live_server, scene_id, PHONE)
    bar = box(page, "#stepbar")
    assert bar["bottom"] == PHONE["height"], "the Step bar is pinned to the bottom of the screen"
    for i in range(STEPS):
        if not forward_href(page):
            break
        step_and_wait(page, "click")
        page.wait_for_function(CLEAR_OF_BAR)  # app.js scrolls it clear on the next frame, if it must
        caption = box(page, "#caption")
        assert 0 <= caption["top"] and caption["bottom"] <= box(page, "#stepbar")["top"], (
            f"step {i + 1}: {caption}"
        )
        # nothing of the caption is cut off inside it either
        assert page.evaluate(
            "(c => c.scrollHeight <= c.clientHeight + 1)(document.getElementById('caption'))"
        )
    assert console_errors == []


def test_the_page_ends_with_room_for_the_pinned_bar(page: Page, live_server):
    open_beat(page, live_server, "01", PHONE)
    padding = page.evaluate("parseFloat(getComputedStyle(document.body).paddingBottom)")
    assert padding >= box(page, "#stepbar")["bottom"] - box(page, "#stepbar")["top"]


# -- 5. Tab follows the reading order -------------------------------------------------------------

NAME_JS = """() => { const e = document.activeElement;
  const label = e.getAttribute('aria-label')
    || (e.id && document.querySelector(`label[for="${e.id}"]`) || {}).innerText
    || e.innerText || e.value || '';
  const region = e.closest('#stepbar') ? 'step controls' : e.closest('#caption') ? 'caption'
    : e.closest('#describe') ? 'diagram in words' : e.closest('#predict') ? 'prediction'
    : e.closest('#timeline, .player, #pace') ? 'timeline' : e.closest('#knobs') ? 'knobs'
    : e.closest('#beat') ? 'beat' : e.closest('.scene-header') ? 'header' : 'other';
  return [region, label.trim().replace(/\\s+/g, ' ')]; }"""
READING_ORDER = [
    "header",
    "step controls",
    "caption",
    "diagram in words",
    "prediction",
    "timeline",
    "knobs",
    "beat",
]


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280x800", "360x740"])
def test_tab_follows_the_reading_order(page: Page, live_server, size):
    """From the top of the scene: the Step controls, the caption, the knobs, then the panels, never
    back and forth between them (the new-learner check met the caption's terms before Step, and the
    "one engine step at a time" link between End and Play)."""
    page.set_viewport_size(size)
    page.goto(live_server + "/scenes/01?beat=first-record&step=4")  # a caption with glossary terms
    ready(page)
    page.focus("#main")
    focused: list[tuple[str, str]] = []
    while not focused or focused[-1][0] != "beat":
        page.keyboard.press("Tab")
        focused.append(tuple(page.evaluate(NAME_JS)))
        assert len(focused) < 60, focused
    regions = [region for region, _ in focused]
    assert "other" not in regions, focused
    order = [READING_ORDER.index(r) for r in regions]
    assert order == sorted(order), f"Tab goes back and forth: {focused}"
    assert set(regions) == set(READING_ORDER), focused
    names = [name for _, name in focused]
    step = regions.index("step controls")
    assert names[step : step + 2] == ["◀ Back", "Step ▶"]
    assert regions[step + 2] == "caption"  # the caption's glossary terms come right after Step
    timeline = names[regions.index("timeline") :]
    assert timeline[:6] == [
        "Scrub to step",
        "↺ Restart",
        "End ▶|",
        "▶ Play",
        "Speed",
        "Move one engine step at a time",
    ]
    assert regions.index("knobs") < regions.index("beat")


# -- 8. the prediction is in view as the beat begins ------------------------------------------------

PREDICTION_BEATS = [(s, b.id) for s in ("01", "02") for b in scenes.load_scene(s).beats]


@pytest.mark.parametrize(("scene_id", "beat_id"), PREDICTION_BEATS)
def test_the_prediction_is_on_the_first_screen_as_the_beat_begins(page: Page, live_server, scene_id, beat_id):
    page.set_viewport_size(DESKTOP)
    page.goto(f"{live_server}/scenes/{scene_id}?beat={beat_id}")
    ready(page)
    for selector in ("#predict-h", "#predict-q", "#predict .option:last-child"):
        found = box(page, selector)
        assert 0 <= found["top"] and found["bottom"] <= DESKTOP["height"], f"{selector} is at {found}"
    # near the caption: right under the viewer that holds it
    assert 0 <= box(page, "#predict")["top"] - box(page, ".viewer")["bottom"] <= 24


def test_answering_the_prediction_moves_neither_step_nor_the_page(page: Page, live_server, console_errors):
    page.set_viewport_size(DESKTOP)
    page.goto(f"{live_server}/scenes/01?beat=first-record")
    ready(page)
    button, scroll = box(page, "#step-forward"), page.evaluate("scrollY")
    before = page.url
    page.click("#guess-A")
    page.wait_for_function(
        "u => location.href !== u && !!document.querySelector('#predict .feedback')", arg=before
    )
    assert box(page, "#step-forward") == button and page.evaluate("scrollY") == scroll
    step_and_wait(page, "click")
    assert box(page, "#step-forward") == button and page.evaluate("scrollY") == scroll
    assert console_errors == []
