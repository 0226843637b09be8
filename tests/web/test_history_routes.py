"""Which step updates add a browser history entry (issue 10's new-learner check: every Step added
one, so the browser's Back button had to be pressed dozens of times to leave a beat).

A move along the same timeline (Step, Back, the scrubber, Restart, End, moving by engine steps)
answers with HX-Replace-Url: htmx replaces the current entry, and the address still names the
step. A new beat, knob, fault or prediction answers with HX-Push-Url: one entry per change.
"""

import pytest

from tests.web.conftest import HTMX

SCENE = "/scenes/01"
BEAT = "first-record"


def update(client, url: str, current: str | None):
    headers = dict(HTMX)
    if current is not None:
        headers["HX-Current-URL"] = "http://testserver" + current
    return client.get(url, headers=headers)


def history(response) -> tuple[str, str]:
    kinds = [h for h in ("HX-Push-Url", "HX-Replace-Url") if h in response.headers]
    assert len(kinds) == 1, f"expected one history header, got {kinds}"
    return kinds[0], response.headers[kinds[0]]


@pytest.mark.parametrize(
    "current, target",
    [
        (f"?beat={BEAT}&step=0", f"?beat={BEAT}&step=1"),  # Step
        (f"?beat={BEAT}&step=4", f"?beat={BEAT}&step=1"),  # Back, the scrubber, Restart
        (f"?beat={BEAT}&step=4", f"?beat={BEAT}&step=4&fine=1"),  # one engine step at a time
        ("", f"?beat={BEAT}&step=1"),  # the first Step from the bare scene address
    ],
    ids=["step", "back", "fine", "bare-address"],
)
def test_moving_along_the_timeline_replaces_the_history_entry(client, current, target):
    r = update(client, SCENE + target, SCENE + current)
    assert r.status_code == 200
    kind, url = history(r)
    assert kind == "HX-Replace-Url"
    # the address still holds the whole state: a reload lands on the same step
    step = target.split("step=")[1].split("&")[0]
    assert url.startswith(SCENE + "?beat=" + BEAT) and f"step={step}" in url
    assert client.get(url).context["timeline"]["step"] == int(step)


@pytest.mark.parametrize(
    "current, target",
    [
        (f"?beat={BEAT}&step=4", "?beat=consumer-pulls&step=0"),  # another beat
        (f"?beat={BEAT}&step=4", f"?beat={BEAT}&partitions=2&step=4"),  # a knob
        (f"?beat={BEAT}&step=4", f"?beat={BEAT}&a=crash:1@4&step=5"),  # a fault
        (f"?beat={BEAT}&step=4", f"?beat={BEAT}&step=4&guess=B"),  # a prediction
    ],
    ids=["beat", "knob", "fault", "guess"],
)
def test_changing_the_beat_or_the_scenario_adds_a_history_entry(client, current, target):
    kind, _ = history(update(client, SCENE + target, SCENE + current))
    assert kind == "HX-Push-Url"


def test_an_update_from_another_scene_or_without_a_current_address_adds_an_entry(client):
    assert history(update(client, SCENE + "?step=1", None))[0] == "HX-Push-Url"
    assert history(update(client, SCENE + "?step=1", "/scenes/02?step=0"))[0] == "HX-Push-Url"


def test_a_cached_step_update_keeps_its_history_header(app, client):
    cache = app.state.step_updates
    first = update(client, "/scenes/02?step=3", "/scenes/02?step=2")
    hits = cache.hits
    again = update(client, "/scenes/02?step=3", "/scenes/02?step=2")
    assert cache.hits == hits + 1
    assert history(again) == history(first) and history(first)[0] == "HX-Replace-Url"
