"""One axe check for every browser test: the violations that block a page, as readable lines."""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

BLOCKING_IMPACTS = {"serious", "critical"}


def blocking_violations(page: Page) -> list[str]:
    """axe's serious and critical violations on the page as it is now, each with its first targets."""
    results = Axe().run(page)
    return [f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
            for v in results.response["violations"] if v.get("impact") in BLOCKING_IMPACTS]
