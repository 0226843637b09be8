"""One spelling of simulated time and one step counter on every page (issue 10's new-learner check
of 01, 01a and 02 found "t = 0.004 s" in the drawing beside "t = 4 ms" in the Step bar, "9.0 s
later" beside "5007 ms", and "stop 3 of 6" in the Step bar while the summary said "step 4 of 10"
and the key moments "(step 4)").

app/formats.py spells both; these tests read what the pages of 01, 01a, 02, 02a and 03 show at
every stop of every beat, and check that no other code formats either.
"""

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import scenes
from app.formats import clock, sim_time, step_counter, step_ref

REPO = Path(__file__).resolve().parents[2]
SCENES = ("01", "01a", "02", "02a", "03")

# an amount of simulated time as a page may spell it, old spellings included, so they are caught
TIME = re.compile(
    r"(?:\d+ (?:days?|hours?|min)\b ?)+(?:\d[\d,]*(?:\.\d+)? ?s\b)?|\d[\d,]*(?:\.\d+)? ?(?:ms|s)\b"
)
UNIT_MS = {"ms": 1, "s": 1000, "min": 60_000, "hour": 3_600_000, "hours": 3_600_000,
           "day": 86_400_000, "days": 86_400_000}  # fmt: skip
COUNTER = re.compile(r"\bbetween steps \d+ and \d+(?: of \d+)?|\bsteps? \d+(?: of \d+)?", re.I)


def parse_time(text: str) -> float:
    total = 0.0
    for number, unit in re.findall(r"(\d[\d,]*(?:\.\d+)?) ?(ms|s|min|hours?|days?)\b", text):
        total += float(number.replace(",", "")) * UNIT_MS[unit]
    return total


class Spans(HTMLParser):
    """The text of the elements the app itself spells times and positions in (not the engine's step
    texts or the narration), by a name for each, and the attributes that carry a position."""

    WATCH = {
        ("span", "step-count"): "counter",
        ("text", "clock"): "clock",
        ("span", "t"): "log time",
        ("span", "jump"): "jump",
        ("p", "diagram-summary"): "summary",
        ("p", "run-position"): "compare",
        ("span", "md-t"): "metadata time",
        ("p", "live"): "live answer",
    }

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []
        self.attrs_found: list[tuple[str, str]] = []
        self._open: list[tuple[str, str, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if a.get("id") == "step" and a.get("aria-valuetext"):
            self.attrs_found.append(("scrubber", a["aria-valuetext"]))
        classes = a.get("class", "").split()
        name = next((n for (t, c), n in self.WATCH.items() if t == tag and c in classes), None)
        if a.get("id") == "log-live":
            name = "live region"
        if name is not None:
            self._open.append((tag, name, []))
        elif self._open:
            self._open.append((tag, "", []))

    def handle_endtag(self, tag):
        if not self._open or self._open[-1][0] != tag:
            return
        _, name, parts = self._open.pop()
        text = "".join(parts).strip()
        if name:
            self.found.append((name, text))
        if self._open:
            self._open[-1][2].append(text)

    def handle_data(self, data):
        if self._open:
            self._open[-1][2].append(data)


def every_stop(client, scene_id: str, beat_id: str, extra: str = "") -> list[str]:
    """The pages a learner sees pressing Step from the beat's start to its end."""
    pages = []
    page = client.get(f"/scenes/{scene_id}?beat={beat_id}{extra}")
    while True:
        assert page.status_code == 200
        pages.append(page.text)
        forward = page.context["timeline"]["forward_url"]
        if forward is None or len(pages) > 80:
            return pages
        page = client.get(forward)


def check_page(html: str) -> None:
    spans = Spans()
    spans.feed(html)
    # the times: each one as app/formats.py spells it (the live region repeats an engine step's
    # own text after the counter, which the engine words)
    for name, text in spans.found:
        if name == "live region":
            continue
        for token in TIME.findall(text):
            assert sim_time(parse_time(token)) == token.strip(), f"{name}: {token!r} in {text!r}"
    clocks = [text for name, text in spans.found if name == "clock"]
    assert clocks and all(c.startswith("t = ") for c in clocks)
    # the step counter: one position, said the same way everywhere it is said
    counters = [COUNTER.search(text).group(0).lower() for name, text in spans.found if name == "counter"]
    counters += [text.lower() for _, text in spans.attrs_found]
    counters += [COUNTER.search(text).group(0).lower() for name, text in spans.found if name == "live region"]
    assert len(counters) >= 3 and len(set(counters)) == 1, counters
    # and no other counter anywhere on the page
    for old in (r"\bstops? \d+", r"engine step \d", r"Steps 1 to", r"\bAfter step \d"):
        assert not re.search(old, html), f"{old} on the page"


@pytest.mark.parametrize(
    ("scene_id", "beat_id"), [(s, b.id) for s in SCENES for b in scenes.load_scene(s).beats]
)
def test_every_stop_spells_time_and_position_one_way(client, scene_id, beat_id):
    for html in every_stop(client, scene_id, beat_id):
        check_page(html)


@pytest.mark.parametrize("scene_id", SCENES)
def test_one_engine_step_at_a_time_counts_between_the_same_steps(client, scene_id):
    """fine=1 moves one engine step; the counter still counts Step's stops, between two of them."""
    beat = scenes.load_scene(scene_id).beats[0]
    pages = every_stop(client, scene_id, beat.id, "&fine=1")
    for html in pages[:25]:
        check_page(html)
    assert any("between steps" in html for html in pages)


def test_the_key_moments_and_the_step_bar_count_the_same_steps(client):
    page = client.get("/scenes/01?beat=first-record")
    moments = page.context["beat"]["key_moments"]
    assert len(moments) == 3 and all(re.fullmatch(r"step \d+", m["ref"]) for m in moments)
    assert f"({moments[0]['ref']})" in page.text
    total = page.context["timeline"]["position"].split(" of ")[1]
    for m in moments:  # the link's "(step k)" is where the Step bar says it landed
        landed = client.get(m["url"])
        assert landed.context["timeline"]["position"] == f"{m['ref']} of {total}"
        assert f"{m['ref'].capitalize()} of {total}" in landed.text


def test_a_live_answer_reads_the_clock_as_the_page_does(client):
    page = client.get("/scenes/01?beat=consumer-pulls&step=15&q=first-poll-is-slow")
    check_page(page.text)
    assert "its first rebalance finished at t = 3.005 s" in page.text


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0 ms"), (4, "4 ms"), (999, "999 ms"), (1000, "1 s"), (1500, "1.5 s"), (5007, "5.007 s"),
     (30_000, "30 s"), (60_000, "1 min"), (125_250, "2 min 5.25 s"), (3_630_000, "1 hour 0 min 30 s"),
     (4_805_010, "1 hour 20 min 5.01 s"), (604_800_000, "7 days")],
)  # fmt: skip
def test_simulated_time_is_exact_to_the_millisecond_and_names_its_units(ms, text):
    assert sim_time(ms) == text and clock(ms) == "t = " + text
    assert parse_time(text) == ms


def test_the_step_counter_counts_presses_of_step():
    stops = [0, 2, 5, 9, 12]  # the start, then four stops
    assert step_counter(stops, 0, 12) == "step 0 of 4"
    assert step_counter(stops, 5, 12) == "step 2 of 4"
    assert step_counter(stops, 7, 12) == "between steps 2 and 3 of 4"
    assert step_ref(stops, 12) == "step 4"
    assert step_counter(None, 4, 10) == "step 4 of 10"  # no stops: the engine's own steps


# Only app/formats.py spells simulated time: no other module divides by 1000 into seconds or
# appends " ms" to a number, and no template does (the charts of precomputed latency curves,
# app/charts.py, label their own axes).
SPELLS_TIME = [
    re.compile(r"/ ?1000\b"),
    re.compile(r"\} ms\b"),
    re.compile(r"\}\} ms\b"),
    re.compile(r":\.\d+f\} s\b"),
]


def test_no_other_code_spells_simulated_time():
    sources = [p for p in (REPO / "app").glob("*.py") if p.name not in ("formats.py", "charts.py")]
    sources += list((REPO / "templates").glob("*.html"))
    found = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()}"
        for p in sources
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if any(r.search(line) for r in SPELLS_TIME) and not line.lstrip().startswith("#")
    ]
    assert found == []
