"""Every URL the app emits is built here, and nowhere else.

Templates never concatenate paths or query strings: presenters call these functions and put
finished URLs into the context. Changing the URL scheme is therefore a change to this module
(and `app/state.py`, which parses what this module writes).
"""

from __future__ import annotations

import functools
from pathlib import Path
from urllib.parse import quote, urlencode

from app.state import SceneState
from engine.steps import KAFKA_SOURCE_BASE_URL

# Keep ':' '@' and ',' readable in action lists such as a=crash:2@5.
_SAFE = ":@,"
ASSET_VERSION = "1"
_HTMX_FILE: str | None = None


def _query(pairs: list[tuple[str, str]]) -> str:
    return urlencode(pairs, safe=_SAFE, quote_via=quote)


@functools.lru_cache(maxsize=4096)
def _state_query(state: SceneState, embed: bool) -> str:
    # A page builds dozens of URLs that differ in one field; states are frozen, so cache them.
    return _query(state.query_pairs(embed=embed))


def home_url() -> str:
    return "/"


def scene_path(scene_id: str) -> str:
    return f"/scenes/{scene_id}"


def embed_path(scene_id: str) -> str:
    return f"/embed/{scene_id}"


def scene_url(state: SceneState, *, fragment: str | None = None, **changes) -> str:
    target = state.replace(**changes) if changes else state
    url = f"{scene_path(target.scene_id)}?{_state_query(target, False)}"
    return f"{url}#{fragment}" if fragment else url


def embed_url(state: SceneState, **changes) -> str:
    target = state.replace(**changes) if changes else state
    return f"{embed_path(target.scene_id)}?{_state_query(target, True)}"


def page_url(state: SceneState, *, embed: bool, **changes) -> str:
    """The same page kind (scene or embed) at another state."""
    return embed_url(state, **changes) if embed else scene_url(state, **changes)


def beat_url(scene_id: str, beat_id: str, *, embed: bool = False) -> str:
    """A beat from its start: its own preset knobs, no injected faults, step 0."""
    path = embed_path(scene_id) if embed else scene_path(scene_id)
    return f"{path}?{_query([('beat', beat_id)])}"


def theme_url(theme: str, next_url: str) -> str:
    return f"/theme?{_query([('set', theme), ('next', next_url)])}"


def api_simulate_url(*, steps: bool = False) -> str:
    return "/api/v1/simulate" + ("?steps=true" if steps else "")


def static_url(name: str) -> str:
    return f"/static/{name}?v={ASSET_VERSION}"


def htmx_url(static_dir: Path) -> str:
    """The vendored htmx file, whatever 2.0.x release static/vendor holds."""
    global _HTMX_FILE
    if _HTMX_FILE is None:
        found = sorted((static_dir / "vendor").glob("htmx-*.min.js"))
        _HTMX_FILE = f"vendor/{found[-1].name}" if found else "vendor/htmx.min.js"
    return f"/static/{_HTMX_FILE}"


def kafka_source_url(path: str, lines: str = "") -> str:
    """A link into apache/kafka at the commit the engine's citations were read from."""
    if path.startswith("http://") or path.startswith("https://"):
        return path
    path = path.lstrip("/")
    if "#" in path:
        return f"{KAFKA_SOURCE_BASE_URL}{path}"
    if not lines:
        return f"{KAFKA_SOURCE_BASE_URL}{path}"
    first, _, last = lines.partition("-")
    return f"{KAFKA_SOURCE_BASE_URL}{path}#L{first}" + (f"-L{last}" if last else "")


def absolute(base_url: str, url: str) -> str:
    return base_url.rstrip("/") + url
