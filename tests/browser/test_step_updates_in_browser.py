"""Step updates in a real browser: the code highlight, the one diagram geometry, the panel hashes.

A step update leaves the pseudocode's lines in the page and moves the highlight (#code-now), draws
only the diagram geometry the page shows, and leaves out panels the page holds unchanged. What
the learner sees after each Step must equal what a full page load of the same URL shows.
"""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_scene import TIMEOUT_MS, forward_step, wait_for_step

SCENE = "/scenes/05"


@pytest.fixture
def scene(page: Page, live_server, console_errors):
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    assert console_errors == []


def ready(page: Page) -> None:
    page.wait_for_function("window.htmx !== undefined && document.documentElement.classList.contains('js')")


def lit_lines(page: Page) -> list[str]:
    return page.eval_on_selector_all(".pseudo li.active", "els => els.map(e => e.id)")


def open_blocks(page: Page) -> list[str]:
    return page.eval_on_selector_all("details.code-block[open]", "els => els.map(e => e.id)")


def shown_geometry(page: Page) -> list[str]:
    return page.eval_on_selector_all(
        ".run-main .cluster",
        "els => els.filter(e => getComputedStyle(e).display !== 'none').map(e => e.classList[1])",
    )


@pytest.mark.parametrize(("width", "height", "geometry"), [(1280, 800, "wide"), (360, 740, "narrow")])
def test_stepping_shows_what_a_full_load_shows(scene: Page, live_server, width, height, geometry):
    scene.set_viewport_size({"width": width, "height": height})
    scene.goto(live_server + SCENE)
    ready(scene)
    for _ in range(6):
        target = forward_step(scene)
        scene.keyboard.press("ArrowRight") if _ % 2 else scene.locator("#step-forward").click()
        wait_for_step(scene, target)
        scene.wait_for_function(
            "document.getElementById('code-now').dataset.lines.split(' ').filter(Boolean)"
            ".every(id => document.getElementById(id).classList.contains('active'))"
        )
        stepped = (lit_lines(scene), open_blocks(scene), shown_geometry(scene),
                   scene.locator("#caption").inner_text())
        url = scene.url
        fresh = scene.context.new_page()
        fresh.set_viewport_size({"width": width, "height": height})
        fresh.goto(url)
        caption = fresh.locator("#caption").inner_text()
        loaded = (lit_lines(fresh), open_blocks(fresh), shown_geometry(fresh), caption)
        fresh.close()
        assert stepped == loaded, url
        assert shown_geometry(scene) == [geometry]
    # the active line is announced as the current one
    for line_id in lit_lines(scene):
        expect(scene.locator(f"#{line_id}")).to_have_attribute("aria-current", "true")


def test_crossing_the_breakpoint_fetches_the_other_geometry(scene: Page, live_server):
    scene.set_viewport_size({"width": 1280, "height": 800})
    scene.goto(live_server + SCENE)
    ready(scene)
    target = forward_step(scene)
    scene.locator("#step-forward").click()
    wait_for_step(scene, target)
    expect(scene.locator(".run-main .cluster.narrow")).to_have_count(0)  # the update drew one
    scene.set_viewport_size({"width": 360, "height": 740})
    expect(scene.locator(".run-main .cluster.narrow")).to_have_count(1, timeout=TIMEOUT_MS)
    assert shown_geometry(scene) == ["narrow"]
    assert re.search(rf"[?&]step={target}(&|$)", scene.url)
