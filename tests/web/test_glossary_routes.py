"""The glossary: /glossary lists every entry with an anchor, scenes link to it, and the terms in
a beat's narration and the diagram legend open their definitions (app/glossary.py)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from app.glossary import link_terms, linker
from scenes.glossary import glossary


def _ids(html: str) -> list[str]:
    return re.findall(r'\sid="([^"]+)"', html)


def test_glossary_page_lists_every_entry_with_an_anchor(client):
    r = client.get("/glossary")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    html = r.text
    for entry in glossary():
        assert f'id="glossary-{entry.id}"' in html
    assert "<h1" in html and "Glossary" in html
    assert html.count('class="glossary-entry"') == len(glossary())
    ids = _ids(html)
    assert len(ids) == len(set(ids))
    # learners see public sources only, as links where there is one
    assert ".md" not in html and "§" not in html
    assert 'href="https://cwiki.apache.org/' in html or "KIP-101" in html


def test_every_scene_links_to_the_glossary(client):
    for scene_id in ("04", "05", "06", "d3"):
        assert 'href="/glossary"' in client.get(f"/scenes/{scene_id}").text


class _Terms(HTMLParser):
    """Collects each term button (its text, popovertarget, aria-describedby) and each popover."""

    def __init__(self):
        super().__init__()
        self.buttons: list[dict] = []
        self.popovers: dict[str, str] = {}
        self._in: str | None = None
        self._tip: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "button" and "gl-term" in (a.get("class") or ""):
            self.buttons.append({"target": a.get("popovertarget"), "described": a.get("aria-describedby"),
                                 "type": a.get("type"), "text": ""})
            self._in = "button"
        elif "popover" in a and "gl-tip" in (a.get("class") or ""):
            self._tip = a["id"]
            self.popovers[self._tip] = ""

    def handle_endtag(self, tag):
        if tag == "button":
            self._in = None
        elif tag == "span":
            self._tip = None  # a popover holds no nested span, only <strong> and text

    def handle_data(self, data):
        if self._in == "button":
            self.buttons[-1]["text"] += data
        if self._tip is not None:
            self.popovers[self._tip] += data


def test_a_rendered_beat_marks_its_terms(client):
    html = client.get("/scenes/05").text
    beat = html[html.index('id="beat"'):]
    beat = beat[: beat.index("</section>")]
    parser = _Terms()
    parser.feed(beat)
    texts = [b["text"] for b in parser.buttons]
    assert len(texts) >= 8, texts
    # each is a real button with an accessible name, opening (and described by) its own popover
    for b in parser.buttons:
        assert b["type"] == "button" and b["text"].strip()
        assert b["target"] == b["described"] and b["target"] in parser.popovers
    assert any(t == "acks=all" for t in texts) and "leader epoch" in texts and "fenced" in texts
    # the first mention only: a term is marked once in the beat's narration
    assert len({b["target"] for b in parser.buttons}) == len(parser.buttons)
    # the popover holds the entry's definition
    assert all(len(text) > 80 for text in parser.popovers.values())


def test_the_legend_marks_its_terms_and_ids_stay_unique(client):
    html = client.get("/scenes/04").text
    legend = html[html.index('class="legend"'):]
    legend = legend[: legend.index("</ul>")]
    for tip in ("gl-legend-hw", "gl-legend-leo", "gl-legend-leader-epoch", "gl-legend-truncation"):
        assert f'popovertarget="{tip}"' in legend
    ids = _ids(html)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def test_htmx_step_updates_keep_the_markup(client):
    r = client.get("/scenes/05?step=3", headers={"HX-Request": "true"})
    assert r.status_code == 200 and 'class="gl-term"' in r.text


@pytest.mark.parametrize(("text", "marked"), [
    ("The HW moved, then the HW moved again.", ["HW"]),
    ("LEO = log end offset", ["LEO"]),  # one entry, two spellings: the first is marked
    ("the committed ISR shrank", ["ISR"]),  # "committed ISR" is not a committed record
    ("an unclean shutdown, then unclean election", ["unclean election"]),
    ("set `min.insync.replicas=2` and acks=all", ["min.insync.replicas=2", "acks=all"]),
    ("three brokers and RF=3", ["brokers", "RF"]),
    ("see https://example.org/hw and hw.ms", []),
    ("The partition epoch, then the leader epoch.", ["partition epoch", "leader epoch"]),
])
def test_link_terms(text, marked):
    segs = link_terms(text)
    assert "".join(s["text"] for s in segs) == text.replace("`", "")
    assert [s["text"] for s in segs if s.get("term")] == marked


def test_linker_shares_first_mentions_and_prefixes_ids():
    link = linker("zone")
    first = [s for s in link("the HW") if s.get("term")]
    again = [s for s in link("HW and LEO") if s.get("term")]
    assert [s["term"]["tip_id"] for s in first] == ["gl-zone-hw"]
    assert [s["term"]["id"] for s in again] == ["leo"]
    assert first[0]["term"]["url"] == "/glossary#glossary-hw"
