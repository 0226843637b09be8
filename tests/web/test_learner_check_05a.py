"""What the new-learner check of scene 05a (log compaction) found, held on the real engine: the
diagram in words names a tombstone and counts the records a compacted log keeps, a group's join
protocol is one stop outside the groups scenes, beat 2's check at 30 s is a stop of its own, a
knob change lands on a stop, and Step at the end of the last beat goes to the challenge."""

from __future__ import annotations

import re
from html import unescape

from app import frames, presenters
from tests.web.conftest import HTMX, SIM, beat_timeline

timeline_of = beat_timeline


def stops_of(scene_id: str, beat: str, **knobs: str) -> list[frames.Stop]:
    scene, timeline = timeline_of(scene_id, beat, **knobs)
    return frames.timeline_stops(SIM, timeline, frames.beat_key_moments(scene.beat(beat)))


def test_the_diagram_in_words_names_the_tombstone_and_counts_kept_records():
    """§D.4 in 05a's tombstone beat: after the first pass the log holds b1, c1, the tombstone for
    alice and b2 (4 records at offsets 1-4; offset 0 is a gap), said once, not twice."""
    _, timeline = timeline_of("05a", "tombstone")
    rewrite = next(int(s["i"]) for s in timeline.steps if s["kind"] == "cleaner_rewrite")
    _, at = timeline_of("05a", "tombstone", rewrite)
    d = presenters.diagram(at, at.scenario)
    words = " ".join(d["description"])
    assert "a tombstone for alice at 3" in words and "None" not in words
    assert "holds 4 records in 2 segments" in d["summary"]
    assert "The cleaner removed offset 0: the offsets stay, as gaps." in words


def test_a_group_join_is_one_stop_outside_the_groups_scenes():
    """01's consumer-pulls and 05a's slow reader: subscribe .. SyncGroup .. the assignment is one stop
    (it was five), and no two protocol stops follow each other."""
    for scene_id, beat in (("01", "consumer-pulls"), ("05a", "slow-reader")):
        stops = stops_of(scene_id, beat)
        joins = [s for s in stops if s.kind == "consumer_join"]
        assert joins and all(s.title.count("group protocol takes") == 1 for s in joins), scene_id
        kinds = [s.kind for s in stops]
        protocol = frames.JOIN_PROTOCOL_KINDS
        assert not any(a in protocol and b in protocol for a, b in zip(kinds, kinds[1:], strict=False))


def test_the_check_that_cleans_nothing_is_a_stop_of_its_own():
    """05a beat 2 (§F.D's ratio rule): the check at 30 s, ratio 0.50, is its own stop, the key moment,
    and the cleaner badge shows it; it is not folded into 'Producer sends c2'."""
    stops = stops_of("05a", "dirty-ratio")
    check = next(s for s in stops if s.kind == "cleaner_check")
    assert check.folded_count == 1 and check.key_moment
    _, at = timeline_of("05a", "dirty-ratio", check.step)
    d = presenters.diagram(at, at.scenario)
    assert "cleaner: ratio 0.50, not > 0.5: waits" in str(d)
    words = " ".join(d["description"])
    assert "Log cleaner's last decision: B1's log cleaner checks the log: the dirty ratio is 0.50" in words


def test_a_knob_change_lands_on_a_stop(client):
    base = "/scenes/05a?beat=slow-reader&seed=0"
    for step in (40, 70):
        before = f"http://testserver{base}&delete.retention.ms=86400000&step={step}"
        page = client.get(f"{base}&delete.retention.ms=3600000&step={step}",
                          headers={**HTMX, "HX-Current-URL": before})
        assert page.status_code == 200
        assert not re.search(r"[Bb]etween steps \d+ and \d+", page.text), step


def test_step_at_the_end_of_the_last_beat_goes_to_the_challenge(client):
    page = client.get("/scenes/05a?beat=slow-reader&step=999")
    forward = re.search(r'<a [^>]*id="step-forward"[^>]*>([^<]*)', page.text)
    assert forward and 'href="#check"' in forward.group(0) and "Challenge" in forward.group(1)
    assert 'id="caption-next" href="#check"' in page.text and "Next scene:" in unescape(page.text)
    middle = client.get("/scenes/05a?beat=tombstone&step=999")
    assert 'data-next="beat"' in middle.text
