"""HTTP entry point: `create_app(settings)` and the module-level `app` uvicorn serves.

Theory of operation
-------------------
Each request follows one path: the URL is parsed into a `SceneState` (app/state.py), the state
is replayed by the engine (app/simulation.py, cached), presenters turn the result into template
context (app/presenters.py, app/qa_panel.py), and Jinja2 renders either the whole page or, for
an htmx request, only the panels whose content can have changed, as out-of-band swaps. Every
response says `Vary: HX-Request` because the same URL has two representations.

Nothing here raises to the client: bad URLs become 400 pages with the reason, unknown scenes
404 pages, bad API bodies 413/422 JSON error objects, and anything unexpected a friendly 500
page with no stack trace. Framing: embeds may be framed by any site; every other response
forbids framing.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import logging
import re
import time
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware

import engine
import scenes
from app import docs as docs_mod
from app import formats, frames, presenters, urls
from app import glossary as glossary_mod
from app import openapi as openapi_mod
from app import panels as state_panels
from app.qa_panel import qa_panel
from app.settings import Settings
from app.simulation import ByteBoundedCache, Simulator, build_compare, build_timeline
from app.state import BadStateURL, SceneState, parse_state
from app.workers import EngineDispatch, EnginePool
from app.workshops import routes as workshop_routes
from engine.schema import scenario_json_schema

log = logging.getLogger("app")

THEMES = ("auto", "light", "dark")
THEME_COOKIE = "theme"
THEME_COOKIE_MAX_AGE_S = 365 * 24 * 3600

# Panels re-sent to htmx when only the step (or the open question) changed, and when the
# scenario itself changed. Each is a partial whose root element carries its own id.
STEP_PANELS = [
    "_notes.html",
    "_live.html",
    "_diagram.html",
    "_caption.html",
    "_caption_room.html",
    "_stepbar.html",
    "_describe.html",
    "_state_panels.html",
    "_timeline.html",
    "_pace.html",
    "_here.html",
    "_faults.html",
    "_log.html",
    "_code_step.html",  # the highlight only; the whole panel comes with a new scenario
    "_qa.html",
    "_share.html",
    "_state_fields.html",
    "_check.html",
    "_predict.html",  # a prediction (guess=) changes only the state, not the scenario
    "_knob_notes.html",  # why a knob value was corrected; empty (and left out) on most steps
]
SCENARIO_PANELS = [p if p != "_code_step.html" else "_code.html" for p in STEP_PANELS] + [
    "_beat.html",
    "_knobs.html",
    "_headroom.html",
    "_charts_slot.html",
]
EMBED_STEP_PANELS = [
    "_notes.html",
    "_live.html",
    "_diagram.html",
    "_caption.html",
    "_caption_room.html",
    "_stepbar.html",
    "_describe.html",
    "_state_panels.html",
    "_timeline.html",
    "_pace.html",
    "_here.html",
    "_faults.html",
    "_log.html",
    "_state_fields.html",
    "_knob_notes.html",
]
EMBED_SCENARIO_PANELS = EMBED_STEP_PANELS + ["_beat.html", "_knobs.html"]
# Sent whenever listed, never skipped as unchanged (see render_panels).
UNHASHED_PANELS = {"_code.html"}
MAX_PANELS_HEADER = 2048  # characters of X-Panels read: about 40 panels' pairs

# Every page is same-origin only: no inline script or style (htmx's indicator styles and eval are
# switched off in base.html), images from here or data: URLs (the empty favicon). Only the
# framing rule differs between embeds and everything else.
CSP_BASE = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'"
)
FRAME_DENY = {"Content-Security-Policy": f"{CSP_BASE}; frame-ancestors 'none'", "X-Frame-Options": "DENY"}
FRAME_ANY = {"Content-Security-Policy": f"{CSP_BASE}; frame-ancestors *"}
COMMON_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "strict-origin-when-cross-origin"}


class FrameHeaders:
    """Pure ASGI middleware: framing and hygiene headers on every response (static files too)."""

    def __init__(self, app: Any, extra: dict[str, str]):
        self.app = app
        self.extra = extra

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        framing = FRAME_ANY if scope.get("path", "").startswith("/embed/") else FRAME_DENY
        started = time.perf_counter()
        added = [
            (k.lower().encode(), v.encode()) for k, v in {**COMMON_HEADERS, **framing, **self.extra}.items()
        ]

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                # a response's own Referrer-Policy stands (a workshop presenter's page, whose
                # address holds the token, says no-referrer); the other headers are ours
                own = {k.lower() for k, _ in message.get("headers", [])}
                keep = [(k, v) for k, v in added if not (k == b"referrer-policy" and k in own)]
                names = {k for k, _ in keep}
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                # time spent in the app before the first byte (bench/web.py reads it)
                timing = f"app;dur={(time.perf_counter() - started) * 1000:.2f}".encode()
                message = {**message, "headers": headers + keep + [(b"server-timing", timing)]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class GZip:
    """Starlette's GZipMiddleware, minus one quirk: it drops `http.response.debug` messages,
    which the TestClient needs to expose `response.template` and `response.context`. Those
    messages are passed straight to the server's `send`; everything else is compressed."""

    def __init__(self, app: Any, minimum_size: int):
        # level 6 (zlib's default) instead of Starlette's 9: on a step fragment it is 0.7 % larger
        # and a sixth faster
        self.gzip = GZipMiddleware(self._inner, minimum_size=minimum_size, compresslevel=6)
        self.app = app

    async def _inner(self, scope, receive, send):
        raw_send = scope["app.raw_send"]

        async def forward(message):
            await (raw_send if message["type"] == "http.response.debug" else send)(message)

        await self.app(scope, receive, forward)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.gzip({**scope, "app.raw_send": send}, receive, send)


class ForwardedFromTrustedProxy:
    """Pure ASGI middleware: behind a configured reverse proxy, take the scheme and host the
    client used from X-Forwarded-Proto / X-Forwarded-Host, so absolute URLs (share links, embed
    codes) match what the visitor sees, and the client's address from X-Forwarded-For (its last
    entry: the one the trusted proxy itself added), so per-address limits (workshop joins) count
    visitors, not the proxy. Requests from any other address keep their own values."""

    HOST_RE = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")

    def __init__(self, app: Any, trusted: tuple[str, ...]):
        self.app = app
        self.networks = [ipaddress.ip_network(t, strict=False) for t in trusted]

    def _trusted(self, client: Any) -> bool:
        if not client:
            return False
        try:
            address = ipaddress.ip_address(client[0])
        except ValueError:
            return False
        return any(address in net for net in self.networks)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and self.networks and self._trusted(scope.get("client")):
            headers = dict(scope.get("headers", []))
            proto = headers.get(b"x-forwarded-proto", b"").split(b",")[0].strip().lower()
            host = headers.get(b"x-forwarded-host", b"").split(b",")[0].strip()
            scope = dict(scope)
            if proto in (b"http", b"https"):
                scope["scheme"] = proto.decode()
            if host and self.HOST_RE.match(host.decode("latin-1")):
                scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"host"] + [(b"host", host)]
            peer = headers.get(b"x-forwarded-for", b"").split(b",")[-1].strip().decode("latin-1")
            with contextlib.suppress(ValueError):
                scope["client"] = (str(ipaddress.ip_address(peer)), 0)
        await self.app(scope, receive, send)


class CatchAll:
    """Pure ASGI middleware: an unexpected exception becomes the friendly 500 page *inside* the
    middleware stack, so the error page gets the same security headers and compression as every
    other response (Starlette's own catch-all sits outside every user middleware)."""

    def __init__(self, app: Any, handler: Any):
        self.app = app
        self.handler = handler

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:  # too late for an error page: log it and let the connection end
                log.exception("error after the response started on %s", scope.get("path"))
                return
            response = await self.handler(Request(scope), exc)
            await response(scope, receive, send)

# every page differs by whether htmx asked for it (a fragment) or a browser did (the whole page)
VARY = {"Vary": "HX-Request"}
# the response headers that tell htmx to add a browser history entry for the update, or to
# replace the current one (they win over the page's hx-push-url)
HISTORY_PUSH = "HX-Push-Url"
HISTORY_REPLACE = "HX-Replace-Url"


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    # With engine workers, scene pages and the API run in worker processes (app/workers.py);
    # they start with the first such request or at the server's start-up, and stop with it.
    pool = EnginePool(settings) if settings.engine_workers > 0 else None

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        if pool is not None:
            await pool.start()
        try:
            yield
        finally:
            await workshops.stop()
            if pool is not None:
                await pool.stop()

    # No Swagger UI or ReDoc (they load third-party scripts); /openapi.json is served below, with
    # the public API only (app/openapi.py).
    app = FastAPI(title="Build Kafka", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.settings = settings
    app.state.engine_pool = pool
    sim = Simulator(settings.simulate_cache_entries, cache_bytes=settings.simulate_cache_bytes)
    # (body, history headers) of a rendered step update; weighed by the body and the key's headers
    step_updates = ByteBoundedCache(
        None, settings.step_cache_entries, settings.step_cache_bytes, weigh=lambda v: len(v[0]) + 4096
    )
    app.state.simulator = sim
    app.state.step_updates = step_updates
    templates = Jinja2Templates(directory=str(settings.templates_dir))
    # templates are read once: without this every include stats its file on each render
    templates.env.auto_reload = False
    templates.env.globals.update(
        css_url=urls.static_url("app.css"),
        js_url=urls.static_url("app.js"),
        workshop_js_url=urls.static_url("workshop.js"),
        htmx_url=urls.htmx_url(settings.static_dir),
        home_url=urls.home_url(),
        site_name=settings.site_name,
        glossary_url=glossary_mod.GLOSSARY_PATH,
        docs_url=docs_mod.DOCS_PATH,
        glossary_linker=glossary_mod.linker,  # marks terms in template text (the diagram legend)
    )
    templates.env.filters["sim_time"] = formats.sim_time  # the one spelling of simulated time
    for required in ("_charts.html", "_charts_slot.html"):  # a partial missing from an image fails here
        if not (settings.templates_dir / required).exists():
            raise RuntimeError(f"template {required} is missing from {settings.templates_dir}")
    app.mount("/static", StaticFiles(directory=str(settings.static_dir)), name="static")

    # -- helpers --------------------------------------------------------------------------------

    def theme_of(request: Request) -> str:
        theme = request.cookies.get(THEME_COOKIE, "auto")
        return theme if theme in THEMES else "auto"

    def chrome(request: Request) -> dict[str, Any]:
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        theme = theme_of(request)
        return {
            "theme": theme,
            "theme_links": [
                {"value": t, "label": t.capitalize(), "url": urls.theme_url(t, here), "current": t == theme}
                for t in THEMES
            ],
        }

    def render(
        request: Request,
        name: str,
        context: dict[str, Any],
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> HTMLResponse:
        response = templates.TemplateResponse(
            request, name, {**chrome(request), **context}, status_code=status, headers=headers
        )
        response.headers.update(VARY)
        return response

    def error_page(request: Request, status: int, title: str, reason: str) -> Response:
        if _wants_json(request):
            return JSONResponse(
                {"error": title.lower().replace(" ", "_"), "detail": reason}, status_code=status
            )
        return render(
            request,
            "error.html",
            {"page_title": title, "status": status, "title": title, "reason": reason},
            status=status,
        )

    def conditional(request: Request, response: Response, cache_control: str) -> Response:
        """`response` with a weak ETag of its body and `cache_control`, or a 304 when the client
        already holds that body (If-None-Match). For pages and documents that change only with a
        deploy or with the visitor's theme (which is in the body, so in the ETag)."""
        etag = 'W/"' + hashlib.blake2b(bytes(response.body), digest_size=12).hexdigest() + '"'
        headers = {"ETag": etag, "Cache-Control": cache_control}
        asked = request.headers.get("if-none-match", "")
        if etag in (tag.strip() for tag in asked.split(",")) or asked.strip() == "*":
            vary = {k: v for k, v in response.headers.items() if k.lower() == "vary"}
            return Response(status_code=304, headers={**headers, **vary})
        response.headers.update(headers)
        return response

    def load(scene_ref: str):
        scene_id = scenes.normalize_scene_id(scene_ref)
        if scene_id is None:
            raise StarletteHTTPException(404, f"There is no scene {scene_ref[:40]!r} in this course.")
        summary = scenes.SCENE_IDS[scene_id]
        if not summary.built:
            raise StarletteHTTPException(
                404, f"Scene {scene_id}, “{summary.title}”, is on the course map but not built yet."
            )
        return scene_id, scenes.load_scene(scene_id)

    def read_query(query: str) -> list[tuple[str, str]]:
        if len(query) > settings.max_query_chars:
            raise BadStateURL(
                f"The URL's query string has {len(query)} characters; the most this "
                f"app reads is {settings.max_query_chars}."
            )
        return parse_qsl(query, keep_blank_values=True)

    def previous_state(request: Request, scene: Any, embed: bool) -> SceneState | None:
        current = request.headers.get("HX-Current-URL")
        if not current:
            return None
        try:
            parts = urlsplit(current)
        except ValueError:  # e.g. "http://[::1": an unreadable header is no previous state
            return None
        if parts.path.rstrip("/") != (urls.embed_path(scene.id) if embed else urls.scene_path(scene.id)):
            return None
        try:
            return parse_state(scene, parse_qsl(parts.query, keep_blank_values=True), settings, embed=embed)[
                0
            ]
        except BadStateURL:
            return None

    def render_panels(panels: list[str], context: dict[str, Any], held: str) -> tuple[list[str], str]:
        """Render each panel of an update; leave out those the page already holds unchanged.

        `held` is the X-Panels header app.js sends: "name:hash" pairs from the page's
        #panel-hashes, as the last update set them. Returns the panels to send and the new pairs.
        The pseudocode panel is always sent when listed: a step update changes part of it
        (#code-now), so the page's copy no longer matches the hash it was sent with."""
        have = dict(p.split(":", 1) for p in held[:MAX_PANELS_HEADER].split() if ":" in p)
        out = []
        for name in panels:
            html = templates.get_template(name).render(context)
            key = name.removeprefix("_").removesuffix(".html")
            digest = hashlib.blake2b(html.encode(), digest_size=8).hexdigest()
            if name not in UNHASHED_PANELS:
                if have.get(key) == digest:
                    continue
                have[key] = digest
            out.append(html)
        return out, " ".join(f"{k}:{v}" for k, v in sorted(have.items()))

    def scene_response(
        request: Request,
        scene_ref: str,
        *,
        embed: bool,
        query_string: str | None = None,
        workshop: dict[str, Any] | None = None,
    ) -> Response:
        """A scene page, or its htmx step update. A workshop page (app/workshops/routes.py) is this
        same page for the workshop's scene state (`query_string`), with `workshop` in its context."""
        scene_id, scene = load(scene_ref)
        if scene_ref != scene_id and workshop is None:  # a readable slug: redirect to the canonical address
            path = urls.embed_path(scene_id) if embed else urls.scene_path(scene_id)
            return RedirectResponse(
                path + (f"?{request.url.query}" if request.url.query else ""), status_code=308
            )
        query_string = request.url.query if query_string is None else query_string
        query = read_query(query_string)
        state, notes = parse_state(scene, query, settings, embed=embed)
        injecting = state.inject is not None
        is_htmx = request.headers.get("HX-Request") == "true" and workshop is None
        # a workshop presenter's page has a notes pane that each step update refreshes
        presenting = request.headers.get("X-Workshop") == "presenter" and not embed
        restoring = request.headers.get("HX-History-Restore-Request") == "true"
        update_key = None
        if is_htmx and not restoring and not injecting and settings.step_cache_bytes > 0:
            # a step update is a function of these alone (the engine is a function of the URL)
            h = request.headers
            update_key = (
                scene_id, embed, query_string, str(request.base_url), theme_of(request), presenting,
                h.get("HX-Current-URL", ""), h.get("X-Diagram", ""),
                h.get("X-Panels", "")[:MAX_PANELS_HEADER],
            )  # fmt: skip
            cached = step_updates.get(update_key)
            if cached is not None:
                body, history = cached
                return HTMLResponse(body, headers={**history, **VARY})
        timeline, state = build_timeline(sim, scene, state)
        if is_htmx and not restoring and not injecting and not state.fine:
            # a knob change keeps the step number, which in the new run can fall between two stops
            # ("between steps 11 and 12 of 13"): it lands on the stop that holds that step instead
            before = previous_state(request, scene, embed)
            if before is not None and before.beat == state.beat and before.knobs != state.knobs:
                moments = frames.beat_key_moments(scene.beat(state.beat))
                path_stops = frames.timeline_stops(sim, timeline, moments)
                landing = path_stops[frames.stop_index(path_stops, timeline.step)].step
                if landing != timeline.step:
                    timeline, state = build_timeline(sim, scene, state.replace(step=landing))
        canonical = urls.page_url(state, embed=embed)
        if injecting and not is_htmx and workshop is None:
            return RedirectResponse(canonical, status_code=303)
        context = scene_context(request, scene, state, timeline, notes + timeline.notes, embed=embed)
        context["workshop"] = workshop
        if is_htmx and not restoring:
            previous = previous_state(request, scene, embed)
            same = state.same_scenario(previous)
            if embed:
                panels = EMBED_STEP_PANELS if same else EMBED_SCENARIO_PANELS
            else:
                panels = STEP_PANELS if same else SCENARIO_PANELS
            if presenting:
                panels = panels + ["_ws_notes.html"]
            # a knob value the page corrected (one this beat cannot run with) leaves the scenario
            # as it was, but the control must move back to the value that ran, under its note
            asked = dict(query)
            if same and any(asked.get(key, value) != value for key, value in state.knobs):
                panels = panels + ["_knobs.html"]
            # the page shows one of the diagram's two geometries; app.js names it, so a step
            # update draws only that one (anything else: both, as a full page does)
            only = request.headers.get("X-Diagram")
            context = {**context, "oob": True, "diagram_only": only if only in ("wide", "narrow") else None}
            rendered, hashes = render_panels(panels, context, request.headers.get("X-Panels", ""))
            # a move along the same timeline replaces the browser's history entry; a new beat,
            # knob, fault, question or prediction adds one (the URL holds the state either way)
            history = {HISTORY_REPLACE if state.moves_along(previous) else HISTORY_PUSH: canonical}
            response = render(
                request,
                "_update.html",
                {**context, "panels": panels, "rendered": rendered, "panel_hashes": hashes},
                headers=history,
            )
            if update_key is not None:
                step_updates.put(update_key, (response.body, history))
            return response
        return render(request, "embed.html" if embed else "scene.html", context)

    def here_forms(state: SceneState, *, embed: bool) -> list[tuple[str, list[tuple[str, str]]]]:
        """The hidden forms of _here.html: the whole state for the fault buttons, and without the
        one parameter each other group of buttons sets (q, ask, guess). Embeds have faults only."""
        pairs = state.query_pairs(embed=embed)
        forms = [("act", pairs)]
        if not embed:
            forms += [
                ("act-q", [p for p in pairs if p[0] != "q"]),
                ("act-ask", [p for p in pairs if p[0] not in ("q", "ask")]),
                ("act-guess", [p for p in pairs if p[0] != "guess"]),
            ]
        return forms

    def scene_context(
        request: Request, scene: Any, state: SceneState, timeline, notes: list[str], *, embed: bool
    ) -> dict[str, Any]:
        canonical = urls.page_url(state, embed=embed)
        base = str(request.base_url).rstrip("/")
        moments = frames.beat_key_moments(scene.beat(state.beat))
        path = frames.timeline_path(sim, timeline, moments)
        run = build_compare(sim, scene, state, timeline)
        # the same key moments, so the comparison folds (or keeps) a group join the way the main run does
        other = frames.timeline_path(sim, run.timeline, moments) if run and run.timeline else None
        compare = presenters.compare_panel(
            scene, state, timeline, run, embed=embed,
            box=other.box if other else None, stops=other.stops if other else None,
        )
        previous_view = None
        if "metadata_log" in scene.panels and timeline.step > 0:
            previous_view = sim.view(timeline.scenario, timeline.step - 1)
        full_url = urls.scene_url(state.replace(lock=None, from_step=None, to_step=None))
        locked = embed and state.lock == "beat"
        knob_keys = tuple(k.key + "=" for k in scene.knobs)

        def knob_note(note: str) -> bool:  # notes about a knob value start "key=value"
            return note.startswith(knob_keys)

        embed_src = urls.embed_url(state)
        stops = path.stops
        beat = presenters.beats_panel(scene, state, timeline, embed=embed, stops=stops)
        return {
            "page_title": f"{scene.id} · {scene.title}",
            "embed": embed,
            "scene": {
                "id": scene.id,
                "title": scene.title,
                "promise": scene.promise,
                "previously": scene.previously,
                "minutes": scene.minutes,
            },
            "form_action": urls.embed_path(scene.id) if embed else urls.scene_path(scene.id),
            "state": state,
            "state_fields": [
                (k, v)
                for k, v in state.query_pairs(embed=embed)
                if k not in dict(state.knobs) and k not in ("step", "ask")
            ],
            "here": here_forms(state, embed=embed),
            # a note about a knob's value shows at the knobs (unless an embed locks them away)
            "notes": presenters.notes_panel(notes if locked else [n for n in notes if not knob_note(n)]),
            "knob_notes": [] if locked else [n for n in notes if knob_note(n)],
            "diagram": presenters.diagram(timeline, timeline.scenario, box=path.box),
            "beat_label": presenters.beat_label(scene, state, timeline),
            "compare": compare,
            "state_panels": state_panels.state_panels(scene, timeline, previous_view),
            "charts": state_panels.charts_slot(scene, state, timeline),
            "course": presenters.course_links(scene.id, embed=embed),
            "timeline": presenters.timeline_panel(timeline, state, embed=embed, stops=stops),
            "caption": presenters.caption_panel(
                timeline, state, embed=embed, stops=stops, sandbox=beat["sandbox"]
            ),
            "faults": presenters.fault_buttons(timeline, state, embed=embed),
            "faults_idle_note": presenters.idle_brokers_note(timeline),
            "log": presenters.event_log(timeline, settings.max_log_lines),
            "code": presenters.code_panel(scene, timeline),
            "knobs": presenters.knobs_panel(scene, state),
            "locked": locked,
            "headroom": presenters.headroom(state),
            "beat": beat,
            "qa": qa_panel(scene, state, timeline, embed=embed),
            "challenge": presenters.challenge_panel(
                scene, timeline, sandbox=beat["sandbox"], views=sim.views(timeline.scenario)
            ),
            "share": {
                "url": base + canonical,
                "path": canonical,
                "full_url": base + full_url,
                "embed_src": base + embed_src,
                "embed_code": f'<iframe src="{base + embed_src}" title="Build Kafka · {scene.id} '
                f'{scene.title}" width="100%" height="720" loading="lazy" '
                f'style="border:0;max-width:1200px"></iframe>',
            },
        }

    # -- routes ---------------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse)
    def home(request: Request):
        course = []
        for s in scenes.list_scenes():
            course.append(
                {
                    "id": s.id,
                    "title": s.title,
                    "promise": s.promise,
                    "minutes": s.minutes,
                    "built": s.built,
                    "track": s.track,
                    "url": urls.scene_path(s.id) if s.built else None,
                }
            )
        # the path starts at the first built scene of the core course (01 Foundations)
        start = next((c for c in course if c["track"] == "core" and c["built"]), None)
        return render(
            request,
            "home.html",
            {
                "page_title": "Course map",
                "start": start,
                "tracks": [
                    {
                        "id": "core",
                        "title": "Core course",
                        "items": [c for c in course if c["track"] == "core"],
                    },
                    {
                        "id": "deep",
                        "title": "Durability deep dive",
                        "items": [c for c in course if c["track"] != "core"],
                    },
                ],
            },
        )

    # Scene pages are CPU-bound (a cached replay plus rendering, a few ms). They run on the event
    # loop rather than in the threadpool: threads would not run them in parallel (the GIL), they
    # would only interleave them, so every concurrent request's time would stretch to the sum of
    # all of them. On the loop each request takes its own few ms; more cores mean more workers.
    # With `settings.engine_workers > 0` (production, `python -m app.serve`), EngineDispatch sends
    # these two routes and the simulate API to worker processes (app/workers.py), where this same
    # code runs inline under a deadline; the server's own loop never runs them.
    @app.get("/scenes/{scene_ref}")
    async def scene_page(request: Request, scene_ref: str):
        with engine.budget(deadline_s=settings.run_deadline_s):  # inline too (engine_workers=0)
            return scene_response(request, scene_ref, embed=False)

    @app.get("/embed/{scene_ref}")
    async def embed_page(request: Request, scene_ref: str):
        with engine.budget(deadline_s=settings.run_deadline_s):
            return scene_response(request, scene_ref, embed=True)

    @app.get("/theme")
    def set_theme(request: Request, set: str = "auto", next: str = "/"):  # noqa: A002 - query names
        theme = set if set in THEMES else "auto"
        target = next if next.startswith("/") and not next.startswith("//") and "\\" not in next else "/"
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            THEME_COOKIE, theme, max_age=THEME_COOKIE_MAX_AGE_S, samesite="lax", httponly=False
        )
        return response

    @app.get(glossary_mod.GLOSSARY_PATH, response_class=HTMLResponse)
    def glossary_page(request: Request):
        context = {"page_title": "Glossary", "glossary": glossary_mod.glossary_page()}
        return render(request, "glossary.html", context)

    # -- docs (app/docs.py) and the API's description (app/openapi.py) --------------------------
    # Cheap, so on the event loop: Markdown is rendered once per file version and kept.

    docs_site = docs_mod.DocsSite(settings.docs_dir.parent, settings.docs_dir)
    app.state.docs = docs_site
    DOCS_CACHE = "no-cache"  # revalidate: the ETag answers 304 until the file or the theme changes

    def docs_missing(request: Request, name: str, pages: dict[str, docs_mod.Page] | None = None) -> Response:
        context = {"page_title": "Docs page not found", "name": name[:80], "pages": docs_site.listing(pages)}
        return render(request, "docs_missing.html", context, status=404)

    def docs_response(request: Request, name: str) -> Response:
        pages = docs_site.pages()
        page = pages.get(name)
        if page is None and name == "":  # no docs/README.md: the index is the list of pages
            page, doc = docs_site.bare_index()
        elif page is None:
            return docs_missing(request, name, pages)
        else:
            doc = docs_site.render(page, pages)
        context = {
            "page_title": doc.title if page.name else "Docs",
            "doc": doc,
            "toc": docs_mod.nest(doc.toc),
            "page": page,
            "pages": docs_site.listing(pages),
        }
        return conditional(request, render(request, "docs.html", context), DOCS_CACHE)

    @app.get(docs_mod.DOCS_PATH, response_class=HTMLResponse)
    def docs_index(request: Request):
        return docs_response(request, "")

    @app.get(docs_mod.DOCS_PATH + "/{name}", response_class=HTMLResponse)
    def docs_page(request: Request, name: str):
        if name.endswith(".md"):  # a link written for the code host: the page's own address
            stem = name.removesuffix(".md")
            target = "" if stem == docs_mod.INDEX_FILE.removesuffix(".md") else stem
            if target in docs_site.pages():
                return RedirectResponse(docs_mod.page_url(target), status_code=308)
        return docs_response(request, name)

    @app.get(docs_mod.DOCS_PATH + "/{rest:path}", response_class=HTMLResponse)
    def docs_elsewhere(request: Request, rest: str):
        return docs_missing(request, rest)

    def openapi_document() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = openapi_mod.openapi_document(app)
        return app.openapi_schema

    app.openapi = openapi_document  # type: ignore[method-assign]
    JSON_CACHE = "public, max-age=300"  # both change only with a deploy
    api_documents: dict[str, bytes] = {}

    def json_document(request: Request, key: str, build) -> Response:
        if key not in api_documents:
            api_documents[key] = json.dumps(build(), indent=1).encode()
        response = Response(api_documents[key], media_type="application/json")
        return conditional(request, response, JSON_CACHE)

    @app.get(openapi_mod.OPENAPI_PATH, include_in_schema=False)
    def openapi_json(request: Request):
        return json_document(request, "openapi", openapi_document)

    @app.get(
        openapi_mod.SCHEMA_PATH,
        summary="The scenario's JSON Schema",
        operation_id="scenario_schema",
        tags=["simulate"],
        openapi_extra=openapi_mod.SCHEMA_OPENAPI,
    )
    def scenario_schema(request: Request):
        return json_document(request, "schema", scenario_json_schema)

    # On the event loop itself, never in a thread or a worker: it answers while every engine
    # worker is busy.
    @app.get("/healthz", summary="Health check", operation_id="healthz", tags=["health"],
             openapi_extra=openapi_mod.HEALTHZ_OPENAPI)  # fmt: skip
    async def healthz():
        return {"ok": True}

    @app.post(
        "/api/v1/simulate",
        summary="Run a scenario",
        description="Validate the scenario in the body, run the simulator on it and answer its result. "
        f"The body's format: {docs_mod.page_url('scenario-format')}.",
        operation_id="simulate",
        tags=["simulate"],
        openapi_extra=openapi_mod.simulate_openapi(
            settings.max_body_bytes, settings.run_deadline_s, settings.max_api_events
        ),
    )
    async def api_simulate(request: Request):
        steps_raw = request.query_params.get("steps", "false").lower()
        if steps_raw not in ("true", "false", "1", "0"):
            return JSONResponse(
                {
                    "error": "invalid_scenario",
                    "problems": [{"path": "?steps", "message": "steps must be true or false"}],
                },
                status_code=422,
            )
        declared = request.headers.get("content-length")
        too_big = {
            "error": "payload_too_large",
            "problems": [
                {"path": "$", "message": f"the body is larger than {settings.max_body_bytes} bytes"}
            ],
        }
        if declared and declared.isdigit() and int(declared) > settings.max_body_bytes:
            return JSONResponse(too_big, status_code=413)
        body = bytearray()
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > settings.max_body_bytes:
                return JSONResponse(too_big, status_code=413)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            # A form or text/plain body is a "simple" request any web page can make a visitor's
            # browser send; accepting only JSON keeps other sites from running simulations here.
            return JSONResponse(
                {
                    "error": "unsupported_media_type",
                    "problems": [
                        {"path": "$", "message": "send the scenario as Content-Type: application/json"}
                    ],
                },
                status_code=415,
            )
        try:
            scenario = json.loads(body)
        except RecursionError:
            return JSONResponse(
                {
                    "error": "invalid_scenario",
                    "problems": [{"path": "$", "message": "the body nests too deeply to be a scenario"}],
                },
                status_code=422,
            )
        except ValueError as exc:  # not JSON, bad UTF-8, or an integer too long to convert
            return JSONResponse(
                {
                    "error": "invalid_scenario",
                    "problems": [{"path": "$", "message": f"the body is not JSON: {exc}"}],
                },
                status_code=422,
            )
        if not isinstance(scenario, dict):
            return JSONResponse(
                {
                    "error": "invalid_scenario",
                    "problems": [{"path": "$", "message": "the scenario must be a JSON object"}],
                },
                status_code=422,
            )
        from starlette.concurrency import run_in_threadpool

        def run() -> dict[str, Any]:
            # one budget for the run: the per-request deadline, the API's result-size and event caps
            with engine.budget(
                deadline_s=settings.run_deadline_s,
                max_result_bytes=settings.max_api_result_bytes,
                max_events=settings.max_api_events,
            ):
                return engine.simulate(scenario, steps=steps_raw in ("true", "1"))

        try:
            result = await run_in_threadpool(run)
        except engine.BudgetExceeded as exc:
            # `budget` names the cap (events, steps, sim_time, result_bytes; deadline when busy)
            if exc.deterministic:
                return JSONResponse({**exc.to_json(), "budget": exc.kind}, status_code=422)
            retry = str(max(1, round(settings.run_deadline_s)))
            # the same error code as the worker pool's 503 (a full queue, a worker past its backstop)
            reason = "; ".join(p["message"] for p in exc.problems)
            body = {"error": "try_again_shortly", "detail": reason, "budget": exc.kind}
            body["problems"] = exc.problems
            return JSONResponse(body, status_code=503, headers={"Retry-After": retry})
        except engine.ScenarioError as exc:
            return JSONResponse(exc.to_json(), status_code=422)
        return JSONResponse(result)

    # -- errors ---------------------------------------------------------------------------------

    @app.exception_handler(BadStateURL)
    async def bad_state(request: Request, exc: BadStateURL):
        return error_page(request, 400, "Bad address", exc.reason)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        reasons = {404: "There is nothing at this address.", 405: "This address does not take that method."}
        detail = (
            exc.detail
            if isinstance(exc.detail, str) and exc.detail not in ("Not Found", "Method Not Allowed")
            else reasons.get(exc.status_code, "The request could not be served.")
        )
        titles = {404: "Not found", 405: "Method not allowed"}
        return error_page(request, exc.status_code, titles.get(exc.status_code, "Request error"), detail)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        if _wants_json(request):
            problems = [
                {"path": ".".join(str(p) for p in e.get("loc", ())), "message": e.get("msg", "")}
                for e in exc.errors()
            ]
            return JSONResponse({"error": "invalid_request", "problems": problems}, status_code=422)
        return error_page(request, 400, "Bad address", "Some part of this address could not be read.")

    async def unexpected(request: Request, exc: Exception):
        log.exception("unhandled error on %s", request.url.path)
        return error_page(
            request,
            500,
            "Something broke",
            "The app hit a bug while building this page. The address you used is "
            "still good; please report it so we can replay it.",
        )

    async def unavailable(scope: dict[str, Any], reason: str, retry_after_s: int) -> Response:
        response = error_page(Request(scope), 503, "Try again shortly", reason)
        response.headers["Retry-After"] = str(retry_after_s)
        return response

    @app.exception_handler(engine.BudgetExceeded)
    async def over_budget(request: Request, exc: engine.BudgetExceeded):
        """A page past its deadline: 503, try again; one too big every time: 400 with the cap."""
        if not exc.deterministic:
            return await unavailable(request.scope, str(exc), max(1, round(settings.run_deadline_s)))
        return error_page(request, 400 if not _wants_json(request) else 422, "Too much work", str(exc))

    workshops = workshop_routes.install(
        app, settings, render=render, error_page=error_page, scene_response=scene_response
    )
    app.state.workshops = workshops

    if pool is not None:  # innermost: a worker's answer and the 503 pass through every layer below
        app.add_middleware(EngineDispatch, pool=pool, unavailable=unavailable)
    app.add_middleware(CatchAll, handler=unexpected)
    app.add_middleware(GZip, minimum_size=settings.gzip_min_bytes)
    app.add_middleware(FrameHeaders, extra=settings.extra_headers)
    app.add_middleware(ForwardedFromTrustedProxy, trusted=settings.trusted_proxies)
    return app


app = create_app(Settings.from_env())
