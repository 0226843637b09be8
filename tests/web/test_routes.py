"""Route tests: what a browser (with or without htmx) and an API client get back.

These run the real engine and the real scene 05 data.
"""

import json
import re

import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.state import parse_state
from tests.web.conftest import HTMX, button_url

SCENE = "/scenes/05"


def oob_ids(html: str) -> list[str]:
    return re.findall(r'id="([a-z-]+)"[^>]*hx-swap-oob', html)


def notes(html: str) -> str:
    match = re.search(r'<div id="notes".*?</div>', html, re.S)
    return match.group(0) if match else ""


def knob_notes(html: str) -> str:
    """The notes about knob values, which show above the knobs."""
    match = re.search(r'<div id="knob-notes".*?</div>', html, re.S)
    return match.group(0) if match else ""


# -- pages ------------------------------------------------------------------------------------


def test_course_map_lists_scenes_in_order_and_links_only_built_ones(client):
    import scenes

    r = client.get("/")
    assert r.status_code == 200
    assert r.template.name == "home.html"
    items = [i for t in r.context["tracks"] for i in t["items"]]
    assert [i["id"] for i in items] == [s.id for s in scenes.list_scenes()]
    assert 'href="/scenes/05"' in r.text
    assert all(i["url"] is None for i in items if not i["built"])
    assert r.text.count(">coming<") == sum(1 for i in items if not i["built"])


def test_the_course_map_says_where_to_start(client):
    """Issue 10: the home page has a "Start here" path from 01, the first scene of the course."""
    r = client.get("/")
    assert r.context["start"]["id"] == "01"
    assert 'class="start-link" href="/scenes/01"' in r.text and "Start here" in r.text


def test_scene_page_has_the_whole_anatomy(client):
    r = client.get(SCENE)
    assert r.status_code == 200 and r.template.name == "scene.html"
    for panel in (
        "beat",
        "diagram",
        "controls",
        "timeline",
        "faults",
        "knobs",
        "log",
        "code",
        "headroom",
        "qa",
        "check",
        "share",
        "log-live",
    ):
        assert f'id="{panel}"' in r.text, panel
    assert r.context["scene"]["id"] == "05"
    assert "<figure" in r.text and "Describe the diagram in words" in r.text
    assert 'aria-live="polite"' in r.text
    assert len(r.context["beat"]["items"]) >= 6
    # every knob is a labelled control named by its Kafka config key
    for key in (
        "acks",
        "min.insync.replicas",
        "replication.factor",
        "unclean.leader.election.enable",
        "eligible.leader.replicas.version",
        "kafka_version",
    ):
        assert f'name="{key}"' in r.text
        # a key breaks only at its dots
        assert "<code>" + key.replace(".", ".<wbr>") + "</code>" in r.text


def test_slug_redirects_to_the_canonical_address_keeping_the_query(client):
    r = client.get("/scenes/05-durability?step=3", follow_redirects=False)
    assert r.status_code == 308 and r.headers["location"] == "/scenes/05?step=3"


def test_every_response_varies_on_hx_request_and_htmx_gets_only_panels(client):
    page = client.get(SCENE + "?step=4")
    assert "HX-Request" in page.headers["vary"]
    assert "<html" in page.text
    fragment = client.get(SCENE + "?step=5", headers=HTMX)
    assert "HX-Request" in fragment.headers["vary"]
    assert fragment.template.name == "_update.html"
    assert "<html" not in fragment.text
    assert fragment.headers["HX-Push-Url"].startswith("/scenes/05?beat=")


def test_a_step_change_resends_only_step_panels(client):
    current = client.get(SCENE + "?step=4")
    url = current.context["timeline"]["forward_url"]
    r = client.get(
        url, headers={**HTMX, "HX-Current-URL": "http://testserver" + current.context["share"]["path"]}
    )
    ids = oob_ids(r.text)
    # the pseudocode panel stays; only its highlight (#code-now) moves with the step
    assert {"diagram", "timeline", "log", "code-now"} <= set(ids)
    assert "knobs" not in ids and "headroom" not in ids and "code" not in ids
    changed = client.get(
        SCENE + "?step=5&acks=1", headers={**HTMX, "HX-Current-URL": "http://testserver" + url}
    )
    assert {"knobs", "headroom", "diagram", "code"} <= set(oob_ids(changed.text))


def test_history_restore_gets_the_full_page(client):
    r = client.get(SCENE + "?step=2", headers={**HTMX, "HX-History-Restore-Request": "true"})
    assert r.template.name == "scene.html"


def test_every_response_has_a_strict_content_security_policy(client):
    for url in ("/", SCENE, "/embed/05", "/static/app.css", "/nope", "/scenes/05?step=zz"):
        policy = client.get(url).headers["content-security-policy"]
        assert policy.startswith("default-src 'self';") and "unsafe-inline" not in policy, url


def test_frame_headers_forbid_framing_except_for_embeds(client):
    for url in ("/", SCENE, "/static/app.css", "/nope"):
        r = client.get(url)
        assert r.headers["x-frame-options"] == "DENY", url
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"], url
    r = client.get("/embed/05")
    assert r.status_code == 200 and r.template.name == "embed.html"
    assert r.headers["content-security-policy"].endswith("; frame-ancestors *")
    assert "x-frame-options" not in r.headers
    assert "site-header" not in r.text  # no site chrome
    assert r.context["share"]["full_url"].endswith(
        "/scenes/05?" + r.context["share"]["path"].split("?", 1)[1]
    )


def test_embed_can_be_locked_to_a_beat_and_a_step_range(client):
    r = client.get("/embed/05?lock=beat&from=3&to=6&step=9")
    assert r.status_code == 200
    assert r.context["locked"] and 'class="beat-nav"' not in r.text
    assert r.context["timeline"]["step"] == 6 and r.context["timeline"]["first"] == 3
    assert "step=9 is past to=6; showing its last step" in notes(r.text)
    assert (
        "lock=beat" in r.context["timeline"]["restart_url"]
        and "from=3" in r.context["timeline"]["restart_url"]
    )
    r = client.get("/embed/05?lock=beat&from=3")
    assert r.context["timeline"]["step"] == 3


# -- bad input --------------------------------------------------------------------------------


def test_out_of_range_knob_renders_the_nearest_valid_state_with_a_message(client):
    r = client.get(SCENE + "?min.insync.replicas=9")
    assert r.status_code == 200
    assert "min.insync.replicas=9 is above the largest value" in knob_notes(r.text)
    assert dict(r.context["state"].knobs)["min.insync.replicas"] == "5"
    r = client.get(SCENE + "?acks=2")
    assert r.status_code == 200 and "acks=2 is not available" in knob_notes(r.text)
    assert dict(r.context["state"].knobs)["acks"] == "all"  # the knob default


@pytest.mark.parametrize(
    "query, reason",
    [
        ("step=abc", "step must be a whole number"),
        ("step=-1", "step must be a whole number"),
        ("step=99999999999", "step must be a whole number"),
        ("a=boom", "not in the form VERB:BROKER@STEP"),
        ("a=explode:2@3", "not in the form VERB:BROKER@STEP"),
        ("a=crash:9@3", "names broker 9"),
        ("min.insync.replicas=lots", "must be a whole number"),
        ("beat=nope", "no beat"),
        ("step=1&step=2", "appears 2 times"),
        ("inject=crash", "not in the form VERB:BROKER"),
    ],
)
def test_malformed_urls_get_a_400_page_with_the_reason(client, query, reason):
    r = client.get(f"{SCENE}?{query}")
    assert r.status_code == 400
    assert r.template.name == "error.html"
    assert reason in r.text
    assert "Traceback" not in r.text


def test_too_many_injected_actions_is_a_400_that_explains_the_cap(client):
    cap = Settings().max_injected_actions
    query = "&".join(["a=crash:2@1"] * (cap + 1))
    r = client.get(f"{SCENE}?{query}")
    assert r.status_code == 400 and f"at most {cap}" in r.text


def test_an_overlong_query_is_refused(client):
    r = client.get(SCENE + "?ask=" + "x" * 5000)
    assert r.status_code == 400 and "characters" in r.text


def test_step_beyond_the_end_clamps_with_a_note(client):
    r = client.get(SCENE + "?step=5000")
    assert r.status_code == 200
    count = r.context["timeline"]["count"]
    assert r.context["timeline"]["step"] == count
    assert "step=5000 is past the end of this timeline; showing its last step" in notes(r.text)


@pytest.mark.parametrize("url", ["/scenes/99", "/scenes/09", "/embed/zz", "/nowhere"])
def test_unknown_or_unbuilt_scene_is_a_404_page(client, url):
    r = client.get(url)
    assert r.status_code == 404 and r.template.name == "error.html"


# -- faults and forking -----------------------------------------------------------------------


def test_injecting_a_fault_forks_the_timeline_at_the_current_step(client):
    r = client.get(SCENE + "?step=5&inject=crash:2", follow_redirects=False)
    assert r.status_code == 303
    location = r.headers["location"]
    assert "a=crash:2@5" in location and "inject" not in location
    forked = client.get(location)
    state = forked.context["state"]
    step = state.step
    assert step >= 5
    current = forked.context["timeline"]["current_text"]
    assert "B2" in current  # the page shows the step where the crash landed
    rows = {row["id"]: row for row in forked.context["diagram"]["rows"]}
    assert rows[2]["status"] == "crashed"
    # the timeline before the fork is unchanged
    before = client.get(SCENE + "?step=5")
    texts = lambda page: [line["text"] for line in page.context["log"]["lines"][:5]]  # noqa: E731
    assert texts(forked) == texts(before)


def test_injecting_with_htmx_renders_panels_and_pushes_the_canonical_url(client):
    r = client.get(SCENE + "?step=5&inject=crash:3", headers=HTMX)
    assert r.status_code == 200
    assert "a=crash:3@5" in r.headers["HX-Push-Url"]
    assert "diagram" in oob_ids(r.text)


def test_restart_of_a_crashed_broker_is_offered_and_works(client):
    crashed = client.get(
        client.get(SCENE + "?step=5&inject=crash:2", follow_redirects=False).headers["location"]
    )
    buttons = {row["broker"]: row["buttons"] for row in crashed.context["faults"]}
    assert [b["verb"] for b in buttons[2]] == ["restart"]
    r = client.get(button_url(crashed.text, "fault-restart-2"), follow_redirects=False)
    assert r.status_code == 303 and "a=restart:2@" in r.headers["location"]
    assert client.get(r.headers["location"]).status_code == 200


def test_parse_state_round_trips_through_the_canonical_url(client):
    import scenes
    from app.settings import Settings

    scene = scenes.load_scene("05")
    r = client.get(SCENE + "?acks=1&step=3&a=crash:2@2&q=x1")
    path = r.context["share"]["path"]
    query = path.split("?", 1)[1]
    from urllib.parse import parse_qsl

    state, problems = parse_state(scene, parse_qsl(query), Settings())
    assert state == r.context["state"] and problems == []


# -- q&a and challenge ------------------------------------------------------------------------


def test_tapping_a_question_opens_its_answer_with_sources(client):
    page = client.get(SCENE)
    first = page.context["qa"]["questions"][0]
    r = client.get(button_url(page.text, f"qa-{first['id']}"))
    opened = r.context["qa"]["opened"]
    assert opened["id"] == first["id"] and opened["sources"]
    assert "Close the answer" in r.text
    closed = client.get(button_url(r.text, "qa-close"))
    assert closed.context["qa"]["opened"] is None and closed.context["state"] == page.context["state"]
    # the open question's button closes it too; asking keeps the step and drops the open question
    assert "q=" not in button_url(r.text, f"qa-{first['id']}")


def test_free_text_search_calls_the_qa_module(client):
    r = client.get(SCENE + "?ask=why+was+my+write+refused")
    assert r.status_code == 200
    assert r.context["qa"]["searched"] and r.context["qa"]["results"]


def test_the_challenge_is_judged_by_the_loss_ledger(client):
    plain = client.get(SCENE)
    assert plain.context["challenge"]["solved"] is False
    lossy = None
    for beat in [b["id"] for b in plain.context["beat"]["items"]]:
        for extra in ("", "&unclean.leader.election.enable=true"):
            url = f"{SCENE}?beat={beat}{extra}"
            r = client.get(url + "&step=100000")  # the verdict follows the step: look at the end
            if r.context["challenge"]["solved"]:
                lossy = r
                break
        if lossy:
            break
    assert lossy is not None, "some beat with unclean election on should lose an acked write"
    assert lossy.context["challenge"]["lost"]
    step = lossy.context["challenge"]["lost_step"]
    # when, by the simulated clock (the step counter counts Step's stops, not engine steps)
    verdict = lossy.context["challenge"]["verdict"]
    assert step is not None and " at t = " in verdict and "at step" not in verdict
    # one step before the loss, the same run has not lost anything yet
    before = client.get(url + f"&step={step - 1}")
    assert before.context["challenge"]["solved"] is False
    assert before.context["challenge"]["verdict"].startswith("Not yet")


def test_a_loss_the_beat_stages_itself_is_not_the_readers_solution(client):
    r = client.get(f"{SCENE}?beat=unclean-election")
    assert r.context["challenge"]["verdict"].startswith("Not yet")  # step 0: nothing is lost yet
    r = client.get(f"{SCENE}?beat=unclean-election&step=100000")
    challenge = r.context["challenge"]
    assert challenge["lost"] and challenge["solved"] is False
    assert "as written" in challenge["verdict"]


# -- API --------------------------------------------------------------------------------------

SCENARIO = {"version": 1, "actions": [{"do": "produce", "records": ["a"]}, {"do": "settle"}]}


def test_api_simulate_returns_the_engine_result(client):
    r = client.post("/api/v1/simulate", json=SCENARIO)
    assert r.status_code == 200
    body = r.json()
    assert body["acked_records"] == ["a"] and "steps" not in body
    r = client.post("/api/v1/simulate?steps=true", json=SCENARIO)
    assert r.json()["steps"] and r.json()["step_count"] == len(r.json()["steps"])


@pytest.mark.parametrize(
    "body, path",
    [
        (json.dumps({"version": 1, "bogus": 1}), None),
        (json.dumps({"version": 1, "actions": [{"do": "crash", "broker": 7}]}), "actions[0]"),
        ("not json", ""),
        ("[1, 2]", ""),
    ],
)
def test_api_invalid_scenarios_get_422_with_the_error_object(client, body, path):
    r = client.post("/api/v1/simulate", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422
    error = r.json()
    assert error["error"] == "invalid_scenario" and error["problems"]
    assert all(set(p) == {"path", "message"} for p in error["problems"])
    if path:
        assert error["problems"][0]["path"].startswith(path)


def test_api_body_over_the_cap_is_413_with_a_reason(client):
    r = client.post(
        "/api/v1/simulate",
        content=b"{" + b" " * (300 * 1024) + b"}",
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 413
    assert "larger than" in r.json()["problems"][0]["message"]


def test_api_errors_are_json_not_html(client):
    r = client.get("/api/v1/simulate")
    assert r.status_code == 405 and r.headers["content-type"].startswith("application/json")


def test_theme_toggle_sets_a_cookie_and_only_redirects_locally(client):
    r = client.get("/theme?set=dark&next=/scenes/05%3Fstep%3D2", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/scenes/05?step=2"
    assert "theme=dark" in r.headers["set-cookie"]
    r = client.get("/theme?set=dark&next=//evil.example/", follow_redirects=False)
    assert r.headers["location"] == "/"
    client.cookies.set("theme", "dark")
    assert 'data-theme="dark"' in client.get("/").text
    client.cookies.clear()


# -- hostile input: each gets a 4xx with a reason, never a 500 -------------------------------


@pytest.mark.parametrize(
    "body, reason",
    [
        ("[" * 5000 + "]" * 5000, "nests too deeply"),
        ('{"version": 1, "seed": ' + "9" * 5000 + "}", "not JSON"),
    ],
)
def test_api_pathological_json_is_422_not_500(client, body, reason):
    r = client.post("/api/v1/simulate", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert reason in r.json()["problems"][0]["message"]


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_api_accepts_json_bodies_only(client, content_type):
    headers = {"content-type": content_type} if content_type else {}
    r = client.post("/api/v1/simulate", content=json.dumps(SCENARIO), headers=headers)
    assert r.status_code == 415
    assert "application/json" in r.json()["problems"][0]["message"]
    json_utf8 = {"content-type": "application/json; charset=utf-8"}
    ok = client.post("/api/v1/simulate", content=json.dumps(SCENARIO), headers=json_utf8)
    assert ok.status_code == 200


def test_an_unreadable_hx_current_url_is_ignored_not_a_500(client):
    r = client.get(
        "/scenes/05?step=2", headers={"HX-Request": "true", "HX-Current-URL": "http://[::1"}
    )
    assert r.status_code == 200


def test_an_unexpected_error_is_a_friendly_500_with_the_security_headers(client, monkeypatch):
    import app.presenters

    def broken(*_args, **_kwargs):
        raise RuntimeError("zzq-internal-detail")

    monkeypatch.setattr(app.presenters, "notes_panel", broken)
    r = client.get("/scenes/05")
    assert r.status_code == 500
    assert "Something broke" in r.text and "Traceback" not in r.text and "zzq-internal-detail" not in r.text
    for header in ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy"):
        assert header in r.headers, header


def test_share_urls_follow_a_trusted_proxys_forwarded_scheme_and_host():
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "kafka.example.org"}
    # with no trusted proxy the headers are ignored; from a trusted address they are believed
    untrusted = TestClient(create_app(Settings()))
    share = untrusted.get("/scenes/05", headers=forwarded).context["share"]
    assert share["url"].startswith("http://testserver/")
    trusted = TestClient(create_app(Settings(trusted_proxies=("127.0.0.0/8",))), client=("127.0.0.1", 5555))
    share = trusted.get("/scenes/05", headers=forwarded).context["share"]
    assert share["url"].startswith("https://kafka.example.org/scenes/05?")
    assert 'src="https://kafka.example.org/embed/05?' in share["embed_code"]
    bad_host = trusted.get("/scenes/05", headers={"X-Forwarded-Host": "evil.example/<x>"}).context["share"]
    assert bad_host["url"].startswith("http://testserver/")


def test_settings_read_trusted_proxies_from_the_environment():
    from app.settings import Settings

    env = {"BUILD_KAFKA_TRUSTED_PROXIES": " 127.0.0.1, 10.0.0.0/8 ,"}
    assert Settings.from_env(env).trusted_proxies == ("127.0.0.1", "10.0.0.0/8")
    assert Settings.from_env({}).trusted_proxies == ()


@pytest.mark.parametrize("name,value,message", [
    ("BUILD_KAFKA_RUN_DEADLINE_S", "fast", "is not a number"),
    ("BUILD_KAFKA_STEP_CACHE_BYTES", "-1", "must not be negative"),
    ("BUILD_KAFKA_WORKSHOP_TTL_H", "12h", "is not a number"),
    ("BUILD_KAFKA_ENGINE_WORKERS", "two", "is not a number"),
])
def test_a_bad_number_in_the_environment_stops_with_the_variables_name(name, value, message):
    from app.settings import Settings

    with pytest.raises(SystemExit, match=f"{name}=.*{message}"):
        Settings.from_env({name: value})
    assert Settings.from_env({"BUILD_KAFKA_WORKSHOP_TTL_H": "1.5"}).workshop_ttl_s == 5400


def test_a_trusted_proxys_forwarded_for_is_the_client_address():
    """Per-address limits (workshop joins and unknown codes) count the visitor behind a trusted
    proxy, from the last X-Forwarded-For entry (the one the proxy added); an untrusted peer's
    header is ignored, and a malformed one leaves the peer's address."""
    seen: list[str] = []
    app = create_app(Settings(trusted_proxies=("127.0.0.0/8",)))

    @app.get("/_peer")
    def peer(request: Request):
        seen.append(request.client.host)
        return {}

    trusted = TestClient(app, client=("127.0.0.1", 5555))
    trusted.get("/_peer", headers={"X-Forwarded-For": "198.51.100.7, 203.0.113.9"})
    trusted.get("/_peer", headers={"X-Forwarded-For": "not an address"})
    TestClient(app, client=("192.0.2.1", 5555)).get("/_peer", headers={"X-Forwarded-For": "203.0.113.9"})
    assert seen == ["203.0.113.9", "127.0.0.1", "192.0.2.1"]
