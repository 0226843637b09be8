"""The per-run budget as a client sees it: 503 + Retry-After for a busy moment, a 4xx with the
reason for a scenario that is too big every time (issue 9)."""

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

API = "/api/v1/simulate"
HEAVY = {
    "topic": {"replication.factor": 3, "partitions": 12},
    "actions": [{"do": "produce", "records": ["a"]}, {"do": "advance", "ms": 600_000}],
}


def client(**settings) -> TestClient:
    return TestClient(create_app(Settings(**settings)), raise_server_exceptions=False)


def test_an_api_run_past_its_deadline_is_a_503_that_says_try_again():
    r = client(run_deadline_s=0.0).post(API, json=HEAVY)
    assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1
    body = r.json()
    # the same error code as the worker pool's 503, and which bound it was
    assert body["error"] == "try_again_shortly" and body["budget"] == "deadline"
    assert "s of computing time" in body["detail"] and body["problems"][0]["message"] == body["detail"]


def test_an_api_result_over_its_size_cap_is_a_422_with_the_cap():
    big = {"actions": [{"do": "produce", "count": 1000} for _ in range(30)] + [{"do": "settle"}]}
    api = client(max_api_result_bytes=1024 * 1024)
    assert api.post(API, json=big).status_code == 200  # without steps the result is small
    r = api.post(API + "?steps=true", json=big)
    assert r.status_code == 422 and "larger than 1 MB" in r.text
    assert r.json()["budget"] == "result_bytes" and r.json()["error"] == "invalid_scenario"


def test_a_scene_page_past_its_deadline_is_a_503_page_with_the_usual_headers():
    r = client(run_deadline_s=0.0).get("/scenes/05?step=3")
    assert r.status_code == 503 and "Retry-After" in r.headers
    assert "text/html" in r.headers["content-type"] and "Traceback" not in r.text
    assert r.headers["content-security-policy"].startswith("default-src 'self'")


def test_injecting_lands_on_the_step_and_twenty_faults_in_one_url_render():
    """The fork finds the running action from the step tags of one run: a fault injected at step
    6 is recorded at step 6, and the cap's worth of faults in one URL renders."""
    web = client()
    page = web.get("/scenes/05?step=6&inject=crash:2", follow_redirects=False)
    assert page.status_code == 303 and "a=crash:2@6" in page.headers["location"]
    query = "&".join(f"a=isolate:{1 + i % 3}@{2 + i}" for i in range(20))
    r = web.get(f"/scenes/05?{query}")
    assert r.status_code == 200 and "Traceback" not in r.text


def small_default_budget(monkeypatch, **caps) -> None:
    """Every run's budget outside an explicit cap (the app sets only a deadline) gets these caps."""
    import sys

    import engine

    budget_module = sys.modules["engine.budget"]  # `engine.budget` is the context manager
    monkeypatch.setattr(budget_module, "_UNBOUNDED", engine.RunBudget(**caps))


def test_a_scene_too_big_every_time_is_the_bad_address_page_with_the_cap(monkeypatch):
    small_default_budget(monkeypatch, max_steps=5)
    r = client().get("/scenes/05?step=3")
    assert r.status_code == 400 and "text/html" in r.headers["content-type"]
    assert "more than 5 steps" in r.text and "Retry-After" not in r.headers


def test_an_api_run_over_the_event_cap_is_a_422_that_names_the_cap():
    r = client(max_api_events=500).post(API, json=HEAVY)
    assert r.status_code == 422 and "Retry-After" not in r.headers and r.json()["budget"] == "events"
    message = r.json()["problems"][0]["message"]
    assert "more than 500 engine events (all partitions together)" in message and "shorten" in message


def test_one_injected_action_over_the_cap_is_refused_with_the_cap():
    cap = Settings().max_injected_actions
    query = "&".join(f"a=isolate:{1 + i % 3}@{2 + i}" for i in range(cap + 1))
    r = client().get(f"/scenes/05?{query}")
    assert r.status_code == 400 and f"at most {cap}" in r.text
