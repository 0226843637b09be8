"""The diagram of a scene with consumers (app/logdiagram.py): one row per partition with the
leader's log and each record's key, the log start, HW and LEO, and a lane per group with each
running member's position and the group's committed offset, all read from the view at the current
step (never the end of the run); the text alternative says the same; scenes without consumers keep
the replica diagram."""

from __future__ import annotations

import pytest

import scenes
from app import presenters
from app.settings import Settings
from app.simulation import build_timeline
from app.state import parse_state
from tests.web.conftest import SIM, beat_timeline


def drawn(scene_id: str, beat: str, step: int | None = None, **knobs: str):
    _scene, timeline = beat_timeline(scene_id, beat, step, **knobs)
    return presenters.diagram(timeline, timeline.scenario), timeline


def step_of(timeline, kind: str, nth: int = 1) -> int:
    seen = 0
    for s in timeline.steps:
        if s["kind"] == kind:
            seen += 1
            if seen == nth:
                return int(s["i"])
    raise AssertionError(kind)


def marks(d) -> list[str]:
    return [label["text"] for row in d["rows"] for lane in row["lanes"] for label in lane["labels"]]


def test_scenes_with_consumers_draw_partitions_and_the_others_keep_brokers():
    d, _ = drawn("02", "replay", 0)
    assert d["mode"] == "log" and [r["label"] for r in d["rows"]] == ["P0"]
    d, _ = drawn("04", "followers-pull", 0)
    assert d.get("mode") is None and [r["label"] for r in d["rows"]] == ["B1", "B2", "B3", "B4", "B5"]


def test_positions_follow_the_current_step():
    _, timeline = drawn("02", "replay")
    seek = step_of(timeline, "consumer_seek")
    before, _ = drawn("02", "replay", seek - 1)
    after, _ = drawn("02", "replay", seek)
    assert marks(before) == ["c0 position 3"] and marks(after) == ["c0 position 0"]
    assert marks(drawn("02", "replay", 0)[0]) == []  # c0 has not started: no lane at all
    # the wide and the phone drawing say the same
    phone = [lb["text"] for r in after["narrow"]["rows"] for lane in r["lanes"] for lb in lane["labels"]]
    assert phone == marks(after)
    assert any("received a, b, c, a, b, c" in line["text"] for line in after["boxes"][1]["lines"]) is False
    end, _ = drawn("02", "replay", timeline.step_count)
    assert any("received a, b, c, a, b, c" in line["text"] for line in end["boxes"][1]["lines"])


def test_the_committed_offset_appears_when_the_coordinator_stores_it():
    _, timeline = drawn("01", "reader-away")
    commit = step_of(timeline, "consumer_commit")
    before, _ = drawn("01", "reader-away", commit - 1)
    at, _ = drawn("01", "reader-away", commit)
    assert "payments committed 1" not in " ".join(marks(before))
    assert marks(at) == ["c0 position 1 · payments committed 1"]
    closed, _ = drawn("01", "reader-away", step_of(timeline, "consumer_close"))
    assert marks(closed) == ["payments committed 1"]  # the process is gone, the bookmark stays
    assert any("■ c0 (payments) closed" in line["text"] for line in closed["boxes"][1]["lines"])
    assert presenters.visible_signature(before) != presenters.visible_signature(at)


def test_keys_partitions_and_the_broker_strip():
    d, timeline = drawn("01a", "same-key-same-partition", 20)
    assert [r["label"] for r in d["rows"]] == ["P0", "P1", "P2"]
    p0 = d["rows"][0]
    assert [(c["text"], c["key"]) for c in p0["cells"]] == [("a1", "alice"), ("b1", "bob"), ("a2", "alice")]
    assert p0["markers"]["hw"] == 3 and p0["markers"]["leo"] == 3 and p0["markers"]["start"] == 0
    assert [b["text"] for b in d["strip"]] == ["B1 ● leads P0", "B2 ● leads P1", "B3 ● leads P2"]
    described = " ".join(d["description"])
    assert ("Partition 0 (leader B1, log start 0, HW 3, LEO 3): a1 (key alice) at 0, b1 (key bob) at 1"
            in described)


def test_the_text_alternative_names_consumers_groups_and_markers():
    _, timeline = drawn("02", "two-groups")
    d, _ = drawn("02", "two-groups", timeline.step_count)
    described = "\n".join(d["description"])
    assert "Consumer c0 (group payments): running, generation 1, owns P0; positions P0 3" in described
    assert "Consumer c1 (group analytics): running" in described and "poll() has returned d" in described
    assert "Consumer c2 (group balances): not started" in described
    assert "Markers: c0 position 3; c1 position 4." in described


def last_stops(scene_id: str):
    """Each beat's page at its last stop, rendered by the app."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from app.main import app

    client = TestClient(app)
    for beat in scenes.load_scene(scene_id).beats:
        yield client.get(f"/scenes/{scene_id}?beat={beat.id}&step=999")


@pytest.mark.parametrize("scene_id", ["01", "01a", "02"])
def test_every_beat_renders_with_the_log_legend(scene_id):
    for page in last_stops(scene_id):
        assert page.status_code == 200
        assert 'class="cluster logmap wide"' in page.text and "lanes under a" in page.text


# ----------------------------------------------------------------------------------------------
# scenes 02a and 03: segments, deleted offsets, per-partition load, partitions not created yet


def test_scenes_about_segments_or_partitions_draw_partitions_even_without_consumers():
    d, _ = drawn("03", "keys-pick-partitions", 0)
    assert d["mode"] == "log" and [r["label"] for r in d["rows"]] == ["P0", "P1", "P2"]
    assert [b["cls"] for b in d["boxes"]] == ["producer"]  # no consumers box when there are none
    assert not d["readers"] and d["several"] and not d["shows_segments"]
    # the partitions knob at 1 keeps the scene's drawing
    one, _ = drawn("03", "keys-pick-partitions", 0, partitions="1")
    assert one["mode"] == "log" and [r["label"] for r in one["rows"]] == ["P0"]
    d, _ = drawn("02a", "retention-bytes-floor", 0)
    assert d["mode"] == "log" and d["shows_segments"] and d["readers"]


def test_segments_brackets_follow_the_step_and_the_active_one_is_last():
    _, timeline = drawn("02a", "retention-ignores-readers")
    second = step_of(timeline, "leader_append", 2)
    before, _ = drawn("02a", "retention-ignores-readers", second - 1)
    after, _ = drawn("02a", "retention-ignores-readers", second)
    assert [(s["text"], s["active"]) for s in before["rows"][0]["segs"]] == [("active · 300 B", True)]
    assert [(s["text"], s["active"]) for s in after["rows"][0]["segs"]] == [
        ("300 B", False), ("active · 300 B", True)]
    assert len(after["rows"][0]["seg_lines"]) == 1  # the boundary at offset 3
    assert [(s["text"], s["active"]) for s in after["narrow"]["rows"][0]["segs"]] == [
        ("300 B", False), ("active · 300 B", True)]
    assert "Segments: 0-2 (300 bytes); active 3-5 (300 bytes)." in " ".join(after["description"])
    assert presenters.visible_signature(before) != presenters.visible_signature(after)


def test_deleted_offsets_are_one_empty_gap_and_the_bookmark_points_into_it():
    _, timeline = drawn("02a", "retention-ignores-readers")
    delete = step_of(timeline, "broker_delete_segments")
    before, _ = drawn("02a", "retention-ignores-readers", delete - 1)
    at, _ = drawn("02a", "retention-ignores-readers", delete)
    assert before["rows"][0]["gap"] is None
    assert [c["offset"] for c in before["rows"][0]["cells"]] == list(range(6))
    p0 = at["rows"][0]
    assert [c["offset"] for c in p0["cells"]] == [3, 4, 5]  # a, b and c are gone, not struck out
    assert p0["gap"]["text"] == "deleted" and "offsets 0-2 (a, b, c)" in p0["gap"]["title"]
    assert p0["markers"]["start"] == 3 and "start 3" in [b["text"] for b in p0["badges"]]
    assert marks(at) == ["payments committed 1"]
    described = " ".join(at["description"])
    assert "Offsets 0-2 deleted (a, b, c are gone)." in described
    assert ("committed offsets P0 1, stored by its coordinator B2 in __consumer_offsets partition 13"
            in described)
    assert at["clock"]["text"] == "t = 1 hour 0 min 30 s"
    assert at["summary"].startswith("At t = 1 hour 0 min 30 s: ")


def test_each_partition_shows_its_load_and_a_hot_one_says_so():
    _, timeline = drawn("03", "hot-partition")
    d, _ = drawn("03", "hot-partition", timeline.step_count)
    loads = [[b for b in r["badges"] if b["cls"] in ("load", "hot")][0] for r in d["rows"]]
    assert [(b["text"], b["cls"]) for b in loads] == [
        ("1 of 8 rec", "load"), ("1 of 8 rec", "load"), ("6 of 8 rec · hot", "hot")]
    assert "records per partition: P0 1, P1 1, P2 6 (hot)" in d["summary"]
    assert "It holds 6 of the topic's 8 records, a hot partition." in " ".join(d["description"])
    # a share says little before the topic holds two records per partition
    early, _ = drawn("03", "hot-partition", step_of(timeline, "leader_append", 1))
    assert not any(b["cls"] == "hot" for r in early["rows"] for b in r["badges"])


def test_a_partition_not_created_yet_is_drawn_absent_never_empty():
    _, timeline = drawn("03", "add-partitions")
    create = step_of(timeline, "admin_create_partitions")
    before, _ = drawn("03", "add-partitions", create - 1)
    after, _ = drawn("03", "add-partitions", create)
    p3 = before["rows"][3]
    assert p3["absent"] and p3["cells"] == [] and p3.get("markers") is None
    assert p3["note"]["text"] == "does not exist yet"
    assert [b["text"] for b in p3["badges"]] == ["not created yet"]
    assert "(P3 not created yet)" in before["summary"]
    assert "Partition 3: not created yet at this step; it has no log." in before["description"]
    assert not after["rows"][3]["absent"] and after["rows"][3]["markers"]["leo"] == 0
    # the same height before and after, so the page below does not move when it appears
    for g in ("wide", "narrow"):
        b, a = (before if g == "wide" else before["narrow"]), (after if g == "wide" else after["narrow"])
        assert b["rows"][3]["band_h"] == a["rows"][3]["band_h"] and b["height"] == a["height"]
    # the producer keeps the old count until its refresh, and the box says so
    assert "metadata: 3 partitions (the topic has 4)" in after["boxes"][0]["lines"][0]["text"]
    refreshed, _ = drawn("03", "add-partitions", step_of(timeline, "producer_metadata_refresh"))
    assert refreshed["boxes"][0]["lines"][0]["text"] == "metadata: 4 partitions"


def test_the_producer_box_says_where_keyless_records_stick():
    _, timeline = drawn("03", "keyless-sticky")
    start, _ = drawn("03", "keyless-sticky", 0)
    assert [line["text"] for line in start["boxes"][0]["lines"]][:2] == [
        "metadata: 3 partitions", "no key: no partition drawn yet"]
    third, _ = drawn("03", "keyless-sticky", step_of(timeline, "producer_sticky_partition", 3))
    assert third["boxes"][0]["lines"][1]["text"] == "no key: sticks to P1"
    assert "records without a key stick to P1" in third["description"][1]


@pytest.mark.parametrize("scene_id", ["02a", "03"])
def test_every_beat_of_the_new_scenes_renders_with_its_legend(scene_id):
    for page in last_stops(scene_id):
        assert page.status_code == 200
        assert 'class="cluster logmap wide"' in page.text
        assert ("brackets under a" in page.text) == (scene_id == "02a")
        if scene_id == "03":
            assert "a hot partition" in page.text and "a partition not created yet" in page.text
        assert ("lanes under a" in page.text) == (scene_id == "02a")


def test_a_key_that_differs_only_at_its_end_stays_whole_under_its_record():
    """'user-1' cut to 'user…' says nothing (the 03 learner check could never read the heavy
    key): a key a little too wide for its cell is pressed into it instead; a much longer one is cut."""
    from app.diagram import _key_text

    assert _key_text("alice", 40) == ("alice", None)
    text, squeezed = _key_text("user-1", 28)
    assert text == "user-1" and squeezed == 24
    text, squeezed = _key_text("a-very-long-customer-key", 28)
    assert squeezed is None and text.endswith("…") and len(text) <= 5
    assert _key_text("", 28) == ("", None)


def test_a_restarted_consumer_box_shows_only_what_the_new_process_received():
    """02a's crash beat: the old c0 received records, then crashed; the new c0 is another process
    and has received nothing until its own first poll (the learner check read 'received a, b, c,
    d, e' under the new c0)."""
    _, timeline = drawn("02a", "read-is-not-commit")
    restart = step_of(timeline, "consumer_subscribe", nth=2)  # the new process, after the crash
    before, _ = drawn("02a", "read-is-not-commit", restart - 1)
    after, _ = drawn("02a", "read-is-not-commit", restart)
    def lines(d) -> str:
        (box,) = [b for b in d["boxes"] if b["cls"] == "consumers"]
        return " ".join(line["text"] for line in box["lines"])

    assert "received" in lines(before)
    assert "received" not in lines(after)
    polls = [int(s["i"]) for s in timeline.steps if s["kind"] == "consumer_poll" and int(s["i"]) > restart]
    if polls:
        later, _ = drawn("02a", "read-is-not-commit", polls[0])
        assert "received" in lines(later) or not timeline.steps[polls[0] - 1].get("records")


def test_the_groups_coordinator_is_never_called_a_broker_where_faults_change_nothing():
    """Before c0 first joins, payments' coordinator (B2, the leader of __consumer_offsets-13) is
    already where its commits will go: the 'Break it' panel offers its faults and the note does
    not call it idle (the learner check found 'B2, B3 hold no replica... changes nothing here')."""
    from app import presenters
    from engine.offsets import offsets_partition_for

    assert offsets_partition_for("payments") == 13
    _, timeline = drawn("02a", "commit-next-offset", 0)
    note = presenters.idle_brokers_note(timeline)
    idle = note.split(". ")[0]
    assert "B2" not in idle and "B3" in idle and "changes nothing" in idle
    assert "B2 holds no replica either, but coordinates a consumer group" in note
    scene = scenes.load_scene("02a")
    state, _ = parse_state(scene, [("beat", "commit-next-offset"), ("step", "0")], Settings())
    rows = presenters.fault_buttons(timeline, state, embed=False)
    assert {int(r["broker"]) for r in rows} == {1, 2}


def test_a_key_moment_written_for_the_beats_knobs_is_not_shown_over_another_run():
    """03 beat 1 at partitions=12: 'bob's negative hash lands in partition 0 too' is false there
    (bob goes to P6), so the caption box drops the key moment and keeps the run's own caption."""
    from app import frames, presenters

    scene = scenes.load_scene("03")
    beat_data = next(b for b in scene.beats if b.id == "keys-pick-partitions")
    for knobs, shown in (((), True), ((("partitions", "12"),), False)):
        pairs = [("beat", "keys-pick-partitions"), *knobs]
        state, _ = parse_state(scene, pairs, Settings())
        timeline, state = build_timeline(SIM, scene, state)
        beat = presenters.beats_panel(scene, state, timeline, embed=False)
        stops = frames.timeline_stops(SIM, timeline, frames.beat_key_moments(beat_data))
        seen = []
        for stop in stops[1:]:
            st, _ = parse_state(scene, [*pairs, ("step", str(stop.step))], Settings())
            tl, st = build_timeline(SIM, scene, st)
            cap = presenters.caption_panel(tl, st, embed=False, stops=stops, sandbox=beat["sandbox"])
            seen.append(cap["key_moment"])
        assert beat["sandbox"] is not shown
        assert any(seen) is shown, seen
