"""The diagram on a phone: the phone geometry is the one shown, it fits the screen without a
sideways scroll box, and its text is at least 11 CSS px; on a wide screen the wide one is shown."""

import pytest
from playwright.sync_api import Page

PAGES = ["/scenes/04?beat=followers-pull&step=5", "/scenes/06?beat=fast-double-failover&step=30"]

MEASURE = """() => {
  const svg = [...document.querySelectorAll('#diagram svg.cluster')]
    .find(s => s.getBoundingClientRect().width > 0);
  const box = svg.getBoundingClientRect();
  let smallest = 1e9;
  for (const t of svg.querySelectorAll('text')) {
    if (!t.textContent.trim() || t.getBoundingClientRect().width === 0) continue;
    const px = parseFloat(getComputedStyle(t).fontSize) * box.width / svg.viewBox.baseVal.width;
    smallest = Math.min(smallest, px);
  }
  return {cls: svg.getAttribute('class'), right: box.right, viewport: window.innerWidth,
          scroll: document.documentElement.scrollWidth, smallest};
}"""


@pytest.mark.parametrize("path", PAGES)
def test_phone_diagram_fits_and_is_legible(page: Page, live_server, path):
    page.set_viewport_size({"width": 360, "height": 740})
    page.goto(live_server + path)
    m = page.evaluate(MEASURE)
    assert "narrow" in m["cls"]
    assert m["right"] <= m["viewport"] and m["scroll"] <= m["viewport"]
    assert m["smallest"] >= 11, m


def test_wide_screen_shows_the_wide_diagram(page: Page, live_server):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(live_server + PAGES[0])
    m = page.evaluate(MEASURE)
    assert "wide" in m["cls"]
