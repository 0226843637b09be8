"""A step update sends what changed and little else (issue 9: the step fragment's size).

The pseudocode panel moves its highlight through #code-now; the diagram carries the one geometry
the page shows (X-Diagram); panels whose HTML the page already holds (X-Panels, the hashes the
previous update sent) are left out.
"""

import re

import pytest

import scenes
from tests.web.conftest import HTMX

BUILT = [s.id for s in scenes.list_scenes() if s.built]


def oob_ids(html: str) -> list[str]:
    return re.findall(r'<\w+ id="([a-z-]+)"[^>]*hx-swap-oob', html)


def held(html: str) -> str:
    return re.search(r'id="panel-hashes" hidden data-h="([^"]*)"', html).group(1)


def step(client, scene_id: str, n: int, panels: str = "", diagram: str = "wide"):
    headers = {
        **HTMX,
        "HX-Current-URL": f"http://testserver/scenes/{scene_id}?step={n - 1}",
        "X-Diagram": diagram,
        "X-Panels": panels,
    }
    return client.get(f"/scenes/{scene_id}?step={n}", headers=headers)


@pytest.mark.parametrize("scene_id", BUILT)
def test_a_repeated_step_sends_only_the_panels_it_must(client, scene_id):
    first = step(client, scene_id, 3)
    assert first.status_code == 200
    again = step(client, scene_id, 3, held(first.text))
    # nothing changed: only the highlight and the hash list itself come back
    assert set(oob_ids(again.text)) <= {"code-now", "panel-hashes"}, oob_ids(again.text)
    assert held(again.text) == held(first.text)


@pytest.mark.parametrize("scene_id", BUILT)
def test_the_next_step_resends_what_changed_and_keeps_the_rest(client, scene_id):
    first = step(client, scene_id, 3)
    nxt = step(client, scene_id, 4, held(first.text))
    ids = set(oob_ids(nxt.text))
    assert {"diagram", "timeline", "stepbar", "panel-hashes"} <= ids
    assert "code" not in ids  # the pseudocode's lines are already in the page
    # every panel the first update sent is re-sent or still held: its hash stays in the list
    before = {p.split(":")[0] for p in held(first.text).split()}
    after = {p.split(":")[0] for p in held(nxt.text).split()}
    assert before <= after


def test_panels_that_hold_no_step_stay_out_of_a_plain_step(client):
    """The fault, question and prediction controls submit the hidden state forms (#here), so a
    step that changes no broker's state, no verdict and no open answer leaves those panels out:
    05's first beat from step 1 to 2 (every broker running, nothing acknowledged yet)."""
    first = step(client, "05", 1)
    nxt = step(client, "05", 2, held(first.text))
    ids = set(oob_ids(nxt.text))
    assert "here" in ids and not ids & {"faults", "qa", "check"}, ids
    for panel in ("faults", "qa", "check"):
        html = re.search(rf'<(\w+) id="{panel}".*?</\1>', first.text, re.S).group(0)
        assert "step=" not in html and 'name="step"' not in html, panel


def test_code_now_names_the_lines_the_full_page_lights(client):
    page = client.get("/scenes/05?step=5").text
    lit = re.findall(r'<li id="(cl-[^"]+)" class="active" aria-current="true"', page)
    assert lit, "step 5 of 05 runs a line of the pseudocode"
    update = step(client, "05", 5).text
    now = re.search(r'<div id="code-now" data-lines="([^"]*)" data-open="([^"]*)"', update)
    assert now.group(1).split() == lit
    for block in now.group(2).split():
        assert f'<details class="code-block" id="{block}" open>' in page


@pytest.mark.parametrize(("header", "wide", "narrow"), [
    ("wide", True, False), ("narrow", False, True), ("", True, True), ("bogus", True, True),
])
def test_the_diagram_carries_the_geometry_the_page_shows(client, header, wide, narrow):
    html = step(client, "05", 5, diagram=header).text
    assert ('class="cluster wide"' in html) is wide
    assert ('class="cluster narrow"' in html) is narrow
    assert ('class="svg-wrap only"' in html) is (wide != narrow)


def test_a_full_page_draws_both_geometries_and_holds_no_hashes(client):
    page = client.get("/scenes/05?step=5").text
    assert 'class="cluster wide"' in page and 'class="cluster narrow"' in page
    assert 'id="panel-hashes" hidden data-h=""' in page


@pytest.mark.parametrize("junk", ["::::", "diagram", "a:b:c " * 2000, "caption:zz diagram:"])
def test_a_garbled_panel_header_only_costs_bytes(client, junk):
    r = step(client, "05", 5, junk)
    assert r.status_code == 200 and "diagram" in oob_ids(r.text)


def test_the_same_step_update_is_rendered_once_and_served_again(app, client):
    """A workshop's learners send the same update; the second answer comes from the cache and is
    the same bytes and headers. Anything the fragment depends on (what the page holds, the host)
    makes another entry."""
    cache = app.state.step_updates
    first = step(client, "04a", 5, "")
    hits = cache.hits
    again = step(client, "04a", 5, "")
    assert cache.hits == hits + 1
    assert again.text == first.text and again.headers["HX-Replace-Url"] == first.headers["HX-Replace-Url"]
    assert again.headers["content-type"] == first.headers["content-type"]
    other = step(client, "04a", 5, held(first.text))  # the page holds more: a smaller answer
    assert cache.hits == hits + 1 and len(other.text) < len(first.text)
    elsewhere = client.get(
        "/scenes/04a?step=5", headers={**HTMX, "HX-Current-URL": "http://testserver/scenes/04a?step=4",
                                       "Host": "learn.example"},
    )  # fmt: skip
    assert cache.hits == hits + 1 and "learn.example" in elsewhere.text  # share links name the host


def test_the_step_update_cache_can_be_turned_off():
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    app = create_app(Settings(step_cache_bytes=0))
    with TestClient(app) as c:
        step(c, "04a", 5)
        step(c, "04a", 5)
    assert app.state.step_updates.hits == 0 and not app.state.step_updates.entries
