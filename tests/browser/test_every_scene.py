"""Every built scene, every beat, in a real browser: screenshots at phone and desktop width, no
sideways overflow, no console errors; a comparison beat and a state-panel scene driven by the
keyboard and mouse; and the axe scan over every built scene."""

import re

import pytest
from playwright.sync_api import Page, expect

import scenes
from tests.support.axe import blocking_violations

SCREEN_WIDTHS_PX = (360, 1280)
SCREEN_HEIGHT_PX = 900
TIMEOUT_MS = 10_000
BUILT = [s.id for s in scenes.list_scenes() if s.built]
BEATS = [(scene_id, beat.id) for scene_id in BUILT for beat in scenes.load_scene(scene_id).beats]


def ready(page: Page) -> None:
    page.wait_for_function("window.htmx !== undefined && document.documentElement.classList.contains('js')")


@pytest.mark.parametrize("width", SCREEN_WIDTHS_PX)
def test_walk_every_beat(page: Page, live_server, screenshot_dir, width, console_errors):
    """Each beat at each of its key moments and at its end; the files are looked at by a person."""
    page.set_viewport_size({"width": width, "height": SCREEN_HEIGHT_PX})
    for scene_id, beat_id in BEATS:
        page.goto(f"{live_server}/scenes/{scene_id}?beat={beat_id}")
        ready(page)
        moments = page.locator("#beat .focus a")
        hrefs = [moments.nth(i).get_attribute("href") for i in range(moments.count())]
        assert hrefs, f"{scene_id}/{beat_id} has no key moment to jump to"
        for n, href in enumerate(hrefs, start=1):
            if n == 1:
                moments.first.click()
            else:
                page.goto(live_server + href)
            step = re.search(r"[?&]step=(\d+)", href).group(1)
            page.wait_for_url(re.compile(rf"[?&]step={step}(&|$)"), timeout=TIMEOUT_MS)
            expect(page.locator("#caption .key-moment")).to_be_visible()
            page.screenshot(path=str(screenshot_dir / f"walk-{scene_id}-{beat_id}-{width}-key{n}.png"))
            page.locator("#diagram").screenshot(
                path=str(screenshot_dir / f"walk-{scene_id}-{beat_id}-{width}-key{n}-diagram.png")
            )
        page.click("#to-end")
        expect(page.locator("#to-end")).to_have_attribute("aria-disabled", "true", timeout=TIMEOUT_MS)
        panels = page.locator("#state-panels")
        if panels.inner_html().strip():
            panels.screenshot(path=str(screenshot_dir / f"walk-{scene_id}-{beat_id}-{width}-panels-end.png"))
        page.locator("#diagram").screenshot(
            path=str(screenshot_dir / f"walk-{scene_id}-{beat_id}-{width}-diagram-end.png")
        )
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{scene_id}/{beat_id} at {width}px overflows by {overflow}px"
    assert console_errors == []


def test_course_map_links_the_built_scenes_in_order(page: Page, live_server):
    page.goto(live_server + "/")
    core = page.locator("#track-core ~ .course-map a.course-title")
    hrefs = [core.nth(i).get_attribute("href") for i in range(core.count())]
    # the built core scenes, in the course map's order (scenes/data/course.toml decides it)
    order = [s.id for s in scenes.list_scenes() if s.track == "core" and s.built]
    assert hrefs[:len(order)] == [f"/scenes/{i}" for i in order]
    deep = page.locator("#track-deep ~ .course-map a.course-title")
    deep_hrefs = [deep.nth(i).get_attribute("href") for i in range(deep.count())]
    assert {"/scenes/d2", "/scenes/d3"} <= set(deep_hrefs)
    # and a learner can walk the built core scenes in that order by the "Where next" links, then
    # go deeper from 05
    page.goto(live_server + f"/scenes/{order[0]}")
    for target in order[1:]:
        page.click(".course-nav a[rel=next]")
        page.wait_for_url(re.compile(rf"/scenes/{target}(\?|$)"))
    page.goto(live_server + "/scenes/05")
    deeper = page.locator(".course-nav .deeper a")
    assert [deeper.nth(i).get_attribute("href") for i in range(deeper.count())] == deep_hrefs


def test_compare_beat_steps_both_runs_together(page: Page, live_server, console_errors):
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(live_server + "/scenes/06?beat=hw-truncation-loses")
    ready(page)
    main, other = page.locator("#diagram .run-main"), page.locator("#diagram .run-compare")
    expect(main.locator(".run-label")).to_contain_text("History")
    expect(other.locator(".run-label")).to_contain_text("Today's Kafka")
    expect(other.locator(".run-position")).to_contain_text("Step 0 of")
    page.focus("#step-forward")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"[?&]step=1(&|$)"))
    expect(other.locator(".run-position")).not_to_contain_text("Step 0 of")
    page.click("#to-end")
    expect(main.locator(".outcomes")).to_contain_text("Acknowledged but lost: m1")
    expect(other.locator(".outcomes")).to_contain_text("No acknowledged record lost")
    # side by side on a desktop, stacked on a phone
    a, b = main.bounding_box(), other.bounding_box()
    assert b["x"] > a["x"] + a["width"] / 2 and abs(a["y"] - b["y"]) < 5
    page.set_viewport_size({"width": 360, "height": 800})
    a, b = main.bounding_box(), other.bounding_box()
    assert b["y"] > a["y"] + a["height"] - 5
    # a knob that makes the comparison impossible: a note, not an error page
    page.goto(live_server + "/scenes/04?beat=not-a-quorum&replication.factor=1")
    expect(page.locator("#diagram .unavailable")).to_contain_text("quorum.required.acks")
    assert console_errors == []


def test_state_panels_follow_the_scrubber(page: Page, live_server, console_errors):
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(live_server + "/scenes/04a?beat=leader-fenced")
    ready(page)
    log = page.locator("#state-panels .metadata-log")
    expect(log).to_contain_text("PartitionRecord")
    expect(log).not_to_contain_text("PartitionChangeRecord")
    page.locator("#beat .focus a").first.click()
    page.wait_for_url(re.compile(r"[?&]step=[1-9]"))
    page.click("#to-end")
    expect(log).to_contain_text("PartitionChangeRecord")
    expect(log.locator(".md-replayed").first).to_contain_text("leaderEpoch=1")
    # isolate a broker from the fault buttons, then heal it
    page.goto(live_server + "/scenes/d3?beat=rack-loss-survives&step=90")
    ready(page)
    expect(page.locator("#state-panels .partitions .part-card")).to_have_count(6)
    page.click("#fault-isolate-7")
    page.wait_for_url(re.compile(r"a=isolate:7@90"))
    expect(page.locator("#fault-heal-7")).to_be_visible()
    page.click("#to-end")
    expect(page.locator("#state-panels .partitions")).to_contain_text("of 6 partitions take acks=all writes")
    assert console_errors == []


def _axe_paths() -> list[str]:
    paths = []
    for scene_id in BUILT:
        scene = scenes.load_scene(scene_id)
        beat = next((b for b in scene.beats if b.compare or b.label), scene.beats[0])
        paths.append(f"/scenes/{scene_id}?beat={beat.id}&step=20")
    return paths


@pytest.mark.parametrize("path", _axe_paths())
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_on_every_built_scene(page: Page, live_server, path, theme):
    page.context.add_cookies([{"name": "theme", "value": theme, "url": live_server}])
    page.goto(live_server + path)
    for summary in page.locator("details.describe summary").all():
        summary.click()
    assert blocking_violations(page) == []
