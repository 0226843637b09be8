"""The embed inside another site's iframe, the axe scan, and the screenshots we look at."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.support.axe import blocking_violations

SCREEN_WIDTHS_PX = (360, 1280)
SCREEN_HEIGHT_PX = 900


def test_embed_runs_in_an_iframe_on_another_origin(page: Page, live_server, other_origin, console_errors):
    host_url, host_dir = other_origin
    src = f"{live_server}/embed/05?beat=standard-setup&lock=beat&from=0&to=12"
    (host_dir / "host.html").write_text(
        '<!doctype html><html lang="en"><title>host</title><link rel="icon" href="data:,">'
        f'<h1>A blog post</h1><iframe id="frame" src="{src}" title="Build Kafka scene 05"'
        ' width="800" height="900"></iframe></html>'
    )
    page.goto(f"{host_url}/host.html")
    frame = page.frame_locator("#frame")
    expect(frame.locator("#diagram svg.cluster:visible")).to_be_visible()
    expect(frame.locator(".embed-open")).to_have_attribute("href", re.compile(r"/scenes/05\?"))
    frame.locator("#step-forward").click()
    expect(frame.locator("#timeline h2")).to_contain_text("step 1 of")
    frame.locator("#to-end").click()
    expect(frame.locator("#timeline h2")).to_contain_text(re.compile(r"step (\d+) of \1\b"))  # the last
    expect(frame.locator("#step-forward")).to_have_attribute("aria-disabled", "true")
    assert console_errors == []


def test_a_normal_page_refuses_to_be_framed(page: Page, live_server, other_origin):
    host_url, host_dir = other_origin
    (host_dir / "deny.html").write_text(
        f'<!doctype html><html lang="en"><title>host</title><iframe id="frame" src="{live_server}/scenes/05"'
        f' title="framed"></iframe></html>'
    )
    page.goto(f"{host_url}/deny.html")
    page.wait_for_timeout(500)
    frame = page.frame(url=re.compile(r"/scenes/05"))
    # Chromium replaces a refused frame with an error page: our content never renders inside it.
    assert frame is None or frame.locator("#diagram").count() == 0


@pytest.mark.parametrize(
    "path", ["/", "/scenes/05?step=14", "/scenes/05?beat=acks-all-means-one&step=30&q=x", "/embed/05?step=8"]
)
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_finds_no_serious_or_critical_violations(page: Page, live_server, path, theme):
    page.context.add_cookies([{"name": "theme", "value": theme, "url": live_server}])
    page.goto(live_server + path)
    page.locator("details.describe summary").first.click() if page.locator(
        "details.describe"
    ).count() else None
    assert blocking_violations(page) == []


@pytest.mark.parametrize("width", SCREEN_WIDTHS_PX)
def test_screenshots(page: Page, live_server, screenshot_dir, width, console_errors):
    page.set_viewport_size({"width": width, "height": SCREEN_HEIGHT_PX})
    shots = {
        "course": "/",
        "scene05": "/scenes/05?beat=standard-setup&step=14",
        "scene05-lost": "/scenes/05?beat=acks-all-means-one&unclean.leader.election.enable=true&step=1000",
        "embed05": "/embed/05?beat=standard-setup&step=8",
    }
    for name, path in shots.items():
        page.goto(live_server + path)
        page.wait_for_function("window.htmx !== undefined")
        page.screenshot(path=str(screenshot_dir / f"{name}-{width}.png"), full_page=False)
        page.locator("#diagram").first.screenshot(
            path=str(screenshot_dir / f"{name}-{width}-diagram.png")
        ) if page.locator("#diagram").count() else None
        # nothing may stick out sideways: the page itself never scrolls horizontally
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{name} at {width}px overflows by {overflow}px"
    assert console_errors == []
