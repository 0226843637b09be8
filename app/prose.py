"""Prose from the scene data as segments for templates/_text.html.

`inline(text)` splits on `backticks` (code) and marks every mention of a scene ("scene 03",
"Scene 05a", "scene d2"): a link to it when it is built, a note that it is still to come when it
is only on the course map, so a learner is never sent to a page that does not exist. Whether a
scene is built is read from the course (scenes.list_scenes), never written into the prose.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import scenes

_SCENE_REF = re.compile(r"\b([Ss]cenes? )(\d\d[a-z]?|d\d)\b")


@functools.cache
def _course() -> dict[str, bool]:
    return {s.id: s.built for s in scenes.list_scenes()}


def _scene_refs(text: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    at = 0
    for m in _SCENE_REF.finditer(text):
        built = _course().get(m.group(2))
        if built is None:
            continue  # not a scene of this course: plain text
        if m.start() > at:
            out.append({"code": False, "text": text[at : m.start()]})
        seg: dict[str, Any] = {"code": False, "text": m.group(0)}
        if built:
            seg["href"] = f"/scenes/{m.group(2)}"
        else:
            seg["coming"] = True
        out.append(seg)
        at = m.end()
    if at < len(text):
        out.append({"code": False, "text": text[at:]})
    return out


def inline(text: str) -> list[dict[str, Any]]:
    """Split prose on `backticks` into text and code segments, scene mentions marked."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: keep the text as it is
        return _scene_refs(str(text)) or [{"code": False, "text": str(text)}]
    out: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        if not part:
            continue
        if i % 2 == 1:
            out.append({"code": True, "text": part})
        else:
            out.extend(_scene_refs(part))
    return out
