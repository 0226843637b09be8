"""Predictions in the URL: `guess=<letter>` records the learner's choice for the current beat.

A guess is part of the state (shareable, survives reload), validated against the beat's options,
dropped when the beat changes, and it does not change the scenario, so htmx gets a step-panel
swap that includes the prediction panel (under the caption since issue 10's new-learner check).
"""

import re

import scenes
from tests.web.conftest import HTMX, button_url

SCENE = "/scenes/05"
BEAT = scenes.load_scene("05").beats[0]
RIGHT = chr(ord("A") + BEAT.predict.answer)
WRONG = next(chr(ord("A") + i) for i in range(len(BEAT.predict.options)) if i != BEAT.predict.answer)


def predict_panel(html: str) -> str:
    match = re.search(r'<section id="predict".*?</section>', html, re.S)
    assert match, "no prediction panel"
    return match.group(0)


def notes(html: str) -> str:
    match = re.search(r'<div id="notes".*?</div>', html, re.S)
    return match.group(0) if match else ""


def test_each_option_is_a_button_that_keeps_the_state_and_sets_the_guess(client):
    page = client.get(f"{SCENE}?beat={BEAT.id}&step=3")
    panel = predict_panel(page.text)
    letters = re.findall(r'<button type="submit" form="act-guess" name="guess" value="([A-Z])"', panel)
    assert letters == [chr(ord("A") + i) for i in range(len(BEAT.predict.options))]
    assert "step=" not in panel  # the panel holds no step: a step update leaves it out
    for letter in letters:
        url = button_url(page.text, f"guess-{letter}")
        assert f"guess={letter}" in url and "step=3" in url and f"beat={BEAT.id}" in url
        assert url.count("guess=") == 1
    assert client.get(url).context["state"].guess == letters[-1]
    assert "Just show me the answer" in panel  # the reveal path without guessing
    assert "Not quite" not in panel and "Right:" not in panel


def test_a_wrong_guess_is_marked_and_explained(client):
    page = client.get(f"{SCENE}?beat={BEAT.id}&step=3&guess={WRONG}")
    assert page.status_code == 200
    assert page.context["state"].guess == WRONG
    panel = predict_panel(page.text)
    assert f"you chose {WRONG}, the answer is {RIGHT}" in panel
    why = BEAT.predict.why_not[ord(WRONG) - ord("A")]
    assert why.split(".")[0].replace("'", "&#39;") in panel
    assert re.search(rf'id="guess-{WRONG}"[^>]*aria-current="true"', panel)
    assert "Just show me the answer" not in panel
    cleared = button_url(page.text, "guess-clear")
    assert "guess=" not in cleared and "step=3" in cleared


def test_a_right_guess_says_so_and_shows_the_explanation(client):
    page = client.get(f"{SCENE}?beat={BEAT.id}&guess={RIGHT.lower()}")
    panel = predict_panel(page.text)
    assert page.context["state"].guess == RIGHT  # the letter is read case-insensitively
    assert f"Right: {RIGHT}." in panel and "Not quite" not in panel
    assert BEAT.predict.explanation.split(".")[0].replace("'", "&#39;") in panel


def test_the_guess_survives_a_reload_and_is_in_the_share_link(client):
    first = client.get(f"{SCENE}?beat={BEAT.id}&step=2&guess={WRONG}")
    share = first.context["share"]["path"]
    assert f"guess={WRONG}" in share
    again = client.get(share)
    assert again.context["state"].guess == WRONG
    assert predict_panel(again.text) == predict_panel(first.text)
    # stepping keeps it
    forward = first.context["timeline"]["forward_url"]
    assert f"guess={WRONG}" in forward


def test_an_invalid_guess_is_ignored_with_a_clear_note(client):
    for raw in ("Z", "AB", "1", "é"):
        page = client.get(f"{SCENE}?beat={BEAT.id}&guess={raw}")
        assert page.status_code == 200, raw
        assert page.context["state"].guess is None
        assert "is not one of this beat&#39;s options" in notes(page.text), raw
        assert "guess=" not in page.context["share"]["path"]


def test_the_guess_resets_when_the_beat_changes(client):
    page = client.get(f"{SCENE}?beat={BEAT.id}&guess={WRONG}")
    other = page.context["beat"]["next_url"]
    assert "guess=" not in other
    assert all("guess=" not in item["url"] for item in page.context["beat"]["items"])
    assert client.get(other).context["state"].guess is None


def test_a_guess_for_another_beat_is_checked_against_this_beats_options(client):
    scene = scenes.load_scene("05")
    beat = scene.beats[1]
    count = len(beat.predict.options)
    beyond = chr(ord("A") + count)
    page = client.get(f"{SCENE}?beat={beat.id}&guess={beyond}")
    assert page.context["state"].guess is None and "is not one of this beat" in notes(page.text)


def test_guessing_with_htmx_is_a_step_swap_that_resends_the_predict_panel(client):
    current = client.get(f"{SCENE}?beat={BEAT.id}&step=3")
    url = button_url(current.text, f"guess-{WRONG}")
    here = "http://testserver" + current.context["share"]["path"]
    r = client.get(url, headers={**HTMX, "HX-Current-URL": here})
    ids = re.findall(r'id="([a-z-]+)"[^>]*hx-swap-oob', r.text)
    assert "predict" in ids
    assert "knobs" not in ids and "headroom" not in ids  # the scenario did not change
    assert f"guess={WRONG}" in r.headers["HX-Push-Url"]
    assert "Not quite" in r.text
