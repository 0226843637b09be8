"""Glossary terms in prose: each term's first mention opens its definition, with no JavaScript.

    link_terms(text, seen=None, prefix="t") -> list[segment]   prose -> segments for _text.html
    linker(prefix) -> callable(text) -> list[segment]            the same with one `seen` per area
    glossary_page() -> dict                                      context for /glossary

A segment is `{"code": bool, "text": str}` as `prose.inline` makes them (backticks mark code),
plus `"term"` on a mention: `{"id", "title", "definition", "url", "tip_id"}`. `_term.html` draws a
mention as a button whose popover (the HTML `popover` attribute: opened by a click, a tap, Enter
or Space, and closed by Escape or a click elsewhere) holds the definition; CSS also shows the same
box while the pointer rests on the term or the keyboard focus is on it. The box holds no link, so
it adds no tab stop and never takes the focus away; /glossary (linked from the scene header and
the diagram legend) lists every entry. The button's accessible name is the term as written; the
definition is its description.

Matching: every spelling of every entry (scenes/data/glossary.toml), longest first, at word
boundaries, case-sensitive for spellings with a capital (so "HW" is a term but "hw" in a URL is
not) and case-insensitive otherwise; a plural ending counts ("brokers"). A
code segment is a mention only when its whole text is a spelling (`min.insync.replicas`). Only
the first mention of an entry in one `seen` set is linked, so a paragraph is not a sea of links.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from app.prose import inline
from scenes.glossary import Term, glossary

GLOSSARY_PATH = "/glossary"


def anchor(term_id: str) -> str:
    return f"glossary-{term_id}"


def term_url(term_id: str) -> str:
    return f"{GLOSSARY_PATH}#{anchor(term_id)}"


def _pattern(spelling: str) -> str:
    body = re.escape(spelling)
    if spelling[-1].isalpha() and spelling[-1].islower():
        body += r"(?:s|es)?"  # plurals; verb forms are spelled out as aliases ("fetched")
    return r"(?<![\w.=/-])" + body + r"(?![\w/]|[.-]\w)"


@functools.cache
def _matchers() -> tuple[tuple[re.Pattern[str], Term], ...]:
    out = []
    spellings = [(s, t) for t in glossary() for s in t.spellings]
    for spelling, entry in sorted(spellings, key=lambda st: -len(st[0])):
        flags = 0 if any(c.isupper() for c in spelling) else re.IGNORECASE
        out.append((re.compile(_pattern(spelling), flags), entry))
    return tuple(out)


@functools.cache
def _exact() -> dict[str, Term]:
    out: dict[str, Term] = {}
    for entry in glossary():
        for spelling in entry.spellings:
            out.setdefault(spelling, entry)
            out.setdefault(spelling.lower(), entry)
    return out


def _avoided(text: str, start: int, entry: Term) -> bool:
    rest = text[start:].lower()
    return any(rest.startswith(a.lower()) for a in entry.avoid)


def _mention(text: str, entry: Term, code: bool, prefix: str) -> dict[str, Any]:
    return {
        "code": code,
        "text": text,
        "term": {
            "id": entry.id,
            "title": entry.title,
            "definition": entry.definition,
            "url": term_url(entry.id),
            "tip_id": f"gl-{prefix}-{entry.id}",
        },
    }


@functools.lru_cache(maxsize=4096)
def _spans(text: str) -> tuple[tuple[int, int, Term], ...]:
    """The glossary matches in one plain-text segment, leftmost first and the longest at one
    position, none overlapping. They depend on the text alone, so they are computed once per
    text (narration and captions repeat on every step); the bound keeps the cache small."""
    candidates = []
    for pattern, entry in _matchers():
        for m in pattern.finditer(text):
            if not _avoided(text, m.start(), entry):
                candidates.append((m.start(), -(m.end() - m.start()), m.end(), entry))
    covered: list[tuple[int, int, Term]] = []
    for a, _, b, entry in sorted(candidates, key=lambda c: (c[0], c[1])):
        if any(a < cb and ca < b for ca, cb, _ in covered):
            continue
        covered.append((a, b, entry))
    return tuple(covered)


def _link_plain(text: str, seen: set[str], prefix: str) -> list[dict[str, Any]]:
    """Split one plain-text segment around the first mention of each entry not yet in `seen`.

    A match of an entry already linked is not linked again but still covers its words, so
    "offset" inside a second "log end offset" stays plain."""
    found: list[tuple[int, int, Term]] = []
    for a, b, entry in _spans(text):
        if entry.id not in seen and all(f[2].id != entry.id for f in found):
            found.append((a, b, entry))
    out: list[dict[str, Any]] = []
    pos = 0
    for a, b, entry in found:
        if a > pos:
            out.append({"code": False, "text": text[pos:a]})
        out.append(_mention(text[a:b], entry, False, prefix))
        seen.add(entry.id)
        pos = b
    if pos < len(text):
        out.append({"code": False, "text": text[pos:]})
    return out


def link_segments(segments: list[dict[str, Any]], seen: set[str] | None = None,
                  prefix: str = "t") -> list[dict[str, Any]]:
    """`prose.inline` segments with the first mention of each glossary term marked."""
    seen = set() if seen is None else seen
    out: list[dict[str, Any]] = []
    for seg in segments:
        if seg.get("term") or seg.get("href") or seg.get("coming"):
            out.append(seg)
        elif seg.get("code"):
            key = seg["text"].split("=")[0].strip()  # `min.insync.replicas=2` names the setting
            entry = _exact().get(key) or _exact().get(key.lower())
            if entry is not None and entry.id not in seen:
                seen.add(entry.id)
                out.append(_mention(seg["text"], entry, True, prefix))
            else:
                out.append(seg)
        else:
            out.extend(_link_plain(str(seg["text"]), seen, prefix))
    return out


def link_terms(text: str, seen: set[str] | None = None, prefix: str = "t") -> list[dict[str, Any]]:
    """Prose (with `code` in backticks) -> segments for _text.html, the first mention of each
    glossary term marked. Pass one `seen` set for a whole area (a beat's narration) so a term is
    linked once there; `prefix` keeps the popovers' ids unique on the page (one per area)."""
    return link_segments(inline(text), seen, prefix)


def linker(prefix: str) -> Callable[[str], list[dict[str, Any]]]:
    """A `link_terms` with its own `seen` set, for a template area such as the diagram legend."""
    seen: set[str] = set()

    def link(text: str) -> list[dict[str, Any]]:
        return link_terms(text, seen, prefix)

    return link


# --------------------------------------------------------------------------------------------
# the /glossary page


def _source(text: str) -> dict[str, Any]:
    url = None
    try:  # public citations as links (app/sources.py); absent in checkouts without it
        from app.sources import citation_url  # type: ignore[import-not-found]

        url = citation_url(text)
    except ImportError:
        pass
    if url is None and text.startswith(("https://", "http://")):
        url = text
    return {"text": text, "url": url}


def glossary_page() -> dict[str, Any]:
    entries = sorted(glossary(), key=lambda t: t.term.lower().lstrip("_"))
    by_id = {t.id: t for t in entries}
    items = []
    for t in entries:
        items.append({
            "id": t.id,
            "anchor": anchor(t.id),
            "term": t.term,
            # the letter it is filed under: "__consumer_offsets" under C, as the sort has it
            "letter": t.term.lstrip("_")[:1].upper(),
            "name": t.name,
            "aliases": [a for a in t.aliases if a.lower() not in (t.term.lower(), (t.name or "").lower())],
            "definition": t.definition,
            "related": [{"title": by_id[r].title, "url": "#" + anchor(r)} for r in t.related],
            "sources": [_source(s) for s in t.sources],
        })
    letters = sorted({i["letter"] for i in items if i["letter"].isalpha()})
    return {"items": items, "letters": letters}
