"""Fixtures for the route tests: one app per module, a TestClient that never re-raises.

`raise_server_exceptions=False` makes the client see what a browser would see: a test that
expects "never a 500" must observe the status, not a Python exception.
"""

import warnings
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette 1.x warns that its TestClient wants httpx2
    from fastapi.testclient import TestClient

import scenes
from app.main import create_app
from app.settings import Settings
from app.simulation import Simulator, build_timeline
from app.state import parse_state


@pytest.fixture(scope="module")
def app():
    return create_app(Settings())


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


HTMX = {"HX-Request": "true"}

# one engine cache for the modules that build a beat's timeline directly (no route in between)
SIM = Simulator(32)


def beat_timeline(scene_id: str, beat: str, step: int | None = None, **knobs: str):
    """(scene, timeline) of a beat at `step` (its last step when None), with knob overrides, as the
    scene page builds it from its URL."""
    scene = scenes.load_scene(scene_id)
    pairs = [("beat", beat)] + list(knobs.items()) + ([("step", str(step))] if step is not None else [])
    state, _ = parse_state(scene, pairs, Settings())
    timeline, state = build_timeline(SIM, scene, state)
    return scene, timeline


class _Forms(HTMLParser):
    """The page's forms (their action and named inputs) and its submit buttons, as a browser
    reads them to build the URL a button's GET form submits to."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: dict[str, tuple[str, list[tuple[str, str]]]] = {}
        self.buttons: dict[str, dict[str, str]] = {}
        self._open: str | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("id"):
            self._open = a["id"]
            self.forms[a["id"]] = (a.get("action", ""), [])
        elif tag == "input" and a.get("name") and (a.get("form") or self._open):
            owner = a.get("form") or self._open
            self.forms.setdefault(owner, ("", []))[1].append((a["name"], a.get("value", "")))
        elif tag == "button" and a.get("id"):
            self.buttons[a["id"]] = a

    def handle_endtag(self, tag):
        if tag == "form":
            self._open = None


def button_url(html: str, button_id: str) -> str:
    """The URL a click on the submit button `button_id` loads (GET): its form's action and
    fields, then the button's own name=value. Inputs owned through `form="…"` count too."""
    parser = _Forms()
    parser.feed(html)
    button = parser.buttons[button_id]
    action, fields = parser.forms[button.get("form", "")]
    pairs = list(fields) + ([(button["name"], button.get("value", ""))] if button.get("name") else [])
    return f"{action}?{urlencode(pairs)}"
