"""The workshop routes: create, join, follow (SSE), drive, poll.

Addresses
---------
- `GET /workshops/new`, `POST /workshops/new`: the form, then a new workshop; the answer is a
  redirect to the presenter's page `/w/{code}/present/{token}`, whose token is the only key to
  drive it (the store keeps its SHA-256, never the token).
- `GET /w` (a form for the code), `GET /w/{code}`: a participant's page: the scene page of the
  presenter's current state, with the workshop bar. `?at=<scene URL>` shows a participant's own
  state instead (they detached and left the presenter's scene).
- `GET /w/{code}/events`: the event stream (text/event-stream). `Last-Event-ID` (sent by the
  browser when it reconnects) or `?after=` says which events the page has; the presenter's stream
  (`?token=`) also gets `room` events: connected and detached counts and the poll's tally.
- `POST /w/{code}/state` (token): the presenter's new scene URL, checked and made canonical.
- `POST /w/{code}/mode`: a participant following or exploring. `POST /w/{code}/name`.
- `POST /w/{code}/poll` (token, `action=open|close|reveal`), `POST /w/{code}/answer`,
  `GET /w/{code}/poll`: the poll panel for this viewer.
- `GET /w/{code}/qr.svg`: the join QR code.

Control endpoints take the token in the `X-Presenter-Token` header (a form field `token` also
works for the no-script forms); without it they answer 403. A header cannot be sent by another
site's form, so a presenter's browser cannot be made to drive from elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import hmac
import json
import re
import secrets
import time
import unicodedata
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sse_starlette import EventSourceResponse, ServerSentEvent

import engine
import scenes
from app import presenters, urls
from app.settings import Settings
from app.state import BadStateURL, parse_state
from app.workshops.hub import PRESENT_WINDOW_S, RESYNC, Hub
from app.workshops.limits import RateLimiter
from app.workshops.store import Event, Store, Workshop, store_for
from app.workshops.svg import poll_chart_svg, qr_svg

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed from a slide
CODE_LEN = 6
CODE_RE = re.compile(rf"^[{CODE_ALPHABET}]{{{CODE_LEN}}}$")
PID_COOKIE = "bk_pid"
PID_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
SCENE_PATH_RE = re.compile(r"^/scenes/([A-Za-z0-9_-]{1,40})$")
ROOM_EVERY_S = 1.0  # how often a presenter's stream looks at the room (other workers' changes)
PING_S = 15
RETRY_MS = 1000  # how soon a browser reconnects a dropped stream
NAMES_SHOWN = 40
PURGE_EVERY_S = 3600
# what each presenter action makes of the poll: closed takes no more answers, revealed shows the
# answer everywhere, hidden takes the panel off every screen
POLL_STATUS = {"close": "closed", "reveal": "revealed", "hide": "hidden"}
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")  # addresses no other device can open
# state parameters a workshop never passes on: a presenter's own prediction would give the
# answer away, and an embed's lock does not apply
PRIVATE_PARAMS = ("guess", "lock")


def built_scenes() -> list[dict[str, str]]:
    """The scenes a workshop can show: the create form's choices and the presenter's picker."""
    return [{"id": s.id, "title": s.title} for s in scenes.list_scenes() if s.built]


def normalize_code(raw: str) -> str:
    return re.sub(r"[\s-]", "", raw or "").upper()[: CODE_LEN + 4]


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def clean_text(raw: str, limit: int) -> str:
    """A one-line name: control characters and surrounding space gone, at most `limit` characters
    (Jinja escapes it when shown)."""
    text = "".join(ch for ch in unicodedata.normalize("NFC", raw or "") if unicodedata.category(ch)[0] != "C")
    return " ".join(text.split())[:limit]


@dataclass(frozen=True, slots=True)
class SceneAt:
    """A checked scene URL: its scene, canonical address and a label for people."""

    scene_id: str
    url: str
    label: str
    beat: str
    beat_title: str

    def event(self) -> dict[str, str]:
        """The data of the `state` event that moves the room here."""
        return {"url": self.url, "label": self.label, "title": self.beat_title, "scene": self.scene_id}


class Workshops:
    """The store, the hub and the rate limits of this process; opened on first use."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.store: Store = store_for(settings.database_url, settings.data_dir)
        self.hub = Hub(self.store)
        self.limits = RateLimiter()
        self._opened = False
        self._lock = asyncio.Lock()

    async def ready(self) -> None:
        if self._opened:
            return
        async with self._lock:
            if not self._opened:
                await self.store.open()
                await self.hub.start()
                self._purger = asyncio.create_task(self._purge_every(PURGE_EVERY_S))
                self._opened = True

    async def _purge_every(self, seconds: float) -> None:
        """Delete workshops a day past their expiry, now and then every `seconds`."""
        while True:
            with contextlib.suppress(Exception):
                await self.store.purge_expired(time.time())
            await asyncio.sleep(seconds)

    async def stop(self) -> None:
        if self._opened:
            self._purger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._purger
            await self.hub.stop()
            await self.store.close()
            self._opened = False


def install(app: FastAPI, settings: Settings, *, render, error_page, scene_response) -> Workshops:
    """Add the workshop routes to `app`; returns the object its lifespan stops."""
    ws = Workshops(settings)

    def check_scene_url(raw: str) -> SceneAt:
        """A scene URL as a workshop stores it: `/scenes/{id}?{state}`, canonical, built scene."""
        try:
            parts = urlsplit(raw or "")
        except ValueError as exc:
            raise BadStateURL("That is not a scene address.") from exc
        m = SCENE_PATH_RE.match(parts.path)
        if not m or parts.scheme or parts.netloc:
            raise BadStateURL("A workshop follows scene pages only (addresses like /scenes/04?...).")
        scene_id = scenes.normalize_scene_id(m.group(1))
        if scene_id is None or not scenes.SCENE_IDS[scene_id].built:
            raise BadStateURL(f"There is no built scene {m.group(1)[:40]!r} in this course.")
        if len(parts.query) > settings.max_query_chars:
            raise BadStateURL(f"The scene address is longer than {settings.max_query_chars} characters.")
        scene = scenes.load_scene(scene_id)
        pairs = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in PRIVATE_PARAMS]
        state, _ = parse_state(scene, pairs, settings)
        if state.inject is not None:
            raise BadStateURL("Send the page's own address after the fault, not the fault button's.")
        beats = list(scene.beats)
        index = next((i for i, b in enumerate(beats) if str(b.id) == state.beat), 0)
        label = f"scene {scene.id}, beat {index + 1} of {len(beats)}"
        return SceneAt(scene_id, urls.page_url(state, embed=False), label, state.beat, beats[index].title)

    def client_key(request: Request) -> str:
        return request.client.host if request.client else "?"

    def too_many(request: Request, wait_s: float, what: str) -> Response:
        response = error_page(
            request, 429, "Too many requests", f"{what} Try again in {max(1, round(wait_s))} s."
        )
        response.headers["Retry-After"] = str(max(1, round(wait_s)))
        return response

    async def find(request: Request, raw_code: str) -> Workshop | Response:
        """The workshop of a code, or the page that says why there is none."""
        await ws.ready()
        code = normalize_code(raw_code)
        workshop = await ws.store.get_workshop(code) if CODE_RE.match(code) else None
        if workshop is None:
            wait = ws.limits.take("miss", client_key(request), settings.workshop_misses_per_min)
            if wait:
                return too_many(request, wait, "Too many unknown workshop codes from your address.")
            reason = (
                f"No workshop has the code {raw_code[:12]!r}. Codes are {CODE_LEN} letters and digits, "
                "like the one on the presenter's screen; check it with them."
            )
            if request.method != "GET" or request.url.path.count("/") > 2:
                return error_page(request, 404, "No such workshop", reason)
            # the join page again, with the reason and the box to type the code once more
            context = {"page_title": "No such workshop", "code_len": CODE_LEN, "error": reason, "code": code}
            return render(request, "workshop_join.html", context, status=404)
        if workshop.expired(time.time()):
            return error_page(
                request, 410, "This workshop has ended",
                f"The join code {workshop.code} expired at {_when(workshop.expires_at)}. "
                "Ask the presenter for a new one; every scene stays open to explore on its own.",
            )  # fmt: skip
        return workshop

    def presenter_ok(request: Request, workshop: Workshop, form_token: str | None = None) -> bool:
        given = (
            request.headers.get("X-Presenter-Token") or form_token or request.query_params.get("token") or ""
        )
        return bool(given) and hmac.compare_digest(token_hash(given), workshop.token_hash)

    def forbidden(request: Request) -> Response:
        return error_page(request, 403, "Forbidden", "Only the presenter's link can drive this workshop.")

    def pid_of(request: Request) -> str | None:
        pid = request.cookies.get(PID_COOKIE, "")
        return pid if PID_RE.match(pid) else None

    def join_url(request: Request, code: str) -> str:
        return str(request.base_url).rstrip("/") + f"/w/{code}"

    @functools.lru_cache(maxsize=64)
    def poll_question(scene_id: str, beat_id: str, state_url: str) -> dict | None:
        """A poll's question, options and answer, as the scene's predict panel builds them (None
        when its beat asks nothing). A poll's scene, beat and state never change, so every viewer's
        fetch of it (the whole room, on each poll event) shares one build."""
        scene = scenes.load_scene(scene_id)
        try:
            beat = scene.beat(beat_id)
        except KeyError:
            return None
        if beat.predict is None:
            return None
        state, _ = parse_state(scene, parse_qsl(urlsplit(state_url).query), settings)
        return presenters.predict_panel(beat, state, embed=False)

    async def poll_view(
        request: Request, workshop: Workshop, *, presenter: bool, pid: str | None
    ) -> dict | None:
        """The poll panel's context for one viewer, read from the scene's own predict question."""
        if workshop.poll_id is None:
            return None
        poll = await ws.store.get_poll(workshop.poll_id)
        if poll is None or poll.status == "hidden":
            return None
        predict = poll_question(poll.scene, poll.beat, poll.state_url)
        if predict is None:
            return None
        letters = [o["n"] for o in predict["options"]]
        revealed = poll.status == "revealed"
        show_chart = presenter or revealed
        # the count and the chart are the presenter's, and everyone's after the reveal: a
        # participant's fetch of an open poll needs neither
        tally = await ws.store.tally(poll.id) if show_chart else {}
        mine = await ws.store.answer_of(poll.id, pid) if pid else None
        return {
            "status": poll.status,
            "question": predict["question"],
            "options": predict["options"],
            "answer": predict["answer"] if revealed or presenter else None,
            "explanation": predict["explanation"] if revealed or presenter else None,
            "revealed": revealed,
            "mine": mine,
            "total": sum(tally.values()) if show_chart else None,
            "chart": poll_chart_svg(letters, tally, right=predict["right"] if revealed else None)
            if show_chart
            else None,
        }

    def workshop_context(
        request: Request,
        row: Workshop,
        *,
        role: str,
        token: str | None,
        at: str | None,
        poll: dict | None,
        name: str = "",
        view: str = "",
    ) -> dict[str, Any]:
        base = str(request.base_url).rstrip("/")
        join = join_url(request, row.code)
        host = (request.url.hostname or "").strip("[]")
        return {
            "join_root": f"{base}/w",
            "local_only": host in LOCAL_HOSTS,
            "scenes": built_scenes() if role == "presenter" else [],
            "name": name,
            "code": row.code,
            "title": row.title,
            "role": role,
            "token": token,
            "seq": row.seq,
            "following": at is None,
            "present_url": f"{base}/w/{row.code}/present/{token}" if token else None,
            "notes_path": f"/w/{row.code}/present/{token}?view=notes" if token else None,
            "view": view,
            "qr": qr_svg(join, f"QR code for {join}") if role == "presenter" else None,
            "poll": poll,
            "name_chars": settings.workshop_name_chars,
            "expires": time.strftime("%H:%M UTC", time.gmtime(row.expires_at)),
        }

    def workshop_page(request: Request, url: str, context: dict[str, Any]) -> Response:
        """The scene page of `url`, a scene URL check_scene_url already made canonical (the
        workshop's stored state, or a participant's checked ?at=), with the workshop bar."""
        parts = urlsplit(url)
        scene_id = SCENE_PATH_RE.match(parts.path).group(1)
        # the same per-request budget as /scenes/ (this page renders here, not in an engine worker)
        with engine.budget(deadline_s=settings.run_deadline_s):
            response = scene_response(
                request, scene_id, embed=False, query_string=parts.query, workshop=context
            )
        response.headers["Cache-Control"] = "no-store"
        return response

    # -- create ---------------------------------------------------------------------------------

    @app.get("/workshops/new", response_class=HTMLResponse)
    async def new_workshop_form(request: Request):
        return render(request, "workshop_new.html", {
            "page_title": "Run a workshop", "scenes": built_scenes(),
            "ttl_h": round(settings.workshop_ttl_s / 3600, 1), "title_chars": settings.workshop_title_chars,
        })  # fmt: skip

    @app.post("/workshops/new")
    async def create_workshop(request: Request):
        await ws.ready()
        form = await _small_form(request, settings)
        if form is None:
            return error_page(request, 413, "Too large", "The form is larger than a workshop needs.")
        scene_id = scenes.normalize_scene_id(form.get("scene", ""))
        if scene_id is None or not scenes.SCENE_IDS[scene_id].built:
            return error_page(request, 400, "Pick a scene", "Choose one of the built scenes to start from.")
        wait = ws.limits.take("create", client_key(request), 30)
        if wait:
            return too_many(request, wait, "Too many workshops made from your address.")
        title = (
            clean_text(form.get("title", ""), settings.workshop_title_chars) or "Build Kafka workshop"
        )
        start = check_scene_url(urls.scene_path(scene_id))
        token = secrets.token_urlsafe(24)
        now = time.time()
        for _ in range(8):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LEN))
            if await ws.store.get_workshop(code) is None:
                break
        workshop = Workshop(
            code, token_hash(token), title, now, now + settings.workshop_ttl_s, 0, start.url, None
        )
        await ws.store.create_workshop(workshop)
        await ws.store.publish(code, "state", start.event(), state_url=start.url)
        return RedirectResponse(f"/w/{code}/present/{token}", status_code=303)

    # -- pages ----------------------------------------------------------------------------------

    @app.get("/w", response_class=HTMLResponse)
    async def join_form(request: Request, code: str = ""):
        if code:
            return RedirectResponse(f"/w/{quote(normalize_code(code))}", status_code=303)
        return render(request, "workshop_join.html", {"page_title": "Join a workshop", "code_len": CODE_LEN})

    @app.get("/w/{code}")
    async def participant_page(request: Request, code: str, at: str | None = None):
        found = await find(request, code)
        if isinstance(found, Response):
            return found
        workshop = found
        if code != workshop.code:
            return RedirectResponse(f"/w/{workshop.code}", status_code=308)
        pid = pid_of(request)
        name = await ws.store.name_of(workshop.code, pid) if pid is not None else None
        known = name is not None
        if not known:
            wait = ws.limits.take("join", client_key(request), settings.workshop_joins_per_min)
            if wait:
                return too_many(request, wait, "Too many joins from your address.")
            if await ws.store.participant_count(workshop.code) >= settings.workshop_max_participants:
                return error_page(
                    request,
                    403,
                    "The room is full",
                    f"This workshop has its {settings.workshop_max_participants} participants.",
                )
            pid = pid or secrets.token_urlsafe(18)
            await ws.store.join(workshop.code, pid, None, time.time())
        url = workshop.state_url
        if at:
            try:
                url = check_scene_url(at).url
            except BadStateURL:
                at = None
        # the page opens following (or exploring, with ?at=): the presenter's count says so too
        await ws.store.set_detached(workshop.code, pid, at is not None)
        ws.hub.room_changed(workshop.code)
        poll = await poll_view(request, workshop, presenter=False, pid=pid)
        context = workshop_context(
            request, workshop, role="participant", token=None, at=at, poll=poll, name=name or ""
        )
        response = workshop_page(request, url, context)
        if not known:
            response.set_cookie(
                PID_COOKIE, pid, max_age=2 * 24 * 3600, httponly=True, samesite="lax", path="/w"
            )
        return response

    @app.get("/w/{code}/present")
    async def presenter_without_token(request: Request, code: str):
        found = await find(request, code)
        if isinstance(found, Response):
            return found
        return error_page(
            request, 403, "This is the presenter's page",
            "Only the presenter's own link, with its secret, opens it. "
            f"To follow the workshop, open /w/{found.code}.",
        )  # fmt: skip

    @app.get("/w/{code}/present/{token}")
    async def presenter_page(request: Request, code: str, token: str, view: str = ""):
        found = await find(request, code)
        if isinstance(found, Response):
            return found
        if not hmac.compare_digest(token_hash(token), found.token_hash):
            return forbidden(request)
        poll = await poll_view(request, found, presenter=True, pid=None)
        # ?view=notes: the same page as a notes window for the presenter's own screen
        view = "notes" if view == "notes" else ""
        context = workshop_context(
            request, found, role="presenter", token=token, at=None, poll=poll, view=view
        )
        response = workshop_page(request, found.state_url, context)
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @app.get("/w/{code}/qr.svg")
    async def qr(request: Request, code: str):
        found = await find(request, code)
        if isinstance(found, Response):
            return found
        join = join_url(request, found.code)
        return Response(qr_svg(join, f"QR code for {join}"), media_type="image/svg+xml",
                        headers={"Cache-Control": "public, max-age=3600"})  # fmt: skip

    @app.get("/w/{code}/state")
    async def current_state(request: Request, code: str):
        found = await find(request, code)
        if isinstance(found, Response):
            return found
        return JSONResponse({"seq": found.seq, "url": found.state_url}, headers={"Cache-Control": "no-store"})

    # -- the stream -----------------------------------------------------------------------------

    @app.get("/w/{code}/events")
    async def events(request: Request, code: str, after: int = 0):
        """The presenter's stream names its token in the query (an EventSource sends no headers);
        any other is a participant's, known by its cookie."""
        found = await find(request, code)
        if isinstance(found, Response):
            return found
        presenter = presenter_ok(request, found)
        pid = None if presenter else await joined_pid(request, found)
        if isinstance(pid, Response):
            return pid
        last = request.headers.get("Last-Event-ID", "")
        since = int(last) if last.isdigit() else max(0, after)
        return EventSourceResponse(
            _stream(ws, found.code, pid, since, presenter=presenter),
            ping=PING_S,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
            send_timeout=10,
        )

    # -- controls -------------------------------------------------------------------------------

    @app.post("/w/{code}/state")
    async def publish_state(request: Request, code: str):
        control = await presenter_control(request, code)
        if isinstance(control, Response):
            return control
        found, form = control
        if "url" not in form:
            return error_page(request, 400, "Bad request", "Send the scene address as `url`.")
        wait = ws.limits.take("update", found.code, settings.workshop_updates_per_min)
        if wait:
            return too_many(request, wait, "Too many updates for this workshop.")
        at = check_scene_url(form["url"])
        if at.url == found.state_url:
            return JSONResponse({"seq": found.seq, "url": at.url, "changed": False})
        seq = await announce(found.code, "state", at.event(), state_url=at.url)
        if found.poll_id is not None:
            # a poll belongs to its beat: moving on takes it off the screens; and it asks for a
            # prediction, so a step within the beat (the room sees what happens) ends the answers
            poll = await ws.store.get_poll(found.poll_id)
            elsewhere = poll is not None and (poll.scene, poll.beat) != (at.scene_id, at.beat)
            if elsewhere and poll.status != "hidden":
                seq = await change_poll(found.code, poll.id, "hide")
            elif poll is not None and poll.status == "open":
                seq = await change_poll(found.code, poll.id, "close")
        return JSONResponse({"seq": seq, "url": at.url, "changed": True})

    @app.post("/w/{code}/poll")
    async def poll_control(request: Request, code: str):
        control = await presenter_control(request, code)
        if isinstance(control, Response):
            return control
        found, form = control
        action = form.get("action", "open")
        now = time.time()
        if action == "open":
            at = check_scene_url(found.state_url)
            scene = scenes.load_scene(at.scene_id)
            if scene.beat(at.beat).predict is None:
                return error_page(
                    request, 409, "No question here", "This beat has no predict question to poll."
                )
            poll_id = await ws.store.open_poll(found.code, at.scene_id, at.beat, at.url, now)
            await announce(found.code, "poll", {"poll": poll_id, "action": action}, poll_id=poll_id)
            found = dataclasses.replace(found, poll_id=poll_id)  # as the announce left the row
        elif action in POLL_STATUS and found.poll_id is not None:
            await change_poll(found.code, found.poll_id, action)
        else:
            return error_page(
                request, 400, "Bad request", "action is open, close, reveal or hide (with a poll open)."
            )
        return await poll_fragment(request, found, presenter=True)

    @app.post("/w/{code}/end")
    async def end_workshop(request: Request, code: str):
        control = await presenter_control(request, code)
        if isinstance(control, Response):
            return control
        found, _ = control
        # the room hears it first (an ended workshop's streams are refused), then the code expires
        seq = await announce(found.code, "end", {})
        await ws.store.end(found.code, time.time())
        return JSONResponse({"ended": True, "seq": seq})

    @app.get("/w/{code}/poll")
    async def poll_panel(request: Request, code: str):
        found = await find(request, code)
        if isinstance(found, Response):
            return found
        return await poll_fragment(request, found, presenter=presenter_ok(request, found))

    async def poll_fragment(request: Request, workshop: Workshop, *, presenter: bool) -> Response:
        """The poll panel for this viewer, of the workshop as the route found it (only its poll_id
        is read: the poll's own status comes from its row)."""
        code = workshop.code
        poll = await poll_view(
            request, workshop, presenter=presenter, pid=None if presenter else pid_of(request)
        )
        context = {
            "workshop": {"code": code, "role": "presenter" if presenter else "participant", "poll": poll}
        }
        response = render(request, "_ws_poll.html", context)
        response.headers["Cache-Control"] = "no-store"
        return response

    async def presenter_control(request: Request, code: str) -> tuple[Workshop, dict[str, str]] | Response:
        """A presenter's POST: the workshop and the form, or the page that says why not (the
        token in X-Presenter-Token, or a form field `token` for a page without script)."""
        found = await find(request, code)
        if isinstance(found, Response):
            return found
        form = await _small_form(request, settings)
        if not presenter_ok(request, found, (form or {}).get("token")):
            return forbidden(request)
        if form is None:
            return error_page(request, 413, "Too large", "The form is larger than a workshop control needs.")
        return found, form

    async def announce(code: str, kind: str, data: dict[str, Any], **changes: Any) -> int:
        """Store an event for the room (store.publish) and hand it to this process's streams."""
        seq = await ws.store.publish(code, kind, data, **changes)
        await ws.hub.wake(code, seq)
        return seq

    async def change_poll(code: str, poll_id: int, action: str) -> int:
        """Close, reveal or hide the poll, and tell the room (one transaction)."""
        return await announce(
            code, "poll", {"poll": poll_id, "action": action}, poll_status=(poll_id, POLL_STATUS[action])
        )

    async def participant(request: Request, code: str) -> tuple[Workshop, str] | Response:
        """The workshop and this browser's participant id, or the page that says why not."""
        found = await find(request, code)
        if isinstance(found, Response):
            return found
        pid = await joined_pid(request, found)
        return pid if isinstance(pid, Response) else (found, pid)

    async def joined_pid(request: Request, workshop: Workshop) -> str | Response:
        """This browser's participant id in a workshop already found, or the page that says to join."""
        pid = pid_of(request)
        if pid is None or not await ws.store.is_participant(workshop.code, pid):
            return error_page(request, 403, "Join first", "Open the workshop's page to join it.")
        return pid

    @app.post("/w/{code}/answer")
    async def answer(request: Request, code: str):
        joined = await participant(request, code)
        if isinstance(joined, Response):
            return joined
        found, pid = joined
        form = await _small_form(request, settings) or {}
        wait = ws.limits.take("answer", pid, settings.workshop_answers_per_min)
        if wait:
            return too_many(request, wait, "Too many answers.")
        poll = await ws.store.get_poll(found.poll_id) if found.poll_id is not None else None
        choice = (form.get("choice") or "")[:2]
        if poll is None or poll.status != "open":
            return error_page(request, 409, "The poll is closed", "The presenter has closed this poll.")
        question = poll_question(poll.scene, poll.beat, poll.state_url)
        if question is None or choice not in [o["n"] for o in question["options"]]:
            return error_page(request, 400, "Bad answer", "Choose one of the poll's options.")
        await ws.store.answer(poll.id, pid, choice, time.time())
        ws.hub.room_changed(found.code)
        return await poll_fragment(request, found, presenter=False)

    @app.post("/w/{code}/mode")
    async def mode(request: Request, code: str):
        joined = await participant(request, code)
        if isinstance(joined, Response):
            return joined
        found, pid = joined
        form = await _small_form(request, settings) or {}
        await ws.store.set_detached(found.code, pid, form.get("detached") in ("1", "true"))
        ws.hub.room_changed(found.code)
        return Response(status_code=204)

    @app.post("/w/{code}/name")
    async def set_name(request: Request, code: str):
        joined = await participant(request, code)
        if isinstance(joined, Response):
            return joined
        found, pid = joined
        form = await _small_form(request, settings) or {}
        name = clean_text(form.get("name", ""), settings.workshop_name_chars)
        await ws.store.join(found.code, pid, name, time.time())
        ws.hub.room_changed(found.code)
        return Response(status_code=204)

    return ws


async def _small_form(request: Request, settings: Settings) -> dict[str, str] | None:
    """A urlencoded or JSON body of at most 8 KiB, as a flat dict of strings; None if larger."""
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > 8192:
            return None
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    return {k: v for k, v in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)}


def _when(epoch_s: float) -> str:
    return time.strftime("%H:%M UTC on %d %b", time.gmtime(epoch_s))


def _sse(event: Event) -> ServerSentEvent:
    return ServerSentEvent(json.dumps({"seq": event.seq, **event.data}), event=event.kind, id=str(event.seq))


def _poll_after(event: Event, poll_id: int | None) -> int | None:
    """The workshop's poll once `event` is passed on: an `open` names a new one, nothing else does."""
    return event.data["poll"] if event.kind == "poll" and event.data.get("action") == "open" else poll_id


async def _stream(ws: Workshops, code: str, pid: str | None, since: int, *, presenter: bool):
    """One browser's event stream: the events after `since` from the store, then live ones."""
    store, hub = ws.store, ws.hub
    workshop = await store.get_workshop(code)
    if workshop is None:
        return
    sub = await hub.subscribe(code, pid, workshop.seq)
    sent = since
    # the poll whose tally the presenter's room events carry: the workshop's, then the one each
    # `open` event this stream passes on names (only an open changes it: store.publish's poll_id)
    poll_id = workshop.poll_id
    last_room: Any = None
    next_room = 0.0
    try:
        yield ServerSentEvent(comment="hello", retry=RETRY_MS)
        oldest = await store.oldest_event(code)
        if since < workshop.seq and oldest is not None and since + 1 < oldest:
            # it missed more than the store keeps: the current state is all it needs
            yield _sse(Event(workshop.seq, "state", {"url": workshop.state_url, "resync": True}))
            sent = workshop.seq
        for event in await store.events_after(code, sent):
            yield _sse(event)
            sent = event.seq
            poll_id = _poll_after(event, poll_id)
            if event.kind == "end":
                return
        while True:
            if presenter and time.monotonic() >= next_room:
                room = await store.room(code, time.time() - PRESENT_WINDOW_S, NAMES_SHOWN)
                tally = await store.tally(poll_id) if poll_id is not None else {}
                now_room = {"connected": room.connected, "detached": room.detached, "names": room.names,
                            "answers": sum(tally.values()), "tally": tally}  # fmt: skip
                if now_room != last_room:
                    last_room = now_room
                    yield ServerSentEvent(json.dumps(now_room), event="room")
                next_room = time.monotonic() + ROOM_EVERY_S
            try:
                timeout = max(0.05, next_room - time.monotonic()) if presenter else None
                if presenter:
                    waiter = asyncio.ensure_future(sub.queue.get())
                    nudge = asyncio.ensure_future(sub.presence.wait())
                    done, pending = await asyncio.wait({waiter, nudge}, timeout=timeout,
                                                       return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
                    for task in pending:
                        task.cancel()
                    if nudge in done:
                        sub.presence.clear()
                        next_room = 0.0
                    if waiter not in done:
                        continue
                    event = waiter.result()
                else:
                    event = await sub.queue.get()
            except asyncio.CancelledError:
                raise
            if event is RESYNC:
                fresh = await store.get_workshop(code)
                if fresh is not None:
                    yield _sse(Event(fresh.seq, "state", {"url": fresh.state_url, "resync": True}))
                    sent = fresh.seq
                    poll_id = fresh.poll_id
                continue
            if event.seq <= sent:
                continue
            yield _sse(event)
            sent = event.seq
            poll_id = _poll_after(event, poll_id)
            if event.kind == "end":  # the presenter ended the workshop: nothing more will come
                return
    finally:
        with contextlib.suppress(Exception):
            await hub.unsubscribe(sub)
