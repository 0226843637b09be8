"""Every value a scene's knob controls offer renders the scene (issue 10's new-learner check: in
scene 03's add-partitions beat, partitions=4 answered with a 400 error page).

A value the beat cannot run with (its `knob_limits` in the scene's TOML) runs the nearest one it
can, and the page says why, above the knobs, in place of an error.
"""

import re

import pytest

import scenes
from app.state import format_value, knob_choices
from tests.web.conftest import HTMX

ADD_PARTITIONS = "/scenes/03?beat=add-partitions"
PARTITIONS = scenes.load_scene("03").knob("partitions")
# the scenes of the check; the rest of the course is covered by its TOML limits and
# tests/scenes/test_every_built_scene.py
CHECKED_SCENES = ("01", "01a", "02", "02a", "03")
MOST_RANGE_VALUES = 12


def offered(knob) -> list[str]:
    """The values the knob's control offers: every option of a select, every stop of a slider
    (a long slider: both ends and evenly spaced stops between them)."""
    choices = knob_choices(knob)
    if choices is not None:
        return [format_value(c) for c in choices]
    stops = list(range(knob.min, knob.max + 1, knob.step or 1))
    if len(stops) > MOST_RANGE_VALUES:
        every = len(stops) // MOST_RANGE_VALUES + 1
        stops = sorted(set(stops[::every] + [stops[0], stops[-1]]))
    return [str(v) for v in stops]


def knob_notes(html: str) -> str:
    return re.search(r'<div id="knob-notes"[^>]*>(.*?)</div>', html, re.S).group(1)


@pytest.mark.parametrize("value", offered(PARTITIONS))
def test_every_partitions_value_renders_the_add_partitions_beat(client, value):
    assert offered(PARTITIONS) == [str(v) for v in range(1, 13)]  # the slider offers 1 to 12
    r = client.get(f"{ADD_PARTITIONS}&partitions={value}")
    assert r.status_code == 200 and r.template.name == "scene.html"
    ran = r.context["state"].knob("partitions")
    note = knob_notes(r.text)
    if int(value) <= 3:
        assert ran == value and note == ""
    else:
        assert ran == "3"
        assert f"partitions={value} does not work in this beat" in note
        assert "grows the topic to 4 partitions" in note and "never remove them" in note
        assert "Showing partitions=3." in note
        # the control shows the value that ran, and the diagram is drawn from it
        assert re.search(r'id="knob-partitions"[^>]*value="3"', r.text)
        assert r.context["timeline"]["count"] > 0


def test_moving_the_slider_past_the_limit_moves_it_back_with_the_reason(client):
    """The htmx update for partitions=5 from the page at 3: the same run, so a step-sized update,
    but it carries the knobs (the slider goes back to 3) and the note above them."""
    page = client.get(f"{ADD_PARTITIONS}&step=2")
    here = "http://testserver" + page.context["share"]["path"]
    r = client.get(f"{ADD_PARTITIONS}&partitions=5&step=2", headers={**HTMX, "HX-Current-URL": here})
    assert r.status_code == 200
    ids = re.findall(r'<\w+ id="([a-z-]+)"[^>]*hx-swap-oob', r.text)
    assert "knobs" in ids and "knob-notes" in ids
    assert "partitions=5 does not work in this beat" in r.text
    assert "partitions=3" in r.headers.get("HX-Replace-Url", r.headers.get("HX-Push-Url", ""))
    # the next step clears the note (the page holds it, the update empties it)
    forward = page.context["timeline"]["forward_url"]
    after = client.get(forward, headers={**HTMX, "HX-Current-URL": "http://testserver" + forward})
    assert knob_notes(after.text) == ""


def test_a_value_inside_the_limit_needs_no_note(client):
    r = client.get(f"{ADD_PARTITIONS}&partitions=2")
    assert r.status_code == 200 and knob_notes(r.text) == ""
    assert "does not work in this beat" not in r.text


@pytest.mark.parametrize(
    "scene_id, knob_key", [(s, k.key) for s in CHECKED_SCENES for k in scenes.load_scene(s).knobs]
)
def test_every_offered_knob_value_renders_every_beat(client, scene_id, knob_key):
    scene = scenes.load_scene(scene_id)
    knob = scene.knob(knob_key)
    for beat in scene.beats:
        for value in offered(knob):
            r = client.get(f"/scenes/{scene_id}", params={"beat": beat.id, knob_key: value})
            assert r.status_code == 200, (beat.id, knob_key, value, r.text[-400:])
            ran = r.context["state"].knob(knob_key)
            if ran != value:  # corrected: the page says why, at the knobs
                assert f"{knob_key}={value} does not work in this beat" in knob_notes(r.text)
