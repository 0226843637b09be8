"""Workshop routes (app/workshops/routes.py): what a presenter and a room get back over HTTP.

A workshop is one presenter driving a scene for a room of participants, so the checks follow
the ways it can go wrong in front of that room: a page that is not the scene page, a control
endpoint that obeys someone without the presenter's token, a published address that leaks the
poll's answer (`guess=`) or points off-site, a code typed wrong, a name that smuggles markup, a
poll whose text is not the scene's own question, and a room or a client that is not held to its
limits. Every "bad input" check asserts a 4xx with a reason, never a 500.

Each test gets its own app with `data_dir=tmp_path`, so workshops land in a throwaway SQLite file.
A "new browser" is the same client with its cookie jar cleared; `client.portal` runs store
queries on the app's own event loop.
"""

import html
import re
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette 1.x warns that its TestClient wants httpx2
    from fastapi.testclient import TestClient

import scenes
from app.main import create_app
from app.settings import Settings
from app.workshops.routes import CODE_LEN, PID_COOKIE

SCENE = "04"
PREDICT_BEAT = next(b for b in scenes.load_scene(SCENE).beats if b.predict is not None)


def make_client(tmp_path, **limits):
    return TestClient(create_app(Settings(data_dir=tmp_path, **limits)), raise_server_exceptions=False)


@pytest.fixture
def client(tmp_path):
    with make_client(tmp_path) as test_client:
        yield test_client


def create(client, scene=SCENE, **form):
    """A new workshop: (code, token, presenter page path)."""
    r = client.post("/workshops/new", data={"scene": scene, **form}, follow_redirects=False)
    assert r.status_code == 303, r.text
    path = r.headers["location"]
    m = re.fullmatch(r"/w/([A-Z0-9]+)/present/([A-Za-z0-9_-]+)", path)
    assert m, path
    return m.group(1), m.group(2), path


def new_browser(client):
    """Forget this client's participant cookie: the next request is a browser never seen."""
    client.cookies.clear()


def reason(page: str) -> str:
    m = re.search(r'<p class="reason">(.*?)</p>', page, re.S)
    assert m, "no reason on the error page"
    return html.unescape(m.group(1))


def words(fragment: str) -> str:
    """The text a reader sees: tags gone, entities decoded, white space collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def ws_bar(page: str) -> str:
    m = re.search(r'<section id="ws-bar".*?</section>', page, re.S)
    assert m, "no workshop bar"
    return m.group(0)


# -- create and open ----------------------------------------------------------------------------


def test_the_form_lists_every_built_scene_and_only_those(client):
    r = client.get("/workshops/new")
    assert r.status_code == 200
    offered = re.findall(r'<option value="([^"]+)"', r.text)
    assert offered == [s.id for s in scenes.list_scenes() if s.built]
    assert SCENE in offered


def test_creating_a_workshop_needs_a_built_scene(client):
    for bad in ("", "zz", "../04"):
        r = client.post("/workshops/new", data={"scene": bad}, follow_redirects=False)
        assert r.status_code == 400, bad


def test_the_presenter_page_is_the_scene_page_with_the_join_card_and_notes(client):
    code, token, path = create(client)
    assert len(code) == CODE_LEN
    page = client.get(path)
    scene_page = client.get(f"/scenes/{SCENE}")
    assert page.status_code == 200 and page.template.name == "scene.html"
    for panel in ("diagram", "stepbar", "beat", "controls", "timeline"):
        assert f'id="{panel}"' in scene_page.text, panel  # the reference really has it
        assert f'id="{panel}"' in page.text, panel
    bar = ws_bar(page.text)
    assert 'data-role="presenter"' in bar and code in bar
    assert re.search(r'<div class="ws-qr"><svg [^>]*role="img"', bar), "no QR svg in the join card"
    assert f"/w/{code}" in bar
    assert 'id="ws-notes"' in page.text
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"


def test_the_presenter_page_refuses_a_wrong_token(client):
    code, token, _ = create(client)
    r = client.get(f"/w/{code}/present/{token[:-2]}xx")
    assert r.status_code == 403
    assert 'data-role="presenter"' not in r.text and token not in r.text


def test_the_participant_page_has_the_participant_bar_and_sets_an_httponly_cookie(client):
    code, token, _ = create(client)
    new_browser(client)
    r = client.get(f"/w/{code}")
    assert r.status_code == 200 and r.template.name == "scene.html"
    bar = ws_bar(r.text)
    assert 'data-role="participant"' in bar and 'data-token' not in bar
    assert token not in r.text  # the presenter's key never reaches the room
    assert 'id="ws-notes"' not in r.text
    assert 'id="diagram"' in r.text
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{PID_COOKIE}=") and "httponly" in cookie.lower()
    assert r.headers["cache-control"] == "no-store"
    # a known browser is not given a new id
    again = client.get(f"/w/{code}")
    assert again.status_code == 200 and "set-cookie" not in again.headers


def test_a_title_with_markup_is_shown_as_text(client):
    code, token, path = create(client, title="<script>alert(1)</script>\x00\x07 Tuesday")
    page = client.get(path).text
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; Tuesday" in ws_bar(page)


# -- codes ----------------------------------------------------------------------------------------


def test_an_unknown_code_is_a_404_that_says_so(client):
    r = client.get("/w/ZZZZZZ")
    assert r.status_code == 404
    # the join page again, saying why, with the box to type the code once more
    assert "No workshop has the code" in r.text and "ZZZZZZ" in r.text
    assert 'id="ws-code"' in r.text and 'role="alert"' in r.text
    assert client.get("/w/not-a-code-at-all!").status_code == 404
    # an address under an unknown code (the stream, a control) gets the plain error page
    assert "No workshop has the code" in reason(client.get("/w/ZZZZZZ/state").text)


def test_the_presenters_address_without_its_secret_says_how_to_join(client):
    code, _, _ = create(client)
    r = client.get(f"/w/{code}/present")
    assert r.status_code == 403 and f"/w/{code}" in reason(r.text)


def test_a_lower_case_or_spaced_code_goes_to_the_canonical_address(client):
    code, _, _ = create(client)
    r = client.get(f"/w/{code.lower()}", follow_redirects=False)
    assert r.status_code in (301, 302, 303, 307, 308) and r.headers["location"] == f"/w/{code}"
    r = client.get("/w", params={"code": f" {code[:3].lower()}-{code[3:]} "}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/w/{code}"


def test_too_many_unknown_codes_from_one_client_is_a_429_with_retry_after(tmp_path):
    with make_client(tmp_path, workshop_misses_per_min=3) as client:
        code, _, _ = create(client)
        statuses = [client.get(f"/w/ZZZZZ{c}").status_code for c in "2345"]
        assert statuses == [404, 404, 404, 429]
        r = client.get("/w/ZZZZZ6")
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert "Too many unknown workshop codes" in reason(r.text)
        assert client.get(f"/w/{code}").status_code == 200  # a known code is not a miss


def test_an_expired_workshop_is_a_410_page(tmp_path):
    with make_client(tmp_path, workshop_ttl_s=0.0) as client:
        r = client.post("/workshops/new", data={"scene": SCENE})
        assert r.status_code == 410
        assert "has ended" in r.text and "expired" in reason(r.text)
        code = r.url.path.split("/")[2]
        for path in (f"/w/{code}", f"/w/{code}/poll", f"/w/{code}/state"):
            assert client.get(path).status_code == 410, path
        assert client.post(f"/w/{code}/answer", data={"choice": "A"}).status_code == 410


# -- presenter controls ---------------------------------------------------------------------------


def test_control_endpoints_refuse_a_missing_or_wrong_token(client):
    code, token, _ = create(client)
    for headers in ({}, {"X-Presenter-Token": "wrong"}, {"X-Presenter-Token": token[:-1]}):
        r = client.post(f"/w/{code}/state", data={"url": f"/scenes/{SCENE}?step=2"}, headers=headers)
        assert r.status_code == 403, headers
        for action in ("open", "close", "reveal"):
            r = client.post(f"/w/{code}/poll", data={"action": action}, headers=headers)
            assert r.status_code == 403, (headers, action)
    assert client.get(f"/w/{code}/state").json()["seq"] == 1  # nothing was published


def test_the_presenter_publishes_a_scene_url_and_gets_a_new_seq_and_the_canonical_url(client):
    code, token, _ = create(client)
    before = client.get(f"/w/{code}/state").json()
    r = client.post(
        f"/w/{code}/state", data={"url": f"/scenes/{SCENE}?step=2"}, headers={"X-Presenter-Token": token}
    )
    assert r.status_code == 200
    body = r.json()
    assert body["changed"] is True and body["seq"] == before["seq"] + 1
    assert body["url"].startswith(f"/scenes/{SCENE}?") and "step=2" in body["url"]
    assert "beat=" in body["url"]  # canonical: every part of the state spelled out
    assert client.get(f"/w/{code}/state").json() == {"seq": body["seq"], "url": body["url"]}
    # the same state again publishes nothing
    again = client.post(f"/w/{code}/state", data={"url": body["url"]}, headers={"X-Presenter-Token": token})
    assert again.json() == {"seq": body["seq"], "url": body["url"], "changed": False}
    # the room's page now renders that state
    new_browser(client)
    assert client.get(f"/w/{code}").context["state"].step == 2


def test_the_presenters_guess_is_never_published(client):
    code, token, _ = create(client)
    url = f"/scenes/{SCENE}?beat={PREDICT_BEAT.id}&step=1&guess=A&lock=1"
    r = client.post(f"/w/{code}/state", data={"url": url}, headers={"X-Presenter-Token": token})
    assert r.status_code == 200
    assert "guess" not in r.json()["url"] and "lock" not in r.json()["url"]
    assert "guess" not in client.get(f"/w/{code}/state").json()["url"]
    new_browser(client)
    assert client.get(f"/w/{code}").context["state"].guess is None


@pytest.mark.parametrize(
    "url",
    [
        "/etc/passwd",
        "/about",
        "/scenes/",
        "/scenes/zz",
        "/scenes/04/../05",
        f"/scenes/{SCENE}?step=abc",
        f"/scenes/{SCENE}?beat=no-such-beat",
        f"/scenes/{SCENE}?step=" + "9" * 40,
        f"/scenes/{SCENE}?" + "x=1&" * 2000,
        "http://evil.example/scenes/04",
        "https://evil.example/scenes/04?step=1",
        "//evil.example/scenes/04",
        "javascript:alert(1)",
        "http://[::1/scenes/04",
        "",
    ],
)
def test_a_bad_scene_url_is_a_4xx_with_a_reason(client, url):
    code, token, _ = create(client)
    r = client.post(f"/w/{code}/state", data={"url": url}, headers={"X-Presenter-Token": token})
    assert 400 <= r.status_code < 500, (url, r.status_code)
    assert reason(r.text)
    assert client.get(f"/w/{code}/state").json()["seq"] == 1


def test_a_state_post_without_a_url_is_a_400_and_json_clients_get_json(client):
    code, token, _ = create(client)
    r = client.post(f"/w/{code}/state", data={}, headers={"X-Presenter-Token": token})
    assert r.status_code == 400 and reason(r.text)
    r = client.post(
        f"/w/{code}/state",
        json={"url": "https://evil.example/scenes/04"},
        headers={"X-Presenter-Token": token, "Accept": "application/json"},
    )
    assert 400 <= r.status_code < 500


# -- names ----------------------------------------------------------------------------------------


def test_a_name_is_cleaned_cut_and_never_rendered_as_markup(client):
    code, token, path = create(client)
    new_browser(client)
    assert client.get(f"/w/{code}").status_code == 200
    raw = "<script>alert(1)</script>\x00\x1b[31m\u202e" + "x" * 500
    r = client.post(f"/w/{code}/name", data={"name": raw})
    assert r.status_code == 204
    store = client.app.state.workshops.store
    room = client.portal.call(store.room, code, 0.0, 40)
    assert len(room.names) == 1
    name = room.names[0]
    limit = Settings().workshop_name_chars
    assert len(name) == limit and name.startswith("<script>alert(1)</script>")
    assert not any(ord(ch) < 32 or ch == "\u202e" for ch in name)
    # nowhere a page renders for the presenter or the room shows it unescaped
    for page in (client.get(path).text, client.get(f"/w/{code}").text, client.get(f"/w/{code}/poll").text):
        assert "<script>alert(1)" not in page
    # joining again without a name keeps it; a name from a browser that never joined is refused
    assert client.get(f"/w/{code}").status_code == 200
    assert client.portal.call(store.room, code, 0.0, 40).names == [name]
    new_browser(client)
    assert client.post(f"/w/{code}/name", data={"name": "Eve"}).status_code == 403


def test_a_huge_name_body_is_not_a_500(client):
    code, _, _ = create(client)
    new_browser(client)
    client.get(f"/w/{code}")
    r = client.post(f"/w/{code}/name", data={"name": "<b>" * 5000})
    assert r.status_code < 500


# -- polls ----------------------------------------------------------------------------------------


def poll_section(page: str) -> str:
    m = re.search(r'<section id="ws-poll".*?</section>', page, re.S)
    assert m, "no poll panel"
    return m.group(0)


def start_poll(client):
    """A workshop on the first beat with a predict question, a participant (the client's cookie)
    and an open poll; returns (code, token)."""
    code, token, _ = create(client)
    headers = {"X-Presenter-Token": token}
    url = f"/scenes/{SCENE}?beat={PREDICT_BEAT.id}"
    assert client.post(f"/w/{code}/state", data={"url": url}, headers=headers).status_code == 200
    new_browser(client)
    assert client.get(f"/w/{code}").status_code == 200
    r = client.post(f"/w/{code}/poll", data={"action": "open"}, headers=headers)
    assert r.status_code == 200
    return code, token


def test_an_open_poll_shows_the_scenes_question_as_buttons_and_no_answer(client):
    code, _ = start_poll(client)
    predict = PREDICT_BEAT.predict
    panel = poll_section(client.get(f"/w/{code}/poll").text)
    letters = re.findall(r'<button type="submit" name="choice" value="([A-Z])"', panel)
    assert letters == [chr(ord("A") + i) for i in range(len(predict.options))]
    text = words(panel)
    assert " ".join(predict.question.split()) in text
    for option in predict.options:
        assert " ".join(option.split()) in text
    assert "Answer:" not in text and " ".join(predict.explanation.split()) not in text
    assert "poll-chart" not in panel  # the room sees no tally before the reveal


def test_answers_are_checked_counted_and_revealed_with_the_scenes_explanation(client):
    code, token = start_poll(client)
    predict = PREDICT_BEAT.predict
    right = chr(ord("A") + predict.answer)
    wrong = next(chr(ord("A") + i) for i in range(len(predict.options)) if i != predict.answer)
    for bad in ("", "Z", "a", "AB", "<"):
        r = client.post(f"/w/{code}/answer", data={"choice": bad})
        assert r.status_code == 400, bad
    r = client.post(f"/w/{code}/answer", data={"choice": wrong})
    assert r.status_code == 200 and f"You answered {wrong}" in r.text
    # the presenter's panel has the chart with one answer for `wrong`
    mine = dict(client.cookies)
    new_browser(client)
    presenter = client.get(f"/w/{code}/poll", headers={"X-Presenter-Token": token})
    chart = re.search(r'<svg class="poll-chart".*?</svg>', presenter.text, re.S)
    assert chart, "no chart for the presenter"
    assert f"1 answer. {wrong}: 1" in chart.group(0)
    assert "right answer" not in chart.group(0)  # not revealed yet
    # a participant who never joined cannot answer
    assert client.post(f"/w/{code}/answer", data={"choice": right}).status_code == 403
    # reveal: the room's panel has the answer, the explanation and the chart
    revealed = client.post(f"/w/{code}/poll", data={"action": "reveal"}, headers={"X-Presenter-Token": token})
    assert revealed.status_code == 200
    for name, value in mine.items():
        client.cookies.set(name, value)
    panel = poll_section(client.get(f"/w/{code}/poll").text)
    text = words(panel)
    assert f"Answer: {right}. {' '.join(predict.options[predict.answer].split())}" in text
    assert " ".join(predict.explanation.split()) in text
    assert f"you chose {wrong}" in text
    assert '<svg class="poll-chart"' in panel and f"The right answer is {right}" in panel
    assert "<button" not in panel
    # after the reveal no more answers
    assert client.post(f"/w/{code}/answer", data={"choice": right}).status_code == 409


def test_no_answers_after_the_poll_is_closed(client):
    code, token = start_poll(client)
    assert client.post(f"/w/{code}/answer", data={"choice": "A"}).status_code == 200
    r = client.post(f"/w/{code}/poll", data={"action": "close"}, headers={"X-Presenter-Token": token})
    assert r.status_code == 200 and "Poll closed" in r.text
    r = client.post(f"/w/{code}/answer", data={"choice": "B"})
    assert r.status_code == 409 and reason(r.text)
    panel = poll_section(client.get(f"/w/{code}/poll").text)
    assert "<button" not in panel and "Answer:" not in panel  # closed is not revealed


def test_a_poll_needs_a_predict_question_and_a_known_action(client):
    code, token, _ = create(client)
    headers = {"X-Presenter-Token": token}
    quiet = next((b for b in scenes.load_scene(SCENE).beats if b.predict is None), None)
    if quiet is not None:
        client.post(f"/w/{code}/state", data={"url": f"/scenes/{SCENE}?beat={quiet.id}"}, headers=headers)
        assert client.post(f"/w/{code}/poll", data={"action": "open"}, headers=headers).status_code == 409
    for action in ("close", "reveal", "explode"):  # no poll open yet / no such action
        assert client.post(f"/w/{code}/poll", data={"action": action}, headers=headers).status_code == 400


def test_answers_beyond_the_per_minute_limit_are_a_429(tmp_path):
    with make_client(tmp_path, workshop_answers_per_min=3) as client:
        code, _ = start_poll(client)
        statuses = [client.post(f"/w/{code}/answer", data={"choice": c}).status_code for c in "ABAB"]
        assert statuses == [200, 200, 200, 429]
        assert int(client.post(f"/w/{code}/answer", data={"choice": "A"}).headers["retry-after"]) >= 1


# -- the room -------------------------------------------------------------------------------------


def test_a_full_room_refuses_new_browsers_but_not_known_ones(tmp_path):
    with make_client(tmp_path, workshop_max_participants=2) as client:
        code, _, _ = create(client)
        new_browser(client)
        assert client.get(f"/w/{code}").status_code == 200
        first = dict(client.cookies)
        new_browser(client)
        assert client.get(f"/w/{code}").status_code == 200
        new_browser(client)
        r = client.get(f"/w/{code}")
        assert r.status_code == 403 and "room is full" in r.text.lower()
        assert "set-cookie" not in r.headers
        new_browser(client)
        for name, value in first.items():
            client.cookies.set(name, value)
        assert client.get(f"/w/{code}").status_code == 200


def test_joins_beyond_the_per_minute_limit_are_a_429(tmp_path):
    with make_client(tmp_path, workshop_joins_per_min=2) as client:
        code, _, _ = create(client)
        statuses = []
        for _ in range(3):
            new_browser(client)
            statuses.append(client.get(f"/w/{code}").status_code)
        assert statuses == [200, 200, 429]
        new_browser(client)
        r = client.get(f"/w/{code}")
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1


def test_the_event_stream_wants_a_participant_or_the_token(client):
    code, token, _ = create(client)
    new_browser(client)
    assert client.get(f"/w/{code}/events").status_code == 403
    assert client.get(f"/w/{code}/events", params={"token": "wrong"}).status_code == 403


def test_the_qr_code_is_an_svg_of_the_join_address(client):
    code, _, _ = create(client)
    r = client.get(f"/w/{code}/qr.svg")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    assert r.text.lstrip().startswith("<svg") and f"/w/{code}" in r.text


# -- after the new-user check: hiding polls, a poll leaving with its beat, reloads, the presenter bar


def participant_poll(client, code) -> str:
    return poll_section(client.get(f"/w/{code}/poll").text)


def events(client, code):
    store = client.app.state.workshops.store
    return client.portal.call(store.events_after, code, 0)


def test_the_presenter_can_hide_a_poll_and_nobody_else_can(client):
    code, token = start_poll(client)
    question = " ".join(PREDICT_BEAT.predict.question.split())
    assert question in words(participant_poll(client, code))
    # the participant (this client's cookie) has no token: refused, the poll stays
    assert client.post(f"/w/{code}/poll", data={"action": "hide"}).status_code == 403
    assert question in words(participant_poll(client, code))
    r = client.post(f"/w/{code}/poll", data={"action": "hide"}, headers={"X-Presenter-Token": token})
    assert r.status_code == 200
    panel = participant_poll(client, code)
    assert re.match(r"<section [^>]*\bhidden\b", panel), panel[:200]
    assert question not in words(panel) and "<button" not in panel
    assert [e.data["action"] for e in events(client, code) if e.kind == "poll"] == ["open", "hide"]


def publish_state(client, code, token, url):
    r = client.post(f"/w/{code}/state", data={"url": url}, headers={"X-Presenter-Token": token})
    assert r.status_code == 200 and r.json()["changed"] is True, r.text
    return r.json()


def test_a_poll_stays_for_another_step_of_its_beat_but_takes_no_more_answers(client):
    code, token = start_poll(client)
    question = " ".join(PREDICT_BEAT.predict.question.split())
    publish_state(client, code, token, f"/scenes/{SCENE}?beat={PREDICT_BEAT.id}&step=2")
    panel = participant_poll(client, code)
    assert question in words(panel)
    # it asked for a prediction: once the room has seen a step, the answers are in
    assert "<button" not in panel and 'data-status="closed"' in panel
    assert [e.data["action"] for e in events(client, code) if e.kind == "poll"] == ["open", "close"]
    assert client.post(f"/w/{code}/answer", data={"choice": "A"}).status_code == 409
    # another step closes nothing more
    publish_state(client, code, token, f"/scenes/{SCENE}?beat={PREDICT_BEAT.id}&step=3")
    assert [e.data["action"] for e in events(client, code) if e.kind == "poll"] == ["open", "close"]
    # the presenter still sees its panel too
    presenter = poll_section(client.get(f"/w/{code}/poll", headers={"X-Presenter-Token": token}).text)
    assert question in words(presenter)


@pytest.mark.parametrize("where", ["beat", "scene"])
def test_a_poll_leaves_the_screens_when_the_presenter_moves_to_another_beat_or_scene(client, where):
    code, token = start_poll(client)
    beats = list(scenes.load_scene(SCENE).beats)
    other_beat = next(b for b in beats if b.id != PREDICT_BEAT.id)
    url = f"/scenes/{SCENE}?beat={other_beat.id}" if where == "beat" else "/scenes/05"
    seq = publish_state(client, code, token, url)["seq"]
    panel = participant_poll(client, code)
    assert re.match(r"<section [^>]*\bhidden\b", panel), panel[:200]
    assert " ".join(PREDICT_BEAT.predict.question.split()) not in words(panel)
    last = events(client, code)[-2:]
    assert [e.kind for e in last] == ["state", "poll"]
    assert last[1].data["action"] == "hide" and last[1].seq == seq  # the answer names the newest event
    # moving on again publishes no second hide
    publish_state(client, code, token, f"/scenes/{SCENE}?beat={PREDICT_BEAT.id}&step=2")
    assert [e.data["action"] for e in events(client, code) if e.kind == "poll"] == ["open", "hide"]


def test_a_reload_keeps_the_name_and_resets_exploring(client):
    code, token, path = create(client)
    store = client.app.state.workshops.store
    new_browser(client)
    assert client.get(f"/w/{code}").status_code == 200
    assert client.post(f"/w/{code}/name", data={"name": "Ada Lovelace"}).status_code == 204
    page = client.get(f"/w/{code}").text
    m = re.search(r'<input id="ws-name"[^>]*>', page)
    assert m and 'value="Ada Lovelace"' in m.group(0), m and m.group(0)

    def detached():
        return client.portal.call(store.room, code, 0.0, 40).detached

    assert detached() == 0
    # exploring: the page's own switch, then a reload without ?at= follows again
    assert client.post(f"/w/{code}/mode", data={"detached": "1"}).status_code == 204
    assert detached() == 1
    assert client.get(f"/w/{code}").status_code == 200
    assert detached() == 0
    # a page opened on its own state (?at=) is exploring
    r = client.get(f"/w/{code}", params={"at": f"/scenes/{SCENE}?step=2"})
    assert r.status_code == 200 and 'data-following="0"' in ws_bar(r.text)
    assert detached() == 1
    # a bad ?at= is ignored: the page follows
    r = client.get(f"/w/{code}", params={"at": "/etc/passwd"})
    assert r.status_code == 200 and 'data-following="1"' in ws_bar(r.text)
    assert detached() == 0
    # the presenter's count is the same rows
    assert client.portal.call(store.room, code, 0.0, 40).names == ["Ada Lovelace"]


def presenter_bar_of(base_url, tmp_path):
    with TestClient(create_app(Settings(data_dir=tmp_path)), base_url=base_url) as c:
        code, token, path = create(c)
        page = c.get(path)
        assert page.status_code == 200
        return code, token, page.text


def test_the_presenter_page_hides_its_link_and_offers_every_built_scene(tmp_path):
    code, token, page = presenter_bar_of("http://workshop.example", tmp_path)
    present_url = f"http://workshop.example/w/{code}/present/{token}"
    assert token not in words(page) and present_url not in words(page)
    # the link is in attributes only: data-copy (the copy button), data-token (the script) and
    # the theme switch's own-page `next=` (a same-site link, never shown)
    attrs = re.findall(r'([a-z-]+)="([^"]*)' + re.escape(token), page)
    assert {a for a, _ in attrs} <= {"data-copy", "data-token", "href"}, attrs
    # (and the presenter's own notes-window link, to this same page)
    hrefs = [v for a, v in attrs if a == "href"]
    assert all(v.startswith(("/theme?", f"/w/{code}/present/")) for v in hrefs), attrs
    assert f'data-copy="{present_url}"' in page
    pick = re.search(r'<form [^>]*id="ws-scene-pick".*?</form>', page, re.S)
    assert pick, "no scene picker"
    offered = re.findall(r'<option value="([^"]+)"', pick.group(0))
    assert offered == [s.id for s in scenes.list_scenes() if s.built]
    assert re.search(rf'<option value="{SCENE}" selected>', pick.group(0))
    assert "opens only on this computer" not in page


def test_the_presenter_page_warns_when_the_join_address_is_localhost(tmp_path):
    _, _, page = presenter_bar_of("http://localhost:8000", tmp_path)
    assert "opens only on this computer" in words(ws_bar(page))
    assert "http://localhost:8000/w opens only on this computer" in words(ws_bar(page))


def body_classes(html: str) -> set[str]:
    m = re.search(r'<body class="([^"]*)"', html)
    assert m, "no body class"
    return set(m.group(1).split())


def test_a_waiting_poll_hides_what_would_give_its_answer_away(client):
    """While a poll waits for its reveal the page says so (body class ws-poll-open), which keeps
    the beat's story, the page's own predict widget and the projected notes out of sight
    (static/app.css); the reveal lifts it."""
    code, token = start_poll(client)
    assert "ws-poll-open" in body_classes(client.get(f"/w/{code}").text)
    presenter_path = f"/w/{code}/present/{token}"
    assert "ws-poll-open" in body_classes(client.get(presenter_path).text)
    r = client.post(f"/w/{code}/poll", data={"action": "reveal"}, headers={"X-Presenter-Token": token})
    assert r.status_code == 200
    assert "ws-poll-open" not in body_classes(client.get(f"/w/{code}").text)


def test_the_presenters_notes_window_is_the_presenter_page_in_its_notes_view(client):
    code, token, path = create(client)
    notes = client.get(path, params={"view": "notes"})
    assert notes.status_code == 200 and "ws-notes-view" in body_classes(notes.text)
    assert 'id="ws-notes"' in notes.text
    assert "ws-notes-view" not in body_classes(client.get(path, params={"view": "other"}).text)
    assert client.get(f"/w/{code}/present/wrong", params={"view": "notes"}).status_code == 403


def test_the_presenter_ends_the_workshop_for_everyone(client):
    code, token, path = create(client)
    assert client.get(f"/w/{code}").status_code == 200  # a participant (the client's cookie)
    assert client.post(f"/w/{code}/end").status_code == 403
    assert client.post(f"/w/{code}/end", headers={"X-Presenter-Token": "wrong"}).status_code == 403
    r = client.post(f"/w/{code}/end", headers={"X-Presenter-Token": token})
    assert r.status_code == 200 and r.json()["ended"] is True
    # the room heard it (the streams end on it), and the code no longer works
    assert events(client, code)[-1].kind == "end"
    for address in (f"/w/{code}", path, f"/w/{code}/events", f"/w/{code}/state"):
        assert client.get(address).status_code == 410, address
